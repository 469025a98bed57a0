package sharegroup

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	wlog "weir/internal/log"
	"weir/internal/replica"
	"weir/internal/share"
	"weir/internal/sharestate"
	"weir/internal/splice"
)

// sharePartition is one share partition (group, topic, partition) served
// by this broker, Kafka's SharePartition: the share.Partition state
// machine behind a mutex held only for in-memory work, the fetches parked
// on it, and its place in the timers. Every change's durable record is
// queued to the state store under mu, so the store sees changes in the
// order they were made; callers wait for the tickets after unlocking.
//
// Loading the state (on first use, after a failed write, after the data
// partition's leadership moved) reads it from the key's share
// coordinator, which may be another node: that read runs with mu
// released. The partition is marked loading meanwhile; its other users
// wait for the load to end (on loading, not on the lock), and users of
// other partitions and groups are not held up at all.
type sharePartition struct {
	m    *Manager
	key  share.StateKey
	rkey []byte // the state store's key

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
	// loading is closed when the load in progress ends; nil when none.
	loading chan struct{}
	// gen counts resets and deletions: a load that overlapped one is
	// discarded.
	gen uint64
	// waiters are ShareFetch requests parked until records are
	// acquirable here again (an acknowledgement, a release, an expiry).
	waiters []*replica.Waiter
	// armed is the expiry deadline queued on the timers (UnixNano), 0 if
	// none.
	armed int64
	// deleted is set when the partition's state was deleted (its group
	// or its offsets): a request still holding it gets an error instead
	// of writing the state back.
	deleted bool
	// deferred are acknowledgement writes answered before they were
	// durable (deferred.go), until they are over; one that failed marks
	// the partition broken.
	deferred []stateWrite
	// batch gathers the changes of deferred acknowledgements until its
	// flush (groupcommit.go), batchRec being their merged delta; nil
	// when none is pending.
	batch    *batchWrite
	batchRec share.StateRecord
}

var errStateLost = errors.New("sharegroup: share partition state could not be restored")

// dataPartition finds the data partition, or the error a request for it
// gets.
func (sp *sharePartition) dataPartition() (Partition, error) {
	return sp.m.host.Partition(sp.key.TopicID, sp.key.Partition)
}

// readyLocked makes sp.p usable: on first use, after a failed write, or
// when the data partition's leader epoch moved since the state was
// loaded, it reads the state from the key's share coordinator (fencing
// any older leader of the partition) and restores it, or, when there is
// none, creates it at the group's share.auto.offset.reset position. Then
// it queues a snapshot stamped with this leader's epoch (records of later
// changes queue behind it, so it is durable before any answer that
// depends on it).
//
// It is called and returns with mu held, but releases it while the state
// is read (the read may go to another node and take seconds): a second
// caller finds the partition loading and waits for that load, without the
// lock, then looks again.
func (sp *sharePartition) readyLocked(ctx context.Context, reset share.OffsetReset, now time.Time) (*sharestate.Ticket, error) {
	for {
		if sp.deleted {
			return nil, kerr.UnknownTopicOrPartition
		}
		sp.settleLocked()
		lp, err := sp.dataPartition()
		if err != nil {
			return nil, err
		}
		epoch := lp.LeaderEpoch()
		if sp.p != nil && !sp.broken && sp.epoch == epoch {
			return nil, nil
		}
		if ch := sp.loading; ch != nil {
			sp.mu.Unlock()
			select {
			case <-ch:
			case <-ctx.Done():
			}
			sp.mu.Lock()
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			continue
		}
		if sp.broken {
			sp.failBatchLocked(errBatchDropped)
		} else {
			sp.flushLocked() // under the old leader epoch's fence
		}
		sp.p, sp.deltas = nil, 0
		ch, gen := make(chan struct{}), sp.gen
		sp.loading = ch
		sp.mu.Unlock()
		recs, err := sp.readState(ctx, epoch)
		sp.mu.Lock()
		sp.loading = nil
		close(ch)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", errStateLost, err)
		}
		if sp.gen != gen || sp.p != nil {
			// Reset or deleted while the state was read: what was read
			// is stale. Look again.
			continue
		}
		if len(recs) > 0 {
			p, err := share.Restore(sp.cfg, recs)
			if err != nil {
				return nil, fmt.Errorf("%w: %v", errStateLost, err)
			}
			sp.p = p
		} else {
			sp.p = share.New(sp.cfg, share.InitialStartOffset(reset, now, logOffsets{lp}))
		}
		sp.p.SetLeaderEpoch(epoch)
		sp.epoch, sp.broken = epoch, false
		return sp.writeSnapshotLocked(), nil
	}
}

