package coordinator

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"

	wlog "weir/internal/log"
	"weir/internal/txn"
)

// maxBatchBytes bounds the records of one append: a run of writes larger
// than this is appended in several batches (a single write is never
// split).
const maxBatchBytes = 512 << 10

// writer appends one partition's state records, in the order the state
// machine issued them, as few batches as it can (every write queued while
// the previous append waited for replication goes into the next one: a
// group commit), and reports each write's outcome to the shard. One
// goroutine per loaded partition runs it; the slot's context stops it.
type writer struct {
	s  *shard
	sl *slot

	mu    sync.Mutex // guards queue
	queue []txn.Write
	wake  chan struct{}
}

func newWriter(s *shard, sl *slot) *writer {
	return &writer{s: s, sl: sl, wake: make(chan struct{}, 1)}
}

// add queues writes. It never blocks: the shard calls it.
func (w *writer) add(ws []txn.Write) {
	w.mu.Lock()
	w.queue = append(w.queue, ws...)
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

func (w *writer) run() {
	done := w.sl.ctx.Done()
	for {
		select {
		case <-w.wake:
		case <-done:
			return
		}
		w.mu.Lock()
		todo := w.queue
		w.queue = nil
		w.mu.Unlock()
		for len(todo) > 0 {
			if todo[0].Retry && !w.sleep(done) {
				return
			}
			n, size := 0, 0
			for n < len(todo) && (n == 0 || size+writeSize(&todo[n]) <= maxBatchBytes) && (n == 0 || !todo[n].Retry) {
				size += writeSize(&todo[n])
				n++
			}
			code := w.append(todo[:n])
			ids := make([]uint64, n)
			for k := range n {
				ids[k] = todo[k].ID
			}
			w.s.enqueue(func() { w.s.appended(w.sl, ids, code) })
			todo = todo[n:]
		}
	}
}

// sleep waits retry.backoff.ms before a retried write; false if the
// partition was unloaded meanwhile.
func (w *writer) sleep(done <-chan struct{}) bool {
	ch := make(chan struct{})
	t := w.s.c.cfg.Clock.AfterFunc(w.s.c.cfg.RetryBackoff, func() { close(ch) })
	select {
	case <-ch:
		return true
	case <-done:
		t.Stop()
		return false
	}
}

func writeSize(w *txn.Write) int {
	n := 0
	for _, r := range w.Records {
		n += len(r.Key) + len(r.Value) + 24
	}
	return n
}

// append writes the records of ws as one batch and waits until they are
// committed; it returns the Kafka error code of a failure (0 on success).
// The coordinator epoch must still be the replica's leader epoch, before
// and after: records written under another leadership are not this
// state machine's.
func (w *writer) append(ws []txn.Write) int16 {
	c := w.s.c
	if epoch, ok := w.sl.rep.Leading(); !ok || epoch != w.sl.epoch {
		return kerr.NotLeaderForPartition.Code
	}
	now := c.now()
	var bb wlog.BatchBuilder
	bb.Reset(now)
	for _, wr := range ws {
		for _, r := range wr.Records {
			bb.Add(now, r.Key, r.Value, nil)
		}
	}
	ctx, cancel := context.WithTimeout(w.sl.ctx, c.cfg.RequestTimeout)
	defer cancel()
	res, err := w.sl.rep.AppendCommitted(ctx, bb.Build(), wlog.AppendOptions{})
	if err == nil && res.LeaderEpoch != w.sl.epoch {
		err = fmt.Errorf("%w: appended at leader epoch %d, loaded at %d", kerr.NotLeaderForPartition, res.LeaderEpoch, w.sl.epoch)
	}
	if err != nil {
		w.s.log.Debug("transaction state not written", "partition", w.sl.index, "err", err)
	}
	return appendCode(err)
}

// appendCode is the Kafka code of an append error: a context that ended
// is REQUEST_TIMED_OUT (the coordinator answers COORDINATOR_NOT_AVAILABLE,
// as Kafka does when replication is too slow).
func appendCode(err error) int16 {
	if err == nil {
		return 0
	}
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Code
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return kerr.RequestTimedOut.Code
	}
	return kerr.UnknownServerError.Code
}
