package share

import (
	"errors"
	"fmt"
	"time"
)

// ErrBadBatches is returned by Acquire when the caller's batches are not
// in ascending order without overlaps, or a batch ends before it begins.
// It is a bug in the caller, not a client error.
var ErrBadBatches = errors.New("share: record batches out of order")

// ErrStaleRead is returned by Acquire when the fetch offset is past the
// end offset: the partition was reset after the log was read. Read again
// from NextFetchOffset.
var ErrStaleRead = errors.New("share: log read from past the end offset")

// Batch is one record batch of the log, as the owner read it: the offsets
// of its first and last record.
type Batch struct {
	Base, Last int64
	// Skip marks a batch the group must never deliver: aborted
	// transactional data under share.isolation.level=read_committed. Its
	// offsets are archived like offsets missing from the log.
	Skip bool
}

// AcquireRequest is one partition of a ShareFetch.
type AcquireRequest struct {
	Member string
	// FetchOffset is the offset the log was read from (NextFetchOffset
	// when the read started).
	FetchOffset int64
	// Batches are the batches the read returned, in log order: the first
	// one holds FetchOffset or starts after it, and an offset between two
	// batches is not in the log (compacted away). Offsets in flight that
	// the read passed over without finding them are archived.
	Batches []Batch
	// HighWatermark bounds what may be delivered: nothing at or above it.
	HighWatermark int64
	// MaxRecords is the request's MaxRecords (max.poll.records): a soft
	// cap in BatchOptimized mode, a strict one in RecordLimit mode.
	MaxRecords int32
	// BatchSize is the request's BatchSize: in BatchOptimized mode the
	// acquired ranges are cut at a log batch boundary once they hold this
	// many records.
	BatchSize int32
	Mode      AcquireMode
}

// AcquiredRange is one AcquiredRecords entry of a ShareFetch response.
type AcquiredRange struct {
	First, Last   int64
	DeliveryCount int16
}

// AcquireResult is what Acquire handed out and what must be persisted.
type AcquireResult struct {
	// Acquired lists the ranges locked to the member, in offset order.
	// The owner returns the log batches holding them; offsets outside
	// these ranges must not be delivered.
	Acquired []AcquiredRange
	// Records is the number of records in Acquired.
	Records int64
	// Change is the durable change: the acquisitions (with their new
	// delivery counts), locks that expired on the way, offsets archived.
	Change StateRecord
}

// Acquire locks available records to req.Member until now plus the lock
// duration. Locks that expired by now end first, so the records they held
// can be acquired again at once.
//
// Which records: the available offsets in flight (released or expired),
// then records past the end offset, in offset order, all within
// req.Batches and below the high watermark. Records past the end offset
// only fill the room left under MaxRecordLocks. MaxRecords and that room
// are strict in RecordLimit mode; in BatchOptimized mode the acquisition
// that reaches either of them goes on to the end of the log batch it is
// in, as Kafka's does. Kafka 4.2's throttling of troubled records is kept:
// a record on its last delivery attempt (delivery count limit - 1 so far,
// limit > 2) is delivered alone, and a batch whose records were delivered
// at least half the limit times is delivered only at the start of a
// response, in a piece halved with each further attempt.
func (p *Partition) Acquire(req AcquireRequest, now time.Time) (AcquireResult, error) {
	for i, b := range req.Batches {
		if b.Base > b.Last || b.Base < 0 || (i > 0 && b.Base <= req.Batches[i-1].Last) {
			return AcquireResult{}, fmt.Errorf("%w: batch %d is %d-%d", ErrBadBatches, i, b.Base, b.Last)
		}
	}
	if req.FetchOffset > p.next {
		return AcquireResult{}, fmt.Errorf("%w: read from %d, end offset %d", ErrStaleRead, req.FetchOffset, p.next-1)
	}
	nowN := now.UnixNano()
	p.expire(nowN)
	w := acquireWalk{
		p:        p,
		req:      &req,
		deadline: nowN + int64(p.cfg.LockDuration),
		budget:   int64(req.MaxRecords),
		room:     int64(p.cfg.MaxRecordLocks) - p.InFlight(),
		soft:     req.Mode != RecordLimit,
		finishAt: -1,
	}
	if req.MaxRecords > 0 {
		w.walk()
	}
	res := AcquireResult{Acquired: w.out, Records: w.taken}
	p.stats.acquired += w.taken
	p.stats.redelivered += w.redelivered
	res.Change = p.finish()
	return res, nil
}

