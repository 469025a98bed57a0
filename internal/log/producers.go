package log

import (
	"fmt"
	"math"
	"os"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
)

// ProducerState is a partition's producer bookkeeping (internal/producer's
// State implements it): each producer's epoch, sequences, coordinator
// epoch and the first offset of its ongoing transaction. A log opened with
// Options.Producers drives it in step with its batches, under its append
// lock: every batch written (a client's, a marker, a follower's copy)
// is applied once written, a truncation rebuilds it, recovery restores it
// from the newest usable snapshot and replays the batches after it, and a
// roll and Close write a snapshot. The log never validates through it:
// checks before an append stay the AppendOptions.Guard's.
//
// Every method is called with the log's lock held; the implementation
// needs no lock of its own as long as nothing else calls it.
type ProducerState interface {
	// Apply records a batch as written, with its stamped offsets. m is
	// the decoded marker of a control batch, nil for a data batch. It
	// returns the transaction a marker ended, when the producer had one
	// with data on this partition (a marker without data ends nothing).
	Apply(h *BatchHeader, m *Marker) (CompletedTxn, bool)
	// FirstUnstableOffset is the first offset of the oldest ongoing
	// transaction, -1 when none is ongoing.
	FirstUnstableOffset() int64
	// Reset forgets every producer.
	Reset()
	// AppendSnapshot appends an encoding of the whole state to dst;
	// LoadSnapshot replaces the state with one AppendSnapshot encoded, or
	// fails and leaves it empty.
	AppendSnapshot(dst []byte) []byte
	LoadSnapshot(b []byte) error
	// ExpireProducers forgets producers idle past producer.id.expiration.ms
	// that have no ongoing transaction, and returns how many.
	ExpireProducers() int
	// Describe lists every producer, by id (DescribeProducers).
	Describe() []ProducerInfo
}

// CompletedTxn is a transaction a marker ended: its producer, the offset
// of its first batch on this partition, the marker's offset, and whether
// it was aborted.
type CompletedTxn struct {
	ProducerID  int64
	FirstOffset int64
	LastOffset  int64
	Aborted     bool
}

// ProducerInfo is one producer's state on a partition, as DescribeProducers
// (API 61) answers it.
type ProducerInfo struct {
	ProducerID       int64
	ProducerEpoch    int16
	LastSequence     int32 // -1 when none
	LastTimestamp    int64 // -1 when none
	CoordinatorEpoch int32 // -1 when no marker was seen
	// CurrentTxnStartOffset is the first offset of the producer's ongoing
	// transaction, -1 when none.
	CurrentTxnStartOffset int64
}

// applyLocked drives the producer state with a batch just written to the
// active segment. mu held.
func (l *Log) applyLocked(info *BatchInfo) {
	if l.producers == nil {
		return
	}
	var m *Marker
	if info.IsControl() {
		m = &info.Marker
	}
	if txn, ok := l.producers.Apply(&info.BatchHeader, m); ok {
		l.completeTxnLocked(len(l.segs)-1, txn)
		// Transactions whose marker the noted high watermark passed are
		// forgotten here too, so that the list stays short on a replica
		// whose last stable offset nobody asks for.
		l.pruneUnreplicatedLocked(l.hw.Load())
		l.unreplicated = append(l.unreplicated, txn)
	}
}

// pruneUnreplicatedLocked forgets completed transactions whose marker is
// below hw and returns the smallest first offset of those left (or
// MaxInt64). mu held.
func (l *Log) pruneUnreplicatedLocked(hw int64) int64 {
	first := int64(math.MaxInt64)
	if len(l.unreplicated) == 0 {
		return first // and never write the empty body of a log never written
	}
	n := 0
	for _, t := range l.unreplicated {
		if t.LastOffset >= hw {
			l.unreplicated[n] = t
			n++
			first = min(first, t.FirstOffset)
		}
	}
	clear(l.unreplicated[n:])
	l.unreplicated = l.unreplicated[:n]
	return first
}

// completeTxnLocked adds an aborted transaction to the index of segment i,
// which holds its marker, with the last stable offset once it ended: the
// start of the oldest transaction still open, or just past the marker.
// Replays at recovery compute entries the same way, so an index rebuilt
// after a crash equals the one written. mu held (or recovery).
func (l *Log) completeTxnLocked(i int, txn CompletedTxn) {
	if !txn.Aborted {
		return
	}
	lso := l.producers.FirstUnstableOffset()
	if lso < 0 {
		lso = txn.LastOffset + 1
	}
	s := l.segs[i]
	s.ix.aborted = append(s.ix.aborted, AbortedTxn{ProducerID: txn.ProducerID, FirstOffset: txn.FirstOffset, LastOffset: txn.LastOffset, LastStableOffset: lso})
	s.dirty = true
}

