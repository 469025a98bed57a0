package replica

import (
	"sync"
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
		name     string
		isr      []int32
		fetching bool
	}{{"replica-rf1", []int32{1}, false}, {"replica-rf3", []int32{1, 2, 3}, false}, {"replica-rf3-fetching", []int32{1, 2, 3}, true}} {
		b.Run(tc.name, func(b *testing.B) {
			l := openLog(b, b.TempDir())
			defer l.Close()
			r, err := Open(l, 0, Config{Env: NewEnv(Env{LocalID: 1}), Topic: "t"})
			if err != nil {
				b.Fatal(err)
			}
			if err := r.BecomeLeader(PartitionState{Leader: 1, LeaderEpoch: 1, PartitionEpoch: 1, Replicas: tc.isr, ISR: tc.isr}); err != nil {
				b.Fatal(err)
			}
			appended := func() {}
			if tc.fetching {
				// Two followers, each woken after every append (as a parked
				// fetch is) to fetch from its last offset: the leader's
				// whole cost of replication, on the same two cores.
				stop := make(chan struct{})
				var wg sync.WaitGroup
				var wakes []chan struct{}
				for _, id := range []int32{2, 3} {
					wake := make(chan struct{}, 1)
					wakes = append(wakes, wake)
					wg.Go(func() {
						var dst []wlog.FileRange
						offset := int64(0)
						for {
							select {
							case <-stop:
								return
							case <-wake:
							}
							res := r.FetchForFollower(dst, FollowerFetch{ReplicaID: id, FetchOffset: offset, CurrentLeaderEpoch: 1, LastFetchedEpoch: -1, MaxBytes: 1 << 20})
							dst = res.Ranges
							offset = res.LogEndOffset
						}
					})
				}
				appended = func() {
					for _, w := range wakes {
						select {
						case w <- struct{}{}:
						default:
						}
					}
				}
				defer func() { close(stop); wg.Wait() }()
			}
			run(b, func(p []byte) error {
				_, err := r.Append(p, 1, wlog.AppendOptions{})
				appended()
				return err
			})
		})
	}
}
