package broker

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	wlog "weir/internal/log"
	"weir/internal/share"
)

// sharePart is one share partition (group, topic, partition) served by
// this broker: the share.Partition state machine behind a mutex held only
// for in-memory work, the fetches parked on it, and its place in the
// store and the timers. Every change's durable record is queued to the
// store under mu, so the log sees changes in the order they were made;
// callers wait for the tickets after unlocking.
type sharePart struct {
	c    *shareCoordinator
	key  share.StateKey
	rkey []byte // the store key

	mu sync.Mutex
	// p is nil until the first use resolves the start offset.
	p *share.Partition
	// cfg is the group's settings for this partition.
	cfg share.Config
	// broken is set when a write of this partition's state failed: its
	// memory may be ahead of the log, so it is restored before next use.
	broken bool
	// deltas counts records written since the last snapshot.
	deltas int
	// epoch is the data partition's leader epoch when p was loaded; a
	// different one means the leadership moved, and p is loaded again.
	epoch int32
	// waiters are ShareFetch requests parked until records are
	// acquirable here again (an acknowledgement, a release, an expiry).
	waiters []*fetchWaiter
	// armed is the expiry deadline queued on the timers (UnixNano), 0 if
	// none.
	armed int64
	// deleted is set when the partition's state was deleted (its group
	// or its offsets): a request still holding it gets an error instead
	// of writing the state back.
	deleted bool
}

var errShareStateLost = errors.New("broker: share partition state could not be restored")

// logPartition finds the partition's log, or nil when its topic is gone.
func (sp *sharePart) logPartition() *partition {
	b := sp.c.b
	t := b.lookupTopicID(sp.key.TopicID)
	p, err := b.partitionOf(t, sp.key.Partition)
	if err != nil {
		return nil
	}
	return p
}

// readyLocked makes sp.p usable: on first use, after a failed write, or
// when the data partition's leader epoch moved since the state was
// loaded, it reads the state from the key's share coordinator (fencing
// any older leader of the partition) and restores it, or, when there is
// none, creates it at the group's share.auto.offset.reset position. Then
// it queues a snapshot stamped with this leader's epoch (records of later
// changes queue behind it, so it is durable before any answer that
// depends on it). The read may wait for another node, with sp.mu held:
// the partition is unusable until it is done.
func (sp *sharePart) readyLocked(reset share.OffsetReset, now time.Time) (*storeTicket, error) {
	if sp.deleted {
		return nil, kerr.UnknownTopicOrPartition
	}
	lp := sp.logPartition()
	if lp == nil {
		return nil, kerr.UnknownTopicOrPartition
	}
	epoch := lp.leaderEpoch.Load()
	if sp.p != nil && !sp.broken && sp.epoch == epoch {
		return nil, nil
	}
	sp.p, sp.deltas = nil, 0
	ctx, cancel := context.WithTimeout(sp.c.b.ctx, 15*time.Second)
	defer cancel()
	recs, err := sp.c.stateRead(ctx, sp.rkey, epoch)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errShareStateLost, err)
	}
	if len(recs) > 0 {
		p, err := share.Restore(sp.cfg, recs)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", errShareStateLost, err)
		}
		sp.p = p
	} else {
		sp.p = share.New(sp.cfg, share.InitialStartOffset(reset, now, logOffsets{lp}))
	}
	sp.p.SetLeaderEpoch(epoch)
	sp.epoch, sp.broken = epoch, false
	return sp.writeSnapshotLocked(), nil
}

// persistLocked queues the durable form of a change; every SnapshotEvery
// records it writes the whole state instead.
func (sp *sharePart) persistLocked(rec share.StateRecord) *storeTicket {
	if rec.IsZero() {
		return nil
	}
	if sp.deltas+1 >= sp.c.cfg.SnapshotEvery {
		return sp.writeSnapshotLocked()
	}
	v, err := rec.AppendTo(nil)
	if err != nil {
		// A record the state machine produced always validates.
		panic(fmt.Sprintf("broker: share state record does not encode: %v", err))
	}
	sp.deltas++
	return sp.c.stateWrite(sp.rkey, v, false, stateFence{stateEpoch: rec.StateEpoch, leaderEpoch: sp.epoch})
}

func (sp *sharePart) writeSnapshotLocked() *storeTicket {
	return sp.writeSnapshotAs(stateFence{})
}

// writeSnapshotAs queues the whole state, fenced as f says (an
// administrative reset), else with this leader's epochs.
func (sp *sharePart) writeSnapshotAs(f stateFence) *storeTicket {
	snap := sp.p.Snapshot()
	v, err := snap.AppendTo(nil)
	if err != nil {
		panic(fmt.Sprintf("broker: share snapshot does not encode: %v", err))
	}
	sp.deltas = 0
	if !f.reinit {
		f = stateFence{stateEpoch: snap.StateEpoch, leaderEpoch: sp.epoch}
	}
	return sp.c.stateWrite(sp.rkey, v, true, f)
}

