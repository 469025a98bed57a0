package sharegroup

import (
	"context"
	"errors"
	"time"

	"weir/internal/share"
	"weir/internal/sharestate"
)

// Group commit of deferred acknowledgement writes.
//
// A record_limit consumer acknowledges on every round (one ShareFetch per
// max.poll.records records), and with wiretag.ShareFetchDeferAcks nothing
// waits for those writes until its next commit. Written one by one, each
// round's change is a replicated append to __share_group_state of its
// own: profiled in share case 2's drain of 2M records, replicating them
// (followers' fetches, the leader serving them, the appends) took 1.74 s
// of the three brokers' CPU against 0.57 s for batch_optimized's five
// times fewer writes (bench/results/share-case2-groupcommit-20261128.md).
// So a share partition gathers these changes for Config.DeferredFlush
// (5 ms) and writes them as one delta (share.MergeDeltas):
//
//   - gatherLocked merges a deferred acknowledgement's change into the
//     partition's batch, opening one (and arming its flush on the timers)
//     when there is none. Every other write of the partition
//     (persistLocked: expiries, releases, acquisitions' changes,
//     acknowledgements a request waits for; snapshots) flushes the batch
//     first, so the store still gets the changes in the order they were
//     made.
//   - Whoever needs the outcome does not wait for the timer: batchWrite's
//     Wait (a commit's ShareAcknowledge, a fetch without the tag, a
//     session close) flushes at once.
//   - A load after a leadership move flushes the batch first; a load
//     after a failed write, a reset or a deletion fails it (what it
//     describes is gone), which the member hears of as of any failed
//     deferred write. Manager.Close flushes every batch.
//
// The guarantee is the deferral's: an acknowledgement answered with the
// tag is durable once a later request that waits says so. A crash before
// then loses what was not yet written (now up to DeferredFlush of it, or
// the appends under way, as before), and those records are delivered
// again.

// stateWrite is a write of share state under way: a store ticket, or a
// batch of gathered changes not yet written. Wait and Settled are as
// sharestate.Ticket's.
type stateWrite interface {
	Wait(ctx context.Context) error
	Settled() (done bool, err error)
}

// written is t as a stateWrite, nil when no write was needed.
func written(t *sharestate.Ticket) stateWrite {
	if t == nil {
		return nil
	}
	return t
}

// batchWrite is the write of one partition's gathered changes: ready is
// closed once it is flushed (or failed), t then being its ticket (nil
// when the merged change was empty).
type batchWrite struct {
	sp    *sharePartition
	ready chan struct{}
	t     *sharestate.Ticket
}

// Wait flushes the batch if the timer has not yet, and waits for its
// write.
func (b *batchWrite) Wait(ctx context.Context) error {
	select {
	case <-b.ready:
	default:
		b.sp.flush(b)
	}
	<-b.ready // closed under sp.mu by whoever flushed or failed it
	return b.t.Wait(ctx)
}

// Settled reports whether the batch was written and how, without
// flushing it.
func (b *batchWrite) Settled() (bool, error) {
	select {
	case <-b.ready:
		return b.t.Settled()
	default:
		return false, nil
	}
}

var errBatchDropped = errors.New("sharegroup: the share partition's state was reloaded, reset or deleted before these acknowledgements were written")

// gatherLocked adds a deferred acknowledgement's change to the batch and
// returns the batch's write; nil when rec changed nothing durable. With
// DeferredFlush negative it writes rec at once. mu held.
func (sp *sharePartition) gatherLocked(rec share.StateRecord) stateWrite {
	switch {
	case rec.IsZero():
		return nil
	case sp.m.cfg.DeferredFlush < 0:
		return written(sp.persistLocked(rec))
	}
	if b := sp.batch; b != nil {
		if merged, ok := share.MergeDeltas(sp.batchRec, rec); ok {
			sp.batchRec = merged
			return b
		}
		sp.flushLocked()
	}
	b := &batchWrite{sp: sp, ready: make(chan struct{})}
	sp.batch, sp.batchRec = b, rec
	sp.m.timers.arm(sp.m.host.Now().Add(sp.m.cfg.DeferredFlush), func(time.Time) { sp.flush(b) })
	return b
}

// flush writes b unless it was already.
func (sp *sharePartition) flush(b *batchWrite) {
	sp.mu.Lock()
	if sp.batch == b {
		sp.flushLocked()
	}
	sp.mu.Unlock()
}

// flushLocked queues the batch's merged change to the store. mu held.
func (sp *sharePartition) flushLocked() {
	b := sp.batch
	if b == nil {
		return
	}
	rec := sp.batchRec
	sp.batch, sp.batchRec = nil, share.StateRecord{}
	b.t = sp.writeLocked(rec)
	close(b.ready)
}

// failBatchLocked ends the batch unwritten, with err. mu held.
func (sp *sharePartition) failBatchLocked(err error) {
	b := sp.batch
	if b == nil {
		return
	}
	sp.batch, sp.batchRec = nil, share.StateRecord{}
	t, done := sharestate.PendingTicket()
	done(err)
	b.t = t
	close(b.ready)
}

// flushAll writes every partition's batch (Close).
func (m *Manager) flushAll() {
	m.mu.Lock()
	parts := make([]*sharePartition, 0, len(m.parts))
	for _, sp := range m.parts {
		parts = append(parts, sp)
	}
	m.mu.Unlock()
	for _, sp := range parts {
		sp.mu.Lock()
		sp.flushLocked()
		sp.mu.Unlock()
	}
}
