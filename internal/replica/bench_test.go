package replica

import (
	"testing"

	wlog "weir/internal/log"
)

// BenchmarkAppend compares a produce append through the replica (role
// check, epoch stamping, high watermark update) with the log's own
// append, for 1 KiB batches of 10 records.
func BenchmarkAppend(b *testing.B) {
	proto := batch("bench-record-with-some-payload-bytes-bench-record-with-some-payload-bytes", 10)
	run := func(b *testing.B, appendOne func([]byte) error) {
		buf := make([]byte, len(proto))
		b.SetBytes(int64(len(proto)))
		b.ReportAllocs()
		for b.Loop() {
			copy(buf, proto)
			if err := appendOne(buf); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.Run("log", func(b *testing.B) {
		l := openLog(b, b.TempDir())
		defer l.Close()
		run(b, func(p []byte) error { _, err := l.Append(p, wlog.AppendOptions{LeaderEpoch: 1}); return err })
	})
	for _, tc := range []struct {
		name string
		isr  []int32
	}{{"replica-rf1", []int32{1}}, {"replica-rf3", []int32{1, 2, 3}}} {
		b.Run(tc.name, func(b *testing.B) {
			l := openLog(b, b.TempDir())
			defer l.Close()
			r, err := Open(l, 0, Config{LocalID: 1, Topic: "t"})
			if err != nil {
				b.Fatal(err)
			}
			if err := r.BecomeLeader(PartitionState{Leader: 1, LeaderEpoch: 1, PartitionEpoch: 1, Replicas: tc.isr, ISR: tc.isr}); err != nil {
				b.Fatal(err)
			}
			run(b, func(p []byte) error { _, err := r.Append(p, 1, wlog.AppendOptions{}); return err })
		})
	}
}
