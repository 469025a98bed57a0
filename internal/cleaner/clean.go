package cleaner

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"weir/internal/log"
)

// One round of cleaning a log, as Kafka's Cleaner.doClean does it:
//
//  1. Map: read the dirty range [FirstDirty, FirstUncleanable) and map
//     each key to the offset of its latest record, whole batches at a
//     time, until the range ends or the next batch might not fit; the
//     round then covers offsets below end (the end of the range, or of
//     the last batch mapped).
//  2. Clean: rewrite every closed segment below end, from the log start,
//     in groups of at most segment.bytes, each group into one segment
//     swapped in for it. A record stays when no later record of its key
//     is mapped (or it lies past the mapped range), and a tombstone only
//     until its batch's delete horizon, stamped by the first round that
//     kept it. Batches of aborted transactions go; transaction markers go
//     once their transaction has no records left and their horizon
//     passed. A producer's last batch stays (emptied if need be) so that
//     its sequence survives, and so does each group's last batch, so
//     that a cleaned segment ends where the group ended.
//  3. The checkpoint records end as the next round's FirstDirty.

// Stats describe one round.
type Stats struct {
	EndOffset      int64 // the next round's first dirty offset
	BytesRead      int64
	BytesWritten   int64 // in the segments swapped in
	RecordsRead    int64
	RecordsKept    int64
	SegmentsSwaps  int     // groups swapped in
	MapUtilization float64 // share of the key map's budget used
	Duration       time.Duration
}

// ProducerLast is what the cleaner keeps of an active producer: the last
// offset of its last data batch (-1: none, then its last marker of
// Epoch is kept instead).
type ProducerLast struct {
	LastDataOffset int64
	Epoch          int16
}

var (
	errMapFull      = errors.New("cleaner: key map full")
	errMapTooSmall  = errors.New("cleaner: log.cleaner.dedupe.buffer.size holds fewer keys than the first dirty batch")
	errNothingDirty = errors.New("cleaner: nothing to clean")
)

// worker holds one cleaning goroutine's reusable state.
type worker struct {
	keys   *keyMap
	filter log.BatchFilter
	buf    []byte
	out    []byte
}

// round is one round in progress.
type round struct {
	c         *Cleaner
	p         *registered
	w         *worker
	ctx       context.Context
	now       int64 // ms
	horizon   int64 // ms
	latest    int64 // last offset covered by the key map
	producers map[int64]ProducerLast
	stats     Stats
}

func (w *worker) clean(ctx context.Context, c *Cleaner, p *registered, view log.CleanerView, plan Plan) (Stats, error) {
	start := c.now()
	r := &round{c: c, p: p, w: w, ctx: ctx, now: start.UnixMilli()}
	r.horizon = r.now + view.Config.Cleaning.DeleteRetention.Milliseconds()
	defer w.keys.release()
	end, err := r.buildMap(plan.FirstDirty, plan.FirstUncleanable)
	if err != nil {
		return r.stats, err
	}
	r.stats.EndOffset = end
	r.stats.MapUtilization = w.keys.utilization()
	if r.producers, err = p.producers(start, c.expiration); err != nil {
		return r.stats, err
	}
	txn := newTxnState(p.aborted(view.LogStart, end), p.txns() != nil)
	for _, g := range groupSegments(view.Segments, end, view.Config.SegmentBytes) {
		if err := r.cleanGroup(g, txn); err != nil {
			return r.stats, err
		}
	}
	r.stats.Duration = c.now().Sub(start)
	return r.stats, nil
}

// account throttles and counts reads; it also notices cancellation.
// Writes are throttled as they happen and counted once their segment is
// swapped in.
func (r *round) account(read, written int) error {
	if err := r.ctx.Err(); err != nil {
		return err
	}
	r.stats.BytesRead += int64(read)
	r.c.bytesRead.Add(int64(read))
	return r.c.throttle.wait(r.ctx, read+written)
}

// buildMap maps the keys of [start, upper) and returns the end of the
// range it covered.
func (r *round) buildMap(start, upper int64) (int64, error) {
	if upper <= start {
		return 0, errNothingDirty
	}
	upper = min(upper, start+maxDeltaSpan)
	w := r.w
	w.keys.reset(start)
	r.latest = start - 1
	txn := newTxnState(r.p.aborted(start, upper), r.p.txns() != nil)
	var err error
	w.buf, err = r.p.Log.EachCleanableBatch(start, upper, w.buf, func(_ int64, b []byte) error {
		if err := r.account(len(b), 0); err != nil {
			return err
		}
		h, err := log.ParseBatchHeader(b)
		if err != nil {
			return err
		}
		if h.LastOffset() >= upper {
			return errMapFull // past the round's offset span
		}
		switch {
		case h.IsControl():
			txn.onControl(&h, w.controlKind(b))
		case txn.onData(&h):
			// aborted: its keys never win
		case w.keys.used+int(h.NumRecords) > w.keys.capacity():
			// The map takes whole batches only, so that it holds exactly
			// the keys of the offsets below the round's end.
			return errMapFull
		default:
			full := false
			err := w.filter.Scan(b, func(rec *log.CleanRecord) bool {
				if rec.Key != nil && rec.Offset >= start && !w.keys.put(rec.Key, rec.Offset) {
					full = true
				}
				return !full
			})
			if err != nil {
				return err
			}
			if full {
				return errMapFull
			}
		}
		r.latest = max(r.latest, h.LastOffset())
		return nil
	})
	switch {
	case errors.Is(err, errMapFull):
		if r.latest < start {
			return 0, errMapTooSmall
		}
		return r.latest + 1, nil
	case err != nil:
		return 0, err
	}
	r.latest = upper - 1
	return upper, nil
}

