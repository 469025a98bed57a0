package cleaner

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestMetrics(t *testing.T) {
	e := newEnv(t, testLogConfig(), DefaultConfig(), nil)
	e.produce(val("a", "1"), val("b", "1"))
	e.roll()
	e.produce(val("a", "2"))
	e.roll()
	e.produce(val("c", "1"))
	st, _ := e.clean()
	e.clock.add(5 * time.Second)
	want := `
# HELP weir_cleaner_runs_total Cleaning rounds completed.
# TYPE weir_cleaner_runs_total counter
weir_cleaner_runs_total 1
# HELP weir_cleaner_partition_runs_total Cleaning rounds completed for the partition.
# TYPE weir_cleaner_partition_runs_total counter
weir_cleaner_partition_runs_total{partition="0",topic="t"} 1
# HELP weir_cleaner_dirty_ratio Share of the partition's log not cleaned yet, as last planned.
# TYPE weir_cleaner_dirty_ratio gauge
weir_cleaner_dirty_ratio{partition="0",topic="t"} 1
# HELP weir_cleaner_seconds_since_last_clean Seconds since the partition's last cleaning round (or since the cleaner was given it).
# TYPE weir_cleaner_seconds_since_last_clean gauge
weir_cleaner_seconds_since_last_clean{partition="0",topic="t"} 5
# HELP weir_cleaner_uncleanable_partitions Partitions the cleaner stopped cleaning after an error.
# TYPE weir_cleaner_uncleanable_partitions gauge
weir_cleaner_uncleanable_partitions 0
`
	names := []string{"weir_cleaner_runs_total", "weir_cleaner_partition_runs_total", "weir_cleaner_dirty_ratio", "weir_cleaner_seconds_since_last_clean", "weir_cleaner_uncleanable_partitions"}
	if err := testutil.CollectAndCompare(e.c.Collector(), strings.NewReader(want), names...); err != nil {
		t.Fatal(err)
	}
	bytes := fmt.Sprintf(`
# HELP weir_cleaner_bytes_read_total Bytes the cleaner read from segments.
# TYPE weir_cleaner_bytes_read_total counter
weir_cleaner_bytes_read_total %d
# HELP weir_cleaner_bytes_written_total Bytes the cleaner wrote to cleaned segments.
# TYPE weir_cleaner_bytes_written_total counter
weir_cleaner_bytes_written_total %d
`, st.BytesRead, st.BytesWritten)
	if err := testutil.CollectAndCompare(e.c.Collector(), strings.NewReader(bytes), "weir_cleaner_bytes_read_total", "weir_cleaner_bytes_written_total"); err != nil || st.BytesRead == 0 || st.BytesWritten == 0 {
		t.Fatalf("%v (round read %d, wrote %d)", err, st.BytesRead, st.BytesWritten)
	}
	if problems, err := testutil.CollectAndLint(e.c.Collector()); err != nil || len(problems) > 0 {
		t.Fatalf("lint: %v %v", problems, err)
	}
}