// LastStableOffset is the offset below which every transaction has ended
// with a marker the high watermark passed: the smallest of hw (the
// replica's high watermark), the log end, the first offset of every
// ongoing transaction, and the first offset of every transaction whose
// marker is not yet below hw (a leader change could still lose such a
// marker). read_committed consumers read below it. It is never below the
// log start offset. Without Options.Producers it is min(hw, log end).
func (l *Log) LastStableOffset(hw int64) int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lastStableLocked(hw)
}

// lastStableLocked is LastStableOffset; it also forgets completed
// transactions whose marker hw passed. mu held.
func (l *Log) lastStableLocked(hw int64) int64 {
	lso := min(hw, l.leo)
	if l.producers != nil {
		if f := l.producers.FirstUnstableOffset(); f >= 0 {
			lso = min(lso, f)
		}
		lso = min(lso, l.pruneUnreplicatedLocked(hw))
	}
	return max(lso, l.logStart)
}

// WithProducers runs fn under the log's append lock, serialised with every
// append and with the log's own calls to its ProducerState: the way for
// the state's owner to call it (producer.State.StartVerification before a
// produce asks the coordinator, Entries for tests). fn must be quick and
// must not call the Log.
func (l *Log) WithProducers(fn func()) {
	l.mu.Lock()
	defer l.mu.Unlock()
	fn()
}

// DescribeProducers lists the partition's producers (DescribeProducers,
// API 61); nil without Options.Producers.
func (l *Log) DescribeProducers() []ProducerInfo {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.producers == nil {
		return nil
	}
	return l.producers.Describe()
}

// ExpireProducers forgets producers idle past producer.id.expiration.ms
// (the broker calls it every producer.id.expiration.check.interval.ms)
// and returns how many went; 0 without Options.Producers.
func (l *Log) ExpireProducers() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.producers == nil {
		return 0
	}
	return l.producers.ExpireProducers()
}

// restoreProducersLocked rebuilds the producer state for the log as it
// now is, from the newest snapshot at or below upTo (the start of the
// first segment whose aborted-transaction index must be rebuilt; the log
// end after a truncation), replaying every batch after it. Markers of
// aborted transactions at or past upTo are added to their segment's
// index. Without a usable snapshot the replay starts from the first
// segment with an empty state. mu held, or recovery.
func (l *Log) restoreProducersLocked(upTo int64) error {
	return l.restoreProducersFrom(upTo, listSnapshots(l.dir))
}

// restoreProducersFrom is restoreProducersLocked with the snapshots on
// disk already listed (recovery reads the directory once).
func (l *Log) restoreProducersFrom(upTo int64, snaps []int64) error {
	first := l.segs[0].base
	from := first
	l.producers.Reset()
	for i := len(snaps) - 1; i >= 0; i-- {
		off := snaps[i]
		if off > upTo || off < first {
			continue
		}
		b, err := readSnapshot(l.dir, off)
		if err == nil {
			err = l.producers.LoadSnapshot(b)
		}
		if err == nil {
			from = off
			break
		}
		l.env().logger.Warn("log: producer snapshot unusable; an older one or the log is replayed", "dir", l.dir, "offset", off, "err", err)
		l.producers.Reset()
	}
	return l.replayLocked(from, upTo)
}

// replayLocked applies every batch from offset from to the log end to the
// producer state, adding aborted transactions whose marker is at or past
// indexFrom to their segment's index (whose entries from there on are
// dropped first).
func (l *Log) replayLocked(from, indexFrom int64) error {
	if from >= l.leo {
		return nil
	}
	start := l.segmentFor(from)
	for i := start; i < len(l.segs); i++ {
		s := l.segs[i]
		if s.next > indexFrom {
			s.ix.aborted = keepAborted(s.ix.aborted, indexFrom)
		}
	}
	vs := make([]view, 0, len(l.segs)-start)
	for _, s := range l.segs[start:] {
		vs = append(vs, s.view())
	}
	seg := start
	var werr error
	err := scanViews(vs, from, true, func(h *BatchHeader, m *Marker) bool {
		if h.IsControl() && m == nil {
			werr = fmt.Errorf("log: control batch at %d without a marker", h.BaseOffset)
			return false
		}
		txn, ok := l.producers.Apply(h, m)
		if ok && txn.LastOffset >= indexFrom {
			for seg+1 < len(l.segs) && l.segs[seg+1].base <= txn.LastOffset {
				seg++
			}
			l.completeTxnLocked(seg, txn)
		}
		return true
	})
	if err == nil {
		err = werr
	}
	if err != nil {
		l.producers.Reset()
		return fmt.Errorf("log: replay producer state from offset %d: %w", from, err)
	}
	return nil
}