// readState reads the partition's records from its share coordinator,
// within 15 s, with no lock held.
func (sp *sharePartition) readState(ctx context.Context, epoch int32) ([]share.StateRecord, error) {
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	stop := context.AfterFunc(sp.m.ctx, cancel)
	defer stop()
	return sp.m.state.Read(ctx, sp.rkey, epoch)
}

// persistLocked queues the durable form of a change, after the gathered
// changes of deferred acknowledgements (groupcommit.go).
func (sp *sharePartition) persistLocked(rec share.StateRecord) *sharestate.Ticket {
	if rec.IsZero() {
		return nil
	}
	sp.flushLocked()
	return sp.writeLocked(rec)
}

// writeLocked queues rec; every SnapshotEvery records it writes the whole
// state instead.
func (sp *sharePartition) writeLocked(rec share.StateRecord) *sharestate.Ticket {
	if rec.IsZero() {
		return nil
	}
	if sp.deltas+1 >= sp.m.cfg.SnapshotEvery {
		return sp.writeSnapshotLocked()
	}
	v, err := rec.AppendTo(nil)
	if err != nil {
		// A record the state machine produced always validates.
		panic(fmt.Sprintf("sharegroup: share state record does not encode: %v", err))
	}
	sp.deltas++
	return sp.m.state.Write(sp.rkey, v, false, sharestate.Fence{StateEpoch: rec.StateEpoch, LeaderEpoch: sp.epoch})
}

func (sp *sharePartition) writeSnapshotLocked() *sharestate.Ticket {
	return sp.writeSnapshotAs(sharestate.Fence{})
}

// writeSnapshotAs queues the whole state, fenced as f says (an
// administrative reset), else with this leader's epochs.
func (sp *sharePartition) writeSnapshotAs(f sharestate.Fence) *sharestate.Ticket {
	sp.flushLocked() // a no-op when the flush itself writes the snapshot
	snap := sp.p.Snapshot()
	v, err := snap.AppendTo(nil)
	if err != nil {
		panic(fmt.Sprintf("sharegroup: share snapshot does not encode: %v", err))
	}
	sp.deltas = 0
	if !f.Reinit {
		f = sharestate.Fence{StateEpoch: snap.StateEpoch, LeaderEpoch: sp.epoch}
	}
	return sp.m.state.Write(sp.rkey, v, true, f)
}

// afterChangeLocked wakes parked fetches if records may be acquirable and
// arms the expiry timer for the earliest lock.
func (sp *sharePartition) afterChangeLocked(now time.Time) {
	if sp.p == nil {
		return
	}
	if sp.p.CanAcquire(now) {
		for _, w := range sp.waiters {
			w.Wake()
		}
	}
	if at, ok := sp.p.NextDeadline(); ok {
		n := at.UnixNano()
		if sp.armed == 0 || n < sp.armed {
			sp.armed = n
			sp.m.timers.arm(at, sp.expire)
		}
	}
}

// expire is the timer's call: end the locks that are due.
func (sp *sharePartition) expire(now time.Time) {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	sp.armed = 0
	sp.settleLocked()
	if sp.p == nil || sp.broken {
		return
	}
	sp.persistLocked(sp.p.Expire(now))
	sp.afterChangeLocked(now)
}

// failed marks the partition for a restore after a write of its state
// failed.
func (sp *sharePartition) failed() {
	sp.mu.Lock()
	sp.broken = true
	sp.mu.Unlock()
}