// acquireWalk is one Acquire's pass over the log batches.
type acquireWalk struct {
	p        *Partition
	req      *AcquireRequest
	deadline int64

	budget int64 // records the request may still take
	room   int64 // offsets the window may still grow by
	soft   bool  // BatchOptimized: complete the last batch

	taken       int64
	redelivered int64
	lastTaken   int64
	// finishAt is the log batch being completed past a cap in
	// BatchOptimized mode, -1 otherwise.
	finishAt int
	// throttled confines the acquisition to log batch throttledIdx once
	// it met a record in trouble (delivered at least half the limit).
	throttled    bool
	throttledIdx int
	// done ends the walk.
	done bool

	out []AcquiredRange
}

func (w *acquireWalk) walk() {
	p, req := w.p, w.req
	pos := max(req.FetchOffset, p.start)
	for bi := range req.Batches {
		if w.done || (w.budget <= 0 && w.finishAt < 0) {
			return
		}
		b := req.Batches[bi]
		lo, hi := max(b.Base, pos), min(b.Last, req.HighWatermark-1)
		if b.Base >= req.HighWatermark {
			return
		}
		if hi < lo {
			continue
		}
		// The log has nothing between pos and this batch.
		w.absent(pos, lo-1)
		pos = hi + 1
		if b.Skip {
			w.absent(lo, hi)
			continue
		}
		w.present(bi, lo, hi)
	}
}

// absent handles offsets the log does not hold (or must not deliver).
// Available ones in flight are archived. Past the end offset, the window
// skips them while it is empty and archives them otherwise, if there is
// room; without room the walk stops there.
func (w *acquireWalk) absent(first, last int64) {
	p := w.p
	if first > last || w.done {
		return
	}
	if first < p.next {
		end := min(last, p.next-1)
		i, j := p.span(first, end)
		for k := i; k < j; k++ {
			r := &p.runs[k]
			if r.state == Available {
				r.state = Archived
				p.stats.archived += r.last - r.first + 1
				p.touch(r.first, r.last)
			}
		}
		first = end + 1
		if first > last {
			return
		}
	}
	if w.taken > 0 && w.finishAt >= 0 {
		return // completing a batch: what follows is not part of it
	}
	// Past the end: these offsets are not records.
	p.coalesce()
	p.advance()
	if p.start == p.next {
		p.moveStart(last + 1)
		return
	}
	n := last - first + 1
	if n > w.room {
		w.done = true
		return
	}
	w.room -= n
	p.appendRun(run{first: first, last: last, state: Archived})
	p.stats.archived += n
	p.touch(first, last)
}

// present walks [lo, hi] of log batch bi, taking what is acquirable.
func (w *acquireWalk) present(bi int, lo, hi int64) {
	p := w.p
	for off := lo; off <= hi && !w.done; {
		if off >= p.next {
			w.fresh(bi, off, hi)
			return
		}
		r := &p.runs[p.index(off)]
		end := min(r.last, hi)
		if r.state != Available {
			if w.finishAt >= 0 {
				w.done = true // the batch being completed is not contiguous
				return
			}
			off = end + 1
			continue
		}
		n := w.allow(bi, off, r.count, end-off+1, false)
		if n > 0 {
			w.take(bi, off, off+n-1)
		}
		off += n
		if n == 0 {
			return
		}
	}
}

