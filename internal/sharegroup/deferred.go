package sharegroup

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"

	"weir/internal/errcode"
)

// Deferred acknowledgement writes (wiretag.ShareFetchDeferAcks).
//
// A ShareFetch with the tag applies its acknowledgements in memory,
// acquires, and is answered without waiting for the acknowledgements'
// write to the state store: a record_limit round then costs the
// acquisition alone. The writes still under way are kept with the
// member's share session (session.deferred, guarded by smu; only the
// Manager's request paths touch it), and each partition also keeps its
// own deferred tickets (sharePartition.deferred, under its mutex).
//
//   - Reporting is the session's: the member's next ShareFetch with the
//     tag reports the deferred writes that have failed by then and keeps
//     the others; a ShareFetch without the tag, a ShareAcknowledge (what
//     a commit sends) and a session close (epoch -1) wait for all of them
//     first, with no lock held, and report their failures. A failure is
//     reported on that answer for the partition: AcknowledgeErrorCode on
//     a ShareFetch, ErrorCode on a ShareAcknowledge (added to the answer
//     if the request did not name the partition).
//   - Rollback is the partition's: its next use (any member's) finds a
//     deferred ticket that failed and restores the partition from the
//     store, which lacks the acknowledgements, so the records are
//     delivered again. This happens once per failed write, whether or
//     not the member's session is still there to report it.
//
// A session that ends otherwise (a new session of the member, its
// connection closing, the member leaving or fenced, the broker stopping)
// drops its deferred writes unreported; their partitions still roll back
// on a failure. The guarantee is at-least-once, as a broker crash before
// the write gives: an acknowledgement answered with the tag is durable
// only once a later request that waits says so.

// deferAcks keeps writes with the member's session instead of waiting for
// them, and returns those it could not keep (the session is gone: the
// caller waits for them as usual).
func (m *Manager) deferAcks(group, member string, writes []ackWrite) []ackWrite {
	if len(writes) == 0 {
		return nil
	}
	key := sessionKey{group, member}
	m.smu.Lock()
	s := m.sessions[key]
	if s != nil {
		for _, w := range writes {
			if w.t != nil { // else nothing durable changed
				w.a = nil
				s.deferred = append(s.deferred, w)
			}
		}
	}
	m.smu.Unlock()
	if s == nil {
		return writes
	}
	for _, w := range writes {
		w.sp.deferWrite(w.t)
	}
	return nil
}

// takeDeferred takes the member's deferred writes out of its session:
// all of them, or only those already over.
func (m *Manager) takeDeferred(group, member string, all bool) []ackWrite {
	m.smu.Lock()
	defer m.smu.Unlock()
	s := m.sessions[sessionKey{group, member}]
	if s == nil || len(s.deferred) == 0 {
		return nil
	}
	if all {
		out := s.deferred
		s.deferred = nil
		return out
	}
	var out []ackWrite
	keep := s.deferred[:0]
	for _, w := range s.deferred {
		if done, _ := w.t.Settled(); done {
			out = append(out, w)
		} else {
			keep = append(keep, w)
		}
	}
	clear(s.deferred[len(keep):])
	s.deferred = keep
	return out
}

// waitDeferred waits for writes takeDeferred took, with no lock held, and
// returns one failure per partition whose write failed. The partition
// rolls back (sharePartition.settleLocked); when ctx ends first the
// outcome is unknown here and the partition still rolls back on its own
// if the write fails.
func (m *Manager) waitDeferred(ctx context.Context, writes []ackWrite) []ackPart {
	var failures []ackPart
	seen := map[sessionPart]bool{}
	for _, w := range writes {
		err := w.t.Wait(ctx)
		if err == nil || seen[w.tp] {
			continue
		}
		seen[w.tp] = true
		code := kerr.KafkaStorageError.Code
		if ctx.Err() != nil {
			code = storageCode(ctx.Err())
		} else {
			w.sp.settle()
		}
		failures = append(failures, ackPart{tp: w.tp, code: code, msg: errcode.Message(err)})
	}
	return failures
}

// deferWrite notes a deferred acknowledgement write of this partition,
// so that its failure rolls the partition back.
func (sp *sharePartition) deferWrite(t stateWrite) {
	if t == nil {
		return
	}
	sp.mu.Lock()
	// A batch (groupcommit.go) is noted once, however many
	// acknowledgements it gathers.
	if n := len(sp.deferred); n == 0 || sp.deferred[n-1] != t {
		sp.deferred = append(sp.deferred, t)
	}
	sp.mu.Unlock()
}

// settle is settleLocked with the lock taken.
func (sp *sharePartition) settle() {
	sp.mu.Lock()
	sp.settleLocked()
	sp.mu.Unlock()
}

// settleLocked forgets the deferred writes that are over and marks the
// partition for a restore if one of them failed: its memory is ahead of
// the store. mu held.
func (sp *sharePartition) settleLocked() {
	keep := sp.deferred[:0]
	for _, t := range sp.deferred {
		done, err := t.Settled()
		switch {
		case !done:
			keep = append(keep, t)
		case err != nil:
			sp.broken = true
		}
	}
	clear(sp.deferred[len(keep):])
	sp.deferred = keep
}