func (sp *sharePartition) park(w *replica.Waiter) (unpark func()) {
	sp.mu.Lock()
	sp.waiters = append(sp.waiters, w)
	sp.mu.Unlock()
	return func() {
		sp.mu.Lock()
		if i := slices.Index(sp.waiters, w); i >= 0 {
			sp.waiters = slices.Delete(sp.waiters, i, i+1)
		}
		sp.mu.Unlock()
	}
}

// acknowledge applies one partition's acknowledgement batches for member;
// with gather (a ShareFetch deferring their durability) their change joins
// the partition's batch (groupcommit.go) instead of being queued alone.
func (sp *sharePartition) acknowledge(ctx context.Context, member string, batches []share.AckBatch, renewAllowed bool, reset share.OffsetReset, now time.Time, gather bool) (stateWrite, error) {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	first, err := sp.readyLocked(ctx, reset, now)
	if err != nil {
		return nil, err
	}
	if !renewAllowed {
		for _, b := range batches {
			if slices.Contains(b.Types, share.AckRenew) {
				return written(first), fmt.Errorf("%w: Renewing acquisition locks is not enabled for the group.", kerr.InvalidRecordState)
			}
		}
	}
	rec, err := sp.p.Acknowledge(member, batches, now)
	if err != nil {
		return written(first), err
	}
	defer sp.afterChangeLocked(now)
	if gather && first == nil {
		return sp.gatherLocked(rec), nil
	}
	return written(sharestate.Later(first, sp.persistLocked(rec))), nil
}

// releaseMember hands back what member holds here.
func (sp *sharePartition) releaseMember(member string, now time.Time) {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	sp.settleLocked()
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
	recs    *Records
	ticket  *sharestate.Ticket
}