// recoverProducers loads every segment's aborted-transaction index and,
// with Options.Producers, restores the producer state: indexes of
// segments wholly below the recovery point rp are trusted when they check
// out (after a clean close, all of them, and the snapshot Close wrote at
// the log end leaves nothing to replay); from the first segment that is not (or whose index does not check
// out) the indexes are rebuilt by the replay. Segments whose index
// changed are marked dirty so that recovery writes them.
func (l *Log) recoverProducers(rp int64, entries []os.DirEntry) error {
	rebuild := len(l.segs)
	for i, s := range l.segs {
		entries, err := loadTxnIndex(s.prefix, s.base, s.next)
		if err != nil {
			l.env().logger.Warn("log: aborted-transaction index does not check out; rebuilding it", "dir", l.dir, "segment", s.base, "err", err)
			s.dirty = true
		}
		s.ix.aborted = entries
		// The index of a segment wholly below the recovery point was
		// written before the flush that moved the point past it (the
		// active segment's too, by a checkpointing flush or Close).
		trusted := err == nil && s.next <= rp
		if !trusted && rebuild == len(l.segs) {
			rebuild = i
		}
	}
	lo, hi := l.segs[0].base, l.leo
	cleanEntries(l.dir, entries, lo, hi, true)
	if l.producers == nil {
		return nil
	}
	var snaps []int64
	for _, off := range snapshotsIn(entries) {
		if off >= lo && off <= hi { // the ones cleanEntries kept
			snaps = append(snaps, off)
		}
	}
	upTo := l.leo
	if rebuild < len(l.segs) {
		upTo = l.segs[rebuild].base
	}
	before := make([][]AbortedTxn, len(l.segs))
	for i, s := range l.segs {
		before[i] = s.ix.aborted
	}
	if err := l.restoreProducersFrom(upTo, snaps); err != nil {
		return err
	}
	for i, s := range l.segs[rebuild:] {
		if !slices.Equal(s.ix.aborted, before[rebuild+i]) {
			s.dirty = true
		}
	}
	l.producers.ExpireProducers()
	return nil
}

// truncateProducersLocked follows a truncation to the log end: snapshots
// past it go (before the checkpoint that fsyncs the directory), completed
// transactions whose marker was cut are forgotten, and the producer state
// is rebuilt from the newest snapshot at or below the end. restart: the
// log was emptied and restarted, so every snapshot goes. mu held.
func (l *Log) truncateProducersLocked(restart bool) error {
	if restart {
		removeSnapshotsOutside(l.dir, l.leo+1, l.leo)
	} else {
		removeSnapshotsOutside(l.dir, l.segs[0].base, l.leo)
		// The cut segment's index loses the aborts whose marker went: it
		// is rewritten now, as the recovery point may already cover what
		// is left of the segment.
		last := l.segs[len(l.segs)-1]
		if err := writeTxnIndex(last.prefix, last.ix.aborted); err != nil {
			return fmt.Errorf("%w: truncate aborted-transaction index: %w", kerr.KafkaStorageError, err)
		}
	}
	if l.producers == nil {
		return nil
	}
	n := 0
	for _, t := range l.unreplicated {
		if t.LastOffset < l.leo {
			l.unreplicated[n] = t
			n++
		}
	}
	clear(l.unreplicated[n:])
	l.unreplicated = l.unreplicated[:n]
	if restart {
		l.producers.Reset()
		return nil
	}
	return l.restoreProducersLocked(l.leo)
}

// snapshotProducersLocked writes a snapshot of the producer state at the
// log end (a roll: the new segment's base; Close). Without sync it is
// left to the page cache: a snapshot lost or torn in a crash fails its
// CRC and an older one, or the log, is replayed instead. mu held.
func (l *Log) snapshotProducersLocked(sync bool) {
	if l.producers == nil || len(l.segs) == 0 {
		return
	}
	l.snapBuf = l.producers.AppendSnapshot(l.snapBuf[:0])
	if err := writeSnapshot(l.dir, l.leo, l.snapBuf, sync); err != nil {
		l.env().logger.Warn("log: producer snapshot not written", "dir", l.dir, "offset", l.leo, "err", err)
	}
	removeSnapshotsOutside(l.dir, l.segs[0].base, l.leo)
}