// controlKind is the type of a control batch's first record, -1 when it
// has none.
func (w *worker) controlKind(b []byte) int {
	kind := -1
	_ = w.filter.Scan(b, func(rec *log.CleanRecord) bool {
		kind = controlKind(rec.Key)
		return false
	})
	return kind
}

// group is a run of closed segments cleaned into one.
type group struct {
	base, next int64
	segments   int
}

// groupSegments groups the closed segments starting below end, from the
// first, into runs of at most maxBytes whose offsets fit a segment's
// 32-bit relative offsets.
func groupSegments(segs []log.SegmentSummary, end, maxBytes int64) []group {
	var out []group
	for i := 0; i < len(segs) && segs[i].Base < end; {
		g := group{base: segs[i].Base, next: segs[i].Next, segments: 1}
		bytes := segs[i].Bytes
		for i++; i < len(segs) && segs[i].Base < end && bytes+segs[i].Bytes <= maxBytes && segs[i].Next-1-g.base <= math.MaxUint32; i++ {
			g.next = segs[i].Next
			bytes += segs[i].Bytes
			g.segments++
		}
		out = append(out, g)
	}
	return out
}

// cleanGroup rewrites one group into a cleaned segment and swaps it in;
// a lone segment that loses nothing is left as it is.
func (r *round) cleanGroup(g group, txn *txnState) error {
	cs, err := r.p.Log.NewCleanedSegment(g.base, g.next)
	if err != nil {
		return err
	}
	w := r.w
	changed := g.segments > 1
	w.buf, err = r.p.Log.EachCleanableBatch(g.base, g.next, w.buf, func(_ int64, b []byte) error {
		h, err := log.ParseBatchHeader(b)
		if err != nil {
			return err
		}
		discard := false // the batch's records may all go
		marker := false  // a marker whose transaction has no records left
		if h.IsControl() {
			marker = txn.onControl(&h, w.controlKind(b))
			hz, ok := h.DeleteHorizon()
			discard = marker && ok && hz <= r.now
		} else {
			discard = txn.onData(&h)
		}
		opts := log.FilterOptions{
			RetainEmpty: h.ProducerID >= 0 && r.lastOfProducer(&h) || h.NextOffset() == g.next,
			Horizon:     r.horizon,
			MarkHorizon: marker,
		}
		var res log.FilterResult
		w.out, res, err = w.filter.Filter(w.out[:0], b, opts, func(rec *log.CleanRecord) bool {
			switch {
			case discard:
				return false
			case h.IsControl():
				return true
			}
			return r.retain(&h, rec)
		})
		if err != nil {
			return err
		}
		r.stats.RecordsRead += int64(res.Records)
		r.stats.RecordsKept += int64(res.Kept)
		changed = changed || res.Outcome != log.FilterCopied
		if err := r.account(len(b), len(w.out)); err != nil {
			return err
		}
		if len(w.out) == 0 {
			return nil
		}
		return cs.Append(w.out)
	})
	if err == nil && !changed {
		cs.Abort()
		return nil
	}
	if err != nil {
		cs.Abort()
		return err
	}
	written := cs.Bytes()
	if err := cs.Commit(); err != nil {
		return err
	}
	r.stats.SegmentsSwaps++
	r.stats.BytesWritten += written
	r.c.bytesWritten.Add(written)
	return nil
}

// retain is Kafka's shouldRetainRecord: the record is the latest of its
// key the map knows (or past the mapped range), and a tombstone only
// until its batch's delete horizon. Records without a key go.
func (r *round) retain(h *log.BatchHeader, rec *log.CleanRecord) bool {
	if rec.Offset > r.latest {
		return true
	}
	if rec.Key == nil {
		return false
	}
	if rec.Offset < r.w.keys.get(rec.Key) {
		return false
	}
	if !rec.Tombstone {
		return true
	}
	hz, ok := h.DeleteHorizon()
	return !ok || r.now < hz
}

// lastOfProducer reports whether the batch holds its producer's latest
// sequence (or, for a producer without data, its latest marker).
func (r *round) lastOfProducer(h *log.BatchHeader) bool {
	pl, ok := r.producers[h.ProducerID]
	switch {
	case !ok:
		return false
	case pl.LastDataOffset >= 0:
		return !h.IsControl() && h.LastOffset() == pl.LastDataOffset
	}
	return h.IsControl() && h.ProducerEpoch == pl.Epoch
}

// producersFromLog finds each producer's last data batch and epoch from
// the log's batch headers, leaving out producers whose latest batch is
// older than expiration (Kafka's producer.id.expiration.ms, measured from
// batch timestamps as the broker's producer state expires them): what a
// partition without a producer-state hook keeps.
func producersFromLog(l Log, now time.Time, expiration time.Duration) (map[int64]ProducerLast, error) {
	out := map[int64]ProducerLast{}
	last := map[int64]int64{} // producer id -> max timestamp of its latest batch
	err := l.ScanHeaders(0, func(h log.BatchHeader) bool {
		if h.ProducerID < 0 {
			return true
		}
		pl, ok := out[h.ProducerID]
		if !ok {
			pl.LastDataOffset = -1
		}
		if !h.IsControl() {
			pl.LastDataOffset = h.LastOffset()
		}
		pl.Epoch = h.ProducerEpoch
		out[h.ProducerID] = pl
		last[h.ProducerID] = h.MaxTimestamp
		return true
	})
	if err != nil {
		return nil, fmt.Errorf("cleaner: producers from the log: %w", err)
	}
	for id, ts := range last {
		if now.UnixMilli()-ts >= expiration.Milliseconds() {
			delete(out, id)
		}
	}
	return out, nil
}
