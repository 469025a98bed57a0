package cleaner

import (
	"math"
	"strings"
	"testing"
	"time"
)

// FuzzConfigValidate: Validate never panics, accepts exactly the nice
// values 0 to 19 (naming the setting when it refuses one), and New
// refuses what Validate refuses.
func FuzzConfigValidate(f *testing.F) {
	f.Add(1, int64(128<<20), 0.9, 512<<10, int64(15000), 0)
	f.Add(2, int64(64), 1.0, 0, int64(0), 19)
	f.Add(-1, int64(0), 0.0, -1, int64(-1), -20)
	f.Add(0, int64(math.MaxInt64), math.NaN(), math.MaxInt32, int64(math.MaxInt64), 20)
	f.Fuzz(func(t *testing.T, threads int, dedupe int64, load float64, iobuf int, backoffMs int64, nice int) {
		c := DefaultConfig()
		c.Threads, c.DedupeBufferSize, c.LoadFactor, c.IOBufferSize = threads, dedupe, load, iobuf
		c.Backoff, c.Nice = time.Duration(backoffMs)*time.Millisecond, nice
		err := c.Validate()
		if (nice < 0 || nice > MaxNice) && (err == nil) {
			t.Fatalf("nice %d accepted", nice)
		}
		okNice := DefaultConfig()
		okNice.Nice = nice
		if nerr := okNice.Validate(); (nerr == nil) != (nice >= 0 && nice <= MaxNice) {
			t.Fatalf("nice %d alone: %v", nice, nerr)
		} else if nerr != nil && !strings.Contains(nerr.Error(), "weir.log.cleaner.nice") {
			t.Fatalf("refusal of nice %d does not name the setting: %v", nice, nerr)
		}
		if _, nerr := New(c, Options{}); (nerr == nil) != (err == nil) {
			t.Fatalf("New and Validate disagree: %v, %v", nerr, err)
		}
	})
}