// acquire reads the log where the next acquisition starts and locks what
// it may to the member. The log is read without sp.mu held; the state
// machine copes with a read that another acquisition overtook.
func (sp *sharePartition) acquire(ctx context.Context, a acquireArgs) (acquired, error) {
	var out acquired
	lp, err := sp.dataPartition()
	if err != nil {
		return out, err
	}
	for attempt := 0; ; attempt++ {
		now := sp.m.host.Now()
		sp.mu.Lock()
		first, err := sp.readyLocked(ctx, a.reset, now)
		if err != nil {
			sp.mu.Unlock()
			return out, err
		}
		out.ticket = sharestate.Later(out.ticket, first)
		if ls := lp.Log().StartOffset(); sp.p.StartOffset() < ls {
			out.ticket = sharestate.Later(out.ticket, sp.persistLocked(sp.p.AdvanceLogStart(ls)))
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

		hw := lp.HighWatermark()
		iso := sp.m.isolation(sp.key.Group)
		if iso == wlog.ReadCommitted {
			// read_committed: nothing past the last stable offset, and
			// aborted transactional batches are skipped.
			hw = lp.Log().LastStableOffset(hw)
		}
		batches, ranges, err := readShareBatches(lp.Log(), from, a.maxBytes, hw, limit, iso)
		if err != nil {
			return out, err
		}
		if len(batches) == 0 {
			return out, nil
		}
		sp.mu.Lock()
		if sp.p == nil {
			// Deleted, reset or reloading since the read: start over.
			sp.mu.Unlock()
			if attempt == 0 {
				continue
			}
			return out, nil
		}
		req := share.AcquireRequest{
			Member: a.member, FetchOffset: from, HighWatermark: hw,
			MaxRecords: a.maxRecords, BatchSize: a.batchSize, Mode: a.mode,
			Batches: make([]share.Batch, len(batches)),
		}
		for i, b := range batches {
			req.Batches[i] = b.batch
		}
		startBefore := sp.p.StartOffset()
		res, err := sp.p.Acquire(req, sp.m.host.Now())
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
		out.ticket = sharestate.Later(out.ticket, sp.persistLocked(res.Change.WithoutLocks(startBefore)))
		sp.afterChangeLocked(now)
		sp.mu.Unlock()
		out.ranges, out.records = res.Acquired, res.Records
		if len(res.Acquired) > 0 {
			out.recs = holdingBatches(batches, ranges, res.Acquired, &sp.m.trims)
		}
		return out, nil
	}
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

// readShareBatches reads l from offset from, up to maxBytes (at least one
// batch) below hw, and lists the batches, stopping after the one that
// reaches limit. Only batch headers are read. An offset past the log end
// (a start offset reset beyond it) reads nothing.
func readShareBatches(l *wlog.Log, from, maxBytes, hw, limit int64, iso wlog.Isolation) ([]shareBatch, []wlog.FileRange, error) {
	if from >= hw {
		return nil, nil, nil
	}
	res, err := l.Read(nil, from, maxBytes, hw)
	if err != nil {
		if errors.Is(err, kerr.OffsetOutOfRange) && from >= l.EndOffset() {
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
	var aborted []wlog.AbortedTxn
	if iso == wlog.ReadCommitted {
		aborted = l.AbortedTransactions(from, hw)
	}
	var out []shareBatch
	rng, pos, walked := 0, res.Ranges[0].Pos, int64(0)
	err = l.ScanHeaders(from, func(h wlog.BatchHeader) bool {
		if walked+int64(h.Length) > res.Bytes {
			return false
		}
		for pos >= res.Ranges[rng].Pos+res.Ranges[rng].Len {
			rng++
			pos = res.Ranges[rng].Pos
		}
		out = append(out, shareBatch{
			batch: share.Batch{Base: h.BaseOffset, Last: h.LastOffset(), Skip: h.IsControl() || inAborted(aborted, &h)},
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
// acquired whole, and trimmed copies (trim.go) for uncompressed batches
// only part of which is acquired. A batch that cannot be trimmed goes out
// whole, records at its edges included; the client keeps only the
// acquired ranges.
func holdingBatches(batches []shareBatch, ranges []wlog.FileRange, acq []share.AcquiredRange, trims *trimReads) *Records {
	fr := &Records{}
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

// Records is one partition's records in a ShareFetch answer: pieces of
// segment files (whole log batches, sent without a copy) and, for a batch
// only part of which was acquired, a trimmed copy in memory (trim.go).
type Records struct {
	Pieces []Piece
	Size   int64 // bytes in all pieces
}

// Piece is a file range, or Bytes when it is not nil.
type Piece = splice.Piece

// addFile appends a file range, merging it with the previous piece when
// it continues it.
func (r *Records) addFile(fr wlog.FileRange) {
	if n := len(r.Pieces); n > 0 {
		last := &r.Pieces[n-1]
		if last.Bytes == nil && last.File.File == fr.File && last.File.Pos+last.File.Len == fr.Pos {
			last.File.Len += fr.Len
			r.Size += fr.Len
			return
		}
	}
	r.Pieces = append(r.Pieces, Piece{File: fr})
	r.Size += fr.Len
}

// addBytes appends bytes the answer owns.
func (r *Records) addBytes(b []byte) {
	r.Pieces = append(r.Pieces, Piece{Bytes: b})
	r.Size += int64(len(b))
}

// logOffsets answers share.OffsetLookup from a partition's log.
type logOffsets struct{ p Partition }

func (l logOffsets) Earliest() int64 { return l.p.Log().StartOffset() }
func (l logOffsets) Latest() int64   { return l.p.HighWatermark() }
func (l logOffsets) ForTimestamp(ts time.Time) (int64, bool) {
	r, err := l.p.Log().OffsetForTimestamp(ts.UnixMilli(), l.p.HighWatermark())
	if err != nil || !r.Found {
		return 0, false
	}
	return r.Offset, true
}

// inAborted reports whether a batch is transactional data of one of the
// aborted transactions (read_committed skips it).
func inAborted(aborted []wlog.AbortedTxn, h *wlog.BatchHeader) bool {
	if !h.IsTransactional() {
		return false
	}
	for _, a := range aborted {
		if a.ProducerID == h.ProducerID && h.BaseOffset >= a.FirstOffset && h.BaseOffset < a.LastOffset {
			return true
		}
	}
	return false
}
