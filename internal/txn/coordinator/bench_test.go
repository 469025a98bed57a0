package coordinator

import (
	"fmt"
	"sync"
	"testing"
	"time"
)

// awaitState waits until id (coordinated on rep's partition) is in state.
// The state changes only after an append there, a moment after it (once
// the shard took the outcome), so each append is waited for, or a
// millisecond when it came before the question.
func (e *env) awaitState(rep *fakeReplica, id, state string) {
	for {
		next := rep.nextAppend()
		if e.describe(id).State == state {
			return
		}
		select {
		case <-next:
		case <-time.After(time.Millisecond):
		}
	}
}

// BenchmarkTransaction measures the coordinator's cost of one transaction
// (AddPartitionsToTxn of two partitions, EndTxn(commit), the markers, the
// CompleteCommit), the log appends included (a real log, no fsync, no
// replication), with txns transactional ids at once. The markers go to a
// fake broker that answers at once.
func BenchmarkTransaction(b *testing.B) {
	for _, txns := range []int{1, 16} {
		b.Run(fmt.Sprintf("ids=%d", txns), func(b *testing.B) {
			e := newEnv(b, 4, nil)
			e.loadAll(0)
			ids := make([]string, txns)
			pids := make([]int64, txns)
			rep := make([]*fakeReplica, txns)
			for k := range ids {
				ids[k] = fmt.Sprintf("txn-%d", k)
				r := e.init(ids[k], 4, 60000)
				pids[k] = r.ProducerID
				i, _ := e.c.PartitionFor(ids[k])
				rep[k] = e.h.replicas[i]
			}
			b.ReportAllocs()
			b.ResetTimer()
			var wg sync.WaitGroup
			per := (b.N + txns - 1) / txns
			for k := range ids {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for range per {
						e.add(ids[k], pids[k], 0, 3, tp("a", int32(k)), tp("b", int32(k)))
						if r := e.end(ids[k], pids[k], 0, true, 3); r.ErrorCode != 0 {
							b.Errorf("end: %d", r.ErrorCode)
							return
						}
						// The next transaction starts once this one is
						// complete (a classic client retries
						// CONCURRENT_TRANSACTIONS until then).
						e.awaitState(rep[k], ids[k], "CompleteCommit")
						e.add(ids[k], pids[k], 0, 3, tp("a", int32(k)))
						e.end(ids[k], pids[k], 0, false, 3)
						e.awaitState(rep[k], ids[k], "CompleteAbort")
					}
				}()
			}
			wg.Wait()
			b.StopTimer()
			// Two transactions per iteration.
			b.ReportMetric(float64(2*per*txns)/b.Elapsed().Seconds(), "txn/s")
			var appends int
			for _, r := range e.h.replicas {
				r.mu.Lock()
				appends += r.appends
				r.mu.Unlock()
			}
			b.ReportMetric(float64(appends)/float64(2*per*txns), "appends/txn")
		})
	}
}