// afterChangeLocked wakes parked fetches if records may be acquirable and
// arms the expiry timer for the earliest lock.
func (sp *sharePart) afterChangeLocked(now time.Time) {
	if sp.p == nil {
		return
	}
	if sp.p.CanAcquire(now) {
		for _, w := range sp.waiters {
			w.wake()
		}
	}
	if at, ok := sp.p.NextDeadline(); ok {
		n := at.UnixNano()
		if sp.armed == 0 || n < sp.armed {
			sp.armed = n
			sp.c.timers.arm(at, sp.expire)
		}
	}
}

// expire is the timer's call: end the locks that are due.
func (sp *sharePart) expire(now time.Time) {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	sp.armed = 0
	if sp.p == nil || sp.broken {
		return
	}
	sp.persistLocked(sp.p.Expire(now))
	sp.afterChangeLocked(now)
}

// failed marks the partition for a restore after a write of its state
// failed.
func (sp *sharePart) failed() {
	sp.mu.Lock()
	sp.broken = true
	sp.mu.Unlock()
}

func (sp *sharePart) addWaiter(w *fetchWaiter) {
	sp.mu.Lock()
	sp.waiters = append(sp.waiters, w)
	sp.mu.Unlock()
}

func (sp *sharePart) removeWaiter(w *fetchWaiter) {
	sp.mu.Lock()
	if i := slices.Index(sp.waiters, w); i >= 0 {
		sp.waiters = slices.Delete(sp.waiters, i, i+1)
	}
	sp.mu.Unlock()
}

// acknowledge applies one partition's acknowledgement batches for member.
func (sp *sharePart) acknowledge(member string, batches []share.AckBatch, renewAllowed bool, reset share.OffsetReset, now time.Time) (*storeTicket, error) {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	first, err := sp.readyLocked(reset, now)
	if err != nil {
		return nil, err
	}
	if !renewAllowed {
		for _, b := range batches {
			if slices.Contains(b.Types, share.AckRenew) {
				return first, fmt.Errorf("%w: Renewing acquisition locks is not enabled for the group.", kerr.InvalidRecordState)
			}
		}
	}
	rec, err := sp.p.Acknowledge(member, batches, now)
	if err != nil {
		return first, err
	}
	t := sp.persistLocked(rec)
	sp.afterChangeLocked(now)
	return lastTicket(first, t), nil
}

// releaseMember hands back what member holds here.
func (sp *sharePart) releaseMember(member string, now time.Time) {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	if sp.p == nil || sp.broken {
		return
	}
	sp.persistLocked(sp.p.ReleaseMember(member, now))
	sp.afterChangeLocked(now)
}

// acquireArgs are one partition's share of a ShareFetch.
type acquireArgs struct {
	member     string
	maxBytes   int64
	maxRecords int32
	batchSize  int32
	mode       share.AcquireMode
	reset      share.OffsetReset
}

// acquired is what a partition handed out: the ranges and the log batches
// that hold them.
type acquired struct {
	ranges  []share.AcquiredRange
	records int64
	recs    *shareRecords
	ticket  *storeTicket
}

// acquire reads the log where the next acquisition starts and locks what
// it may to the member. The log is read without sp.mu held; the state
// machine copes with a read that another acquisition overtook.
func (sp *sharePart) acquire(a acquireArgs) (acquired, error) {
	var out acquired
	lp := sp.logPartition()
	if lp == nil {
		return out, kerr.UnknownTopicOrPartition
	}
	for attempt := 0; ; attempt++ {
		now := sp.c.b.now()
		sp.mu.Lock()
		first, err := sp.readyLocked(a.reset, now)
		if err != nil {
			sp.mu.Unlock()
			return out, err
		}
		out.ticket = lastTicket(out.ticket, first)
		if ls := lp.log.StartOffset(); sp.p.StartOffset() < ls {
			out.ticket = lastTicket(out.ticket, sp.persistLocked(sp.p.AdvanceLogStart(ls)))
		}
		if !sp.p.CanAcquire(now) {
			sp.mu.Unlock()
			return out, nil
		}
		from := sp.p.NextFetchOffset(now)
		// Records past the end offset are all fresh: the read needs to
		// reach MaxRecords past it and no further.
		limit := max(from-1, sp.p.EndOffset()) + int64(a.maxRecords)
		sp.mu.Unlock()

		hw := lp.highWatermark()
		batches, ranges, err := readShareBatches(lp, from, a.maxBytes, hw, limit)
		if err != nil {
			return out, err
		}
		if len(batches) == 0 {
			return out, nil
		}
		sp.mu.Lock()
		req := share.AcquireRequest{
			Member: a.member, FetchOffset: from, HighWatermark: hw,
			MaxRecords: a.maxRecords, BatchSize: a.batchSize, Mode: a.mode,
			Batches: make([]share.Batch, len(batches)),
		}
		for i, b := range batches {
			req.Batches[i] = b.batch
		}
		startBefore := sp.p.StartOffset()
		res, err := sp.p.Acquire(req, sp.c.b.now())
		if errors.Is(err, share.ErrStaleRead) && attempt == 0 {
			sp.mu.Unlock()
			continue
		}
		if err != nil {
			sp.mu.Unlock()
			return out, err
		}
		// The acquisitions themselves are not written (see
		// share.StateRecord.WithoutLocks); what else the acquisition
		// changed (expired locks, archived offsets, the start offset) is.
		out.ticket = lastTicket(out.ticket, sp.persistLocked(res.Change.WithoutLocks(startBefore)))
		sp.afterChangeLocked(now)
		sp.mu.Unlock()
		out.ranges, out.records = res.Acquired, res.Records
		if len(res.Acquired) > 0 {
			out.recs = holdingBatches(batches, ranges, res.Acquired, &sp.c.trims)
		}
		return out, nil
	}
}

