package console

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
)

func TestStoreTranscript(t *testing.T) {
	var s *store
	at := func(d *datadriven.TestData) time.Time {
		var sec int
		d.ScanArgs(t, "t", &sec)
		return time.Unix(1_700_000_000+int64(sec), 0)
	}
	since := func(p Point) string { return fmt.Sprintf("%ds", p.At.Unix()-1_700_000_000) }
	datadriven.RunTest(t, "testdata/series.txt", func(t *testing.T, d *datadriven.TestData) string {
		var key string
		if d.HasArg("key") {
			d.ScanArgs(t, "key", &key)
		}
		value := func() float64 {
			var v string
			d.ScanArgs(t, "v", &v)
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatal(err)
			}
			return f
		}
		switch d.Cmd {
		case "new":
			var points, series int
			d.ScanArgs(t, "points", &points)
			d.ScanArgs(t, "series", &series)
			s = newStore(points, series)
			return ""
		case "counter":
			if r, ok := s.Counter(key, at(d), value()); ok {
				return fmt.Sprintf("rate %g\n", r)
			}
			return "no rate\n"
		case "gauge":
			s.Gauge(key, at(d), value())
			return ""
		case "points":
			var b strings.Builder
			for _, p := range s.Points(key) {
				fmt.Fprintf(&b, "%s %g\n", since(p), p.V)
			}
			return b.String()
		case "last":
			p, ok := s.Last(key)
			if !ok {
				return "none\n"
			}
			return fmt.Sprintf("%s %g\n", since(p), p.V)
		case "keys":
			return strings.Join(s.Keys(""), " ") + "\n"
		case "forget":
			var prefix string
			d.ScanArgs(t, "prefix", &prefix)
			var sec int
			d.ScanArgs(t, "before", &sec)
			s.Forget(prefix, time.Unix(1_700_000_000+int64(sec), 0))
			return ""
		}
		t.Fatalf("unknown command %s", d.Cmd)
		return ""
	})
}