// fresh takes records past the end offset, from off to at most hi.
func (w *acquireWalk) fresh(bi int, off, hi int64) {
	if off > w.p.next {
		// absent() leaves a gap untracked only while a batch is being
		// completed, and what follows the gap is another batch.
		if w.finishAt < 0 {
			panic(fmt.Sprintf("share: fresh offset %d past end %d", off, w.p.next))
		}
		w.done = true
		return
	}
	n := w.allow(bi, off, 0, hi-off+1, true)
	if n > 0 {
		w.take(bi, off, off+n-1)
	}
}

// allow decides how many of the n acquirable records at off, whose
// delivery count so far is count, the request takes. It sets done when
// the walk must stop after them.
func (w *acquireWalk) allow(bi int, off int64, count int16, n int64, fresh bool) int64 {
	cfg := &w.p.cfg
	if w.finishAt >= 0 {
		// Completing batch bi past a cap: take the rest if it follows on
		// and is not in trouble.
		if bi != w.finishAt || off != w.lastTaken+1 || count >= cfg.throttleLimit() {
			w.done = true
			return 0
		}
		if fresh {
			w.room -= n
		}
		return n
	}
	if w.throttled && bi != w.throttledIdx {
		w.done = true
		return 0
	}
	if w.budget <= 0 {
		w.done = true
		return 0
	}
	// Kafka's isolation of troubled records (SharePartition, 4.2+).
	if cfg.DeliveryCountLimit > 2 && count == cfg.DeliveryCountLimit-1 {
		w.done = true
		if w.taken > 0 {
			return 0
		}
		return 1
	}
	if count >= cfg.throttleLimit() {
		if w.taken > 0 && !w.throttled {
			w.done = true
			return 0
		}
		if !w.throttled {
			b := w.req.Batches[bi]
			piece := max(1, (b.Last-b.Base+1)>>(count-cfg.throttleLimit()+1))
			w.budget = min(w.budget, piece)
			w.throttled, w.throttledIdx = true, bi
		}
	}
	limit := w.budget
	if fresh {
		limit = min(limit, w.room)
	}
	k := min(n, max(limit, 0))
	w.budget -= k
	if fresh {
		w.room -= k
	}
	if k < n || w.budget <= 0 || (fresh && w.room <= 0) {
		// A cap is reached inside this batch (or at its end).
		if w.soft && !w.throttled && k > 0 {
			w.finishAt = bi
			if fresh {
				w.room -= n - k
			}
			return n
		}
		if k < n {
			w.done = true
		}
	}
	return k
}

// take acquires [first, last] for the member.
func (w *acquireWalk) take(bi int, first, last int64) {
	p := w.p
	if first >= p.next {
		p.appendRun(run{first: first, last: last, state: Acquired, count: 1, member: w.req.Member, deadline: w.deadline})
		w.emit(bi, first, last, 1)
	} else {
		i, j := p.span(first, last)
		for k := i; k < j; k++ {
			r := &p.runs[k]
			r.state, r.member, r.deadline = Acquired, w.req.Member, w.deadline
			r.count++
			if r.count > 1 {
				w.redelivered += r.last - r.first + 1
			}
			w.emit(bi, r.first, r.last, r.count)
		}
	}
	p.touch(first, last)
	w.taken += last - first + 1
	w.lastTaken = last
}

// emit appends [first, last] to the response's acquired ranges, merging it
// into the previous range unless BatchOptimized mode asks for a cut at
// this log batch boundary.
func (w *acquireWalk) emit(bi int, first, last int64, count int16) {
	if n := len(w.out); n > 0 {
		prev := &w.out[n-1]
		batchStart := first == w.req.Batches[bi].Base
		full := w.soft && batchStart && w.req.BatchSize > 0 && prev.Last-prev.First+1 >= int64(w.req.BatchSize)
		if prev.Last+1 == first && prev.DeliveryCount == count && !full {
			prev.Last = last
			return
		}
	}
	w.out = append(w.out, AcquiredRange{First: first, Last: last, DeliveryCount: count})
}