// lastTicket is the later of two tickets of one partition (they complete
// in order); either may be nil.
func lastTicket(a, b *storeTicket) *storeTicket {
	if b != nil {
		return b
	}
	return a
}

// shareBatch is a log batch found by a share read: its offsets and where
// it lies in the read's file ranges.
type shareBatch struct {
	batch share.Batch
	rng   int   // index of the file range holding it
	pos   int64 // file position
	size  int64
	// compressed batches are sent whole, never trimmed.
	compressed bool
}

// readShareBatches reads p from offset from, up to maxBytes (at least one
// batch) below hw, and lists the batches, stopping after the one that
// reaches limit. Only batch headers are read. An offset past the log end
// (a start offset reset beyond it) reads nothing.
func readShareBatches(p *partition, from, maxBytes, hw, limit int64) ([]shareBatch, []wlog.FileRange, error) {
	if from >= hw {
		return nil, nil, nil
	}
	res, err := p.log.Read(nil, from, maxBytes, hw)
	if err != nil {
		if errors.Is(err, kerr.OffsetOutOfRange) && from >= p.log.EndOffset() {
			return nil, nil, nil
		}
		return nil, nil, err
	}
	if res.Bytes == 0 {
		return nil, nil, nil
	}
	// The read's ranges and the header scan both start at the batch
	// holding from and walk the same segments, so the scan's running
	// size places each batch in the ranges.
	var out []shareBatch
	rng, pos, walked := 0, res.Ranges[0].Pos, int64(0)
	err = p.log.ScanHeaders(from, func(h wlog.BatchHeader) bool {
		if walked+int64(h.Length) > res.Bytes {
			return false
		}
		for pos >= res.Ranges[rng].Pos+res.Ranges[rng].Len {
			rng++
			pos = res.Ranges[rng].Pos
		}
		out = append(out, shareBatch{
			batch: share.Batch{Base: h.BaseOffset, Last: h.LastOffset(), Skip: h.IsControl()},
			rng:   rng, pos: pos, size: int64(h.Length),
			compressed: h.Compression() != wlog.CompressionNone,
		})
		pos += int64(h.Length)
		walked += int64(h.Length)
		return walked < res.Bytes && h.LastOffset() < limit
	})
	if err != nil {
		return nil, nil, err
	}
	return out, res.Ranges, nil
}

// holdingBatches returns the records of the batches that hold any
// acquired offset: file ranges, merged when neighbours, for batches
// acquired whole, and trimmed copies (share_trim.go) for uncompressed
// batches only part of which is acquired. A batch that cannot be trimmed
// goes out whole, records at its edges included; the client keeps only
// the acquired ranges.
func holdingBatches(batches []shareBatch, ranges []wlog.FileRange, acq []share.AcquiredRange, trims *trimReads) *shareRecords {
	fr := &shareRecords{marker: newMarker()}
	j := 0
	for _, b := range batches {
		for j < len(acq) && acq[j].Last < b.batch.Base {
			j++
		}
		if j == len(acq) {
			break
		}
		if acq[j].First > b.batch.Last {
			continue
		}
		whole := wlog.FileRange{File: ranges[b.rng].File, Pos: b.pos, Len: b.size}
		if !b.compressed && !b.batch.Skip && !coversBatch(acq[j:], b.batch) {
			if pieces, ok := trims.trimmed(whole, acq[j:]); ok {
				for _, pc := range pieces {
					fr.addBytes(pc)
				}
				continue
			}
		}
		fr.addFile(whole)
	}
	return fr
}

// logOffsets answers share.OffsetLookup from a partition's log.
type logOffsets struct{ p *partition }

func (l logOffsets) Earliest() int64 { return l.p.log.StartOffset() }
func (l logOffsets) Latest() int64   { return l.p.highWatermark() }
func (l logOffsets) ForTimestamp(ts time.Time) (int64, bool) {
	r, err := l.p.log.OffsetForTimestamp(ts.UnixMilli(), l.p.highWatermark())
	if err != nil || !r.Found {
		return 0, false
	}
	return r.Offset, true
}

// waitTickets waits for every ticket; the first error wins.
func waitTickets(ctx context.Context, ts ...*storeTicket) error {
	for _, t := range ts {
		if err := t.wait(ctx); err != nil {
			return err
		}
	}
	return nil
}
