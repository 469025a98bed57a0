package producer

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"weir/internal/log"
)

// Values of the v2 batch header fields that mean "none".
const (
	NoProducerID    int64 = -1
	NoProducerEpoch int16 = -1
	NoSequence      int32 = -1
)

// BatchesRetained is how many of a producer's latest batches a partition
// remembers for duplicate detection. It is five, as in Kafka: an
// idempotent client keeps at most five requests in flight per connection
// (max.in.flight.requests.per.connection), so a retry is always a copy of
// one of the last five batches.
const BatchesRetained = 5

// Defaults of the broker settings that govern expiry.
const (
	// DefaultExpiration is producer.id.expiration.ms: a producer whose
	// latest batch is this old is forgotten.
	DefaultExpiration = 24 * time.Hour
	// DefaultExpirationCheckInterval is
	// producer.id.expiration.check.interval.ms: how often the broker should
	// call ExpireProducers.
	DefaultExpirationCheckInterval = 10 * time.Minute
)

// BatchMetadata is what a partition remembers of one appended batch.
type BatchMetadata struct {
	FirstSeq    int32
	LastSeq     int32
	FirstOffset int64
	LastOffset  int64
	// Timestamp is the batch's max timestamp as written (the broker's
	// clock for LogAppendTime topics).
	Timestamp int64
}

// Entry is a copy of one producer's state on a partition.
type Entry struct {
	ProducerID int64
	Epoch      int16
	// LastTimestamp is the max timestamp of the producer's latest batch.
	// Expiry is measured from it, as in Kafka, so that state rebuilt from
	// the log expires exactly as the live state would have.
	LastTimestamp int64
	// Batches are the latest batches of the current epoch, oldest first,
	// at most BatchesRetained.
	Batches []BatchMetadata
	// CoordinatorEpoch is the epoch of the transaction coordinator that
	// wrote the producer's latest marker, -1 before any.
	CoordinatorEpoch int32
	// TxnFirstOffset is the first offset of the producer's ongoing
	// transaction on this partition, -1 when none is ongoing.
	TxnFirstOffset int64
}

// LastSeq is the last sequence written in the current epoch, or
// NoSequence.
func (e *Entry) LastSeq() int32 {
	if len(e.Batches) == 0 {
		return NoSequence
	}
	return e.Batches[len(e.Batches)-1].LastSeq
}

// DuplicateError reports that a batch repeats one of the producer's last
// BatchesRetained batches, sequence range and epoch alike. It is not a
// failure: the broker must not write the batch and must answer the
// produce with error NONE and the original batch's offsets, as Kafka
// does: BaseOffset = Batch.FirstOffset, LogAppendTimeMs = Batch.Timestamp
// (Kafka answers the stored max timestamp here even on CreateTime topics)
// and the current log start offset.
type DuplicateError struct {
	ProducerID int64
	Epoch      int16
	Batch      BatchMetadata
}

func (e *DuplicateError) Error() string {
	return fmt.Sprintf("producer: duplicate of batch at offsets [%d, %d] (producer %d epoch %d sequences [%d, %d])",
		e.Batch.FirstOffset, e.Batch.LastOffset, e.ProducerID, e.Epoch, e.Batch.FirstSeq, e.Batch.LastSeq)
}

// Options configure a State. The states of a broker can share one
// (NewStateWith), so that a partition no producer wrote costs 16 bytes.
type Options struct {
	// Expiration is producer.id.expiration.ms; zero means
	// DefaultExpiration.
	Expiration time.Duration
	// Now is the clock used by ExpireProducers; nil means time.Now.
	Now func() time.Time
}

// State is the producer state of one partition: idempotence, epochs and
// transactions. It has no lock: its owner serialises every call with the
// partition's appends (see the package documentation).
//
// A partition that never sees an idempotent producer holds only a
// pointer to the settings: its tables are made by the first write (most
// partitions of a broker hosting many never see one).
type State struct {
	opts *Options
	t    *tables // nil until the first producer or verification
}

// now is the clock; expiration is producer.id.expiration.ms.
func (s *State) now() time.Time {
	if s.opts.Now == nil {
		return time.Now()
	}
	return s.opts.Now()
}

func (s *State) expiration() time.Duration {
	if s.opts.Expiration <= 0 {
		return DefaultExpiration
	}
	return s.opts.Expiration
}

type tables struct {
	producers map[int64]*entry
	// ongoing are the producers with an ongoing transaction, by the
	// transaction's first offset (appends and replays start transactions
	// in offset order, so appending keeps it sorted).
	ongoing []ongoingTxn
	// verifications in progress, by producer (verification.go); not in
	// snapshots: a restarted broker's produce requests verify again.
	verifications map[int64]*verification
	lastGuard     uint64
}

// noTables is what a State without tables reads; nothing writes it.
var noTables tables

// read returns the tables for reading: noTables while there are none.
func (s *State) read() *tables {
	if s.t == nil {
		return &noTables
	}
	return s.t
}

// write returns the tables for writing, making them on first use.
func (s *State) write() *tables {
	if s.t == nil {
		s.t = &tables{}
	}
	return s.t
}

type ongoingTxn struct {
	first int64
	pid   int64
}

// entry is the live form of Entry; batches[:n] are the retained batches,
// oldest first.
type entry struct {
	epoch      int16
	coordEpoch int32
	lastTs     int64
	txnFirst   int64 // -1: no ongoing transaction
	n          int
	batches    [BatchesRetained]BatchMetadata
}

func newEntry() *entry {
	return &entry{epoch: NoProducerEpoch, coordEpoch: -1, txnFirst: -1}
}

// put adds producer id. The map is made on first use: most partitions of
// a broker with many never see an idempotent producer.
func (s *State) put(id int64, e *entry) {
	t := s.write()
	if t.producers == nil {
		t.producers = map[int64]*entry{}
	}
	t.producers[id] = e
}

// NewState returns an empty state.
func NewState(opts Options) *State { return NewStateWith(&opts) }

// NewStateWith returns an empty state that reads opts, which the caller
// may share with other states and must not change after.
func NewStateWith(opts *Options) *State { return &State{opts: opts} }

// Check decides whether a data batch a client sent may be appended, with
// no verified transaction (see CheckVerified). It returns nil to append
// it, a *DuplicateError to acknowledge it without writing, or an error
// wrapping the Kafka error to answer with.
func (s *State) Check(h *log.BatchHeader) error { return s.check(h, false) }

// CheckVerified is Check for a batch whose transaction needs no
// verification guard: the coordinator added the partition itself
// (transaction version 2, Produce v12), or verification is off
// (transaction.partition.verification.enable=false). A batch verified
// with a verify-only AddPartitionsToTxn goes through CheckGuarded, which
// also refuses a verification a marker ended meanwhile. The checks, in
// Kafka's order:
//
//   - INVALID_RECORD: an idempotent batch (producer id >= 0) with a
//     negative base sequence, or a transactional batch without a producer
//     id.
//   - a *DuplicateError: the batch repeats one of the producer's last five
//     in the same epoch.
//   - INVALID_TXN_STATE: a transactional batch that neither continues the
//     producer's ongoing transaction on this partition (same epoch) nor
//     was verified: it could start a transaction the coordinator does
//     not know, which nothing would ever end.
//   - INVALID_PRODUCER_EPOCH: an epoch older than the producer's current
//     one (Kafka has answered produce with this, not PRODUCER_FENCED,
//     since 2.7).
//   - OUT_OF_ORDER_SEQUENCE_NUMBER: a newer epoch whose first sequence is
//     not 0, or a sequence that does not follow the producer's last one
//     (a gap, or a retry older than the retained batches).
//   - INVALID_TXN_STATE: a batch outside any transaction while the
//     producer has one ongoing.
//
// A producer the partition does not know (new, expired or never seen
// because its batches were deleted) is accepted at any sequence, as Kafka
// 4.x does; UNKNOWN_PRODUCER_ID is never returned. Batches without a
// producer id are always accepted. Check does not change the state: Apply
// does, once the batch is written.
func (s *State) CheckVerified(h *log.BatchHeader) error { return s.check(h, true) }

func (s *State) check(h *log.BatchHeader, verified bool) error {
	if h.ProducerID < 0 {
		if h.IsTransactional() {
			return fmt.Errorf("%w: transactional batch without a producer id", kerr.InvalidRecord)
		}
		return nil
	}
	if h.BaseSequence < 0 {
		return fmt.Errorf("%w: producer %d sent base sequence %d", kerr.InvalidRecord, h.ProducerID, h.BaseSequence)
	}
	e := s.read().producers[h.ProducerID]
	if e != nil && e.epoch == h.ProducerEpoch {
		if b, ok := e.find(h.BaseSequence, lastSequence(h)); ok {
			return &DuplicateError{ProducerID: h.ProducerID, Epoch: h.ProducerEpoch, Batch: b}
		}
	}
	inTxn := e != nil && e.txnFirst >= 0
	if h.IsTransactional() && !verified && !(inTxn && e.epoch == h.ProducerEpoch) {
		return fmt.Errorf("%w: transactional batch from producer %d epoch %d is not part of a transaction verified on this partition", kerr.InvalidTxnState, h.ProducerID, h.ProducerEpoch)
	}
	if err := checkSequence(e, h); err != nil {
		return err
	}
	if inTxn && !h.IsTransactional() {
		return fmt.Errorf("%w: producer %d sent a batch outside its transaction ongoing since offset %d", kerr.InvalidTxnState, h.ProducerID, e.txnFirst)
	}
	return nil
}

// checkSequence is Kafka's epoch and sequence check of an idempotent
// batch; e is nil for a producer the partition does not know.
func checkSequence(e *entry, h *log.BatchHeader) error {
	current := NoProducerEpoch
	if e != nil {
		current = e.epoch
	}
	if h.ProducerEpoch < current {
		return fmt.Errorf("%w: producer %d sent epoch %d, current epoch is %d", kerr.InvalidProducerEpoch, h.ProducerID, h.ProducerEpoch, current)
	}
	if h.ProducerEpoch != current {
		if h.BaseSequence != 0 && current != NoProducerEpoch {
			return fmt.Errorf("%w: producer %d started epoch %d at sequence %d, not 0", kerr.OutOfOrderSequenceNumber, h.ProducerID, h.ProducerEpoch, h.BaseSequence)
		}
		return nil
	}
	if current == NoProducerEpoch {
		return nil
	}
	last := NoSequence
	if e.n > 0 {
		last = e.batches[e.n-1].LastSeq
	}
	if !inSequence(last, h.BaseSequence) {
		return fmt.Errorf("%w: producer %d epoch %d sent sequence %d after %d", kerr.OutOfOrderSequenceNumber, h.ProducerID, h.ProducerEpoch, h.BaseSequence, last)
	}
	return nil
}

// CheckMarker decides whether the partition leader may write marker m for
// the producer of header h (WriteTxnMarkers), at the transaction version
// the coordinator runs (the request's TransactionVersion: 0 or 1 for the
// classic protocol, 2 for KIP-890's). It returns an error wrapping the
// Kafka error to answer with:
//
//   - INVALID_PRODUCER_EPOCH: the marker's epoch is older than the
//     producer's current one; at version 2, where the coordinator bumps
//     the epoch for every marker, also an epoch equal to the current one,
//     unless no transaction is ongoing (a retried marker that was already
//     written, which is written again).
//   - TRANSACTION_COORDINATOR_FENCED: the producer's last marker came from
//     a newer coordinator epoch.
//
// A marker for a producer without an ongoing transaction is accepted: it
// ends nothing (Apply reports no completed transaction).
func (s *State) CheckMarker(h *log.BatchHeader, m log.Marker, transactionVersion int16) error {
	if h.ProducerID < 0 {
		return fmt.Errorf("%w: marker without a producer id", kerr.InvalidRecord)
	}
	e := s.read().producers[h.ProducerID]
	if e == nil {
		e = newEntry()
	}
	current := e.epoch
	stale := h.ProducerEpoch < current
	if transactionVersion >= 2 {
		stale = h.ProducerEpoch <= current && !(h.ProducerEpoch == current && e.txnFirst < 0)
	}
	if stale {
		return fmt.Errorf("%w: marker for producer %d at epoch %d, current epoch %d (transaction version %d)", kerr.InvalidProducerEpoch, h.ProducerID, h.ProducerEpoch, current, transactionVersion)
	}
	if e.coordEpoch > m.CoordinatorEpoch {
		return fmt.Errorf("%w: marker for producer %d from coordinator epoch %d, current %d", kerr.TransactionCoordinatorFenced, h.ProducerID, m.CoordinatorEpoch, e.coordEpoch)
	}
	return nil
}

// Apply updates the state with a batch as written to the log (it
// implements log.ProducerState): its header must carry the offsets and
// timestamps the broker stamped, and m is a control batch's marker (nil
// for data batches). It applies the batch without validating it, so it
// serves after an append that a check accepted, for a follower's copies
// and when replaying the log. A newer or older epoch replaces the
// producer's epoch and forgets its retained batches. A transactional
// data batch starts the producer's transaction if none is ongoing; a
// marker ends it (returning it as completed when it had data here),
// and records the coordinator epoch.
func (s *State) Apply(h *log.BatchHeader, m *log.Marker) (log.CompletedTxn, bool) {
	if h.ProducerID < 0 {
		return log.CompletedTxn{}, false
	}
	e := s.read().producers[h.ProducerID]
	if e == nil {
		e = newEntry()
		s.put(h.ProducerID, e)
	}
	if e.epoch != h.ProducerEpoch {
		e.epoch = h.ProducerEpoch
		e.n = 0
	}
	e.lastTs = h.MaxTimestamp
	if h.IsControl() {
		s.endVerification(h.ProducerID)
		if m != nil {
			e.coordEpoch = m.CoordinatorEpoch
		}
		if e.txnFirst < 0 {
			return log.CompletedTxn{}, false
		}
		txn := log.CompletedTxn{ProducerID: h.ProducerID, FirstOffset: e.txnFirst, LastOffset: h.BaseOffset, Aborted: m != nil && m.Aborted()}
		s.endTxn(h.ProducerID, e)
		return txn, true
	}
	if e.n == BatchesRetained {
		copy(e.batches[:], e.batches[1:])
		e.n--
	}
	e.batches[e.n] = BatchMetadata{
		FirstSeq:    h.BaseSequence,
		LastSeq:     lastSequence(h),
		FirstOffset: h.BaseOffset,
		LastOffset:  h.LastOffset(),
		Timestamp:   h.MaxTimestamp,
	}
	e.n++
	if h.IsTransactional() && e.txnFirst < 0 {
		e.txnFirst = h.BaseOffset
		t := s.write()
		t.ongoing = append(t.ongoing, ongoingTxn{first: h.BaseOffset, pid: h.ProducerID})
	}
	return log.CompletedTxn{}, false
}

func (s *State) endTxn(pid int64, e *entry) {
	e.txnFirst = -1
	t := s.write()
	for i, o := range t.ongoing {
		if o.pid == pid {
			t.ongoing = slices.Delete(t.ongoing, i, i+1)
			return
		}
	}
}

// Record is Apply for a batch without its marker (a control batch then
// ends the producer's transaction without recording a coordinator epoch
// or an abort).
func (s *State) Record(h *log.BatchHeader) { s.Apply(h, nil) }

// FirstUnstableOffset is the first offset of the oldest ongoing
// transaction, -1 when none is ongoing.
func (s *State) FirstUnstableOffset() int64 {
	t := s.read()
	if len(t.ongoing) == 0 {
		return -1
	}
	return t.ongoing[0].first
}

// Guard has the signature of log.AppendOptions.Guard and runs Check.
func (s *State) Guard(info log.BatchInfo, _ int64) error { return s.Check(&info.BatchHeader) }

// VerifiedGuard has the signature of log.AppendOptions.Guard and runs
// CheckVerified.
func (s *State) VerifiedGuard(info log.BatchInfo, _ int64) error {
	return s.CheckVerified(&info.BatchHeader)
}

// CoordinatorGuard has the signature of log.AppendOptions.Guard, for a
// transactional batch a coordinator writes on a producer's behalf (the
// group coordinator's transactional offset commits). As Kafka checks an
// append of origin COORDINATOR, only the epoch is checked
// (INVALID_PRODUCER_EPOCH below the producer's current one): such a batch
// carries no sequence (base sequence -1, Kafka's NO_SEQUENCE), so neither
// sequences nor duplicates are checked, and the caller verified the
// transaction with its coordinator before writing.
func (s *State) CoordinatorGuard(info log.BatchInfo, _ int64) error {
	h := &info.BatchHeader
	if h.ProducerID < 0 || !h.IsTransactional() {
		return fmt.Errorf("%w: a coordinator's batch must be transactional with a producer id", kerr.InvalidRecord)
	}
	if e := s.read().producers[h.ProducerID]; e != nil && h.ProducerEpoch < e.epoch {
		return fmt.Errorf("%w: producer %d sent epoch %d, current epoch is %d", kerr.InvalidProducerEpoch, h.ProducerID, h.ProducerEpoch, e.epoch)
	}
	return nil
}

// MarkerGuard returns the log.AppendOptions.Guard of a marker append
// (log.AppendMarker) at a transaction version: CheckMarker.
func (s *State) MarkerGuard(transactionVersion int16) func(log.BatchInfo, int64) error {
	return func(info log.BatchInfo, _ int64) error {
		return s.CheckMarker(&info.BatchHeader, info.Marker, transactionVersion)
	}
}

// Appended has the signature of log.AppendOptions.Appended and runs
// Record. A log opened with the State as its Options.Producers applies
// every batch itself: do not pass Appended to it too.
func (s *State) Appended(info log.BatchInfo) { s.Apply(&info.BatchHeader, &info.Marker) }

// ExpireProducers forgets every producer whose latest batch timestamp is
// at least the expiration older than the clock and that has no ongoing
// transaction, as Kafka does, and returns how many it forgot. A forgotten
// producer is accepted again at any sequence.
func (s *State) ExpireProducers() int {
	now := s.now().UnixMilli()
	limit := s.expiration().Milliseconds()
	n := 0
	if s.t == nil {
		return 0
	}
	for id, e := range s.t.producers {
		if e.txnFirst < 0 && now-e.lastTs >= limit {
			delete(s.t.producers, id)
			n++
		}
	}
	s.expireVerifications(now, limit)
	return n
}

// Reset forgets every producer, as before a Rebuild.
func (s *State) Reset() {
	if t := s.t; t != nil {
		clear(t.producers)
		t.ongoing = t.ongoing[:0]
		clear(t.verifications)
	}
}

// Knows reports whether the partition knows producer pid at epoch. A
// leader that accepts a batch at a sequence other than 0 from a producer
// it does not know has lost (or never had) that producer's state: Kafka
// accepts it all the same, and the producer's ordering then rests on
// the client.
func (s *State) Knows(pid int64, epoch int16) bool {
	e := s.read().producers[pid]
	return e != nil && e.epoch == epoch
}

// Len is the number of producers the partition knows.
func (s *State) Len() int { return len(s.read().producers) }

// Entry returns a copy of one producer's state.
func (s *State) Entry(producerID int64) (Entry, bool) {
	e := s.read().producers[producerID]
	if e == nil {
		return Entry{}, false
	}
	return e.export(producerID), true
}

// Entries returns a copy of every producer's state, by producer id (for
// tests and snapshots).
func (s *State) Entries() []Entry {
	t := s.read()
	out := make([]Entry, 0, len(t.producers))
	for id, e := range t.producers {
		out = append(out, e.export(id))
	}
	slices.SortFunc(out, func(a, b Entry) int { return cmp.Compare(a.ProducerID, b.ProducerID) })
	return out
}

// Describe lists every producer as DescribeProducers answers it.
func (s *State) Describe() []log.ProducerInfo {
	entries := s.Entries()
	out := make([]log.ProducerInfo, len(entries))
	for i, e := range entries {
		out[i] = log.ProducerInfo{
			ProducerID:            e.ProducerID,
			ProducerEpoch:         e.Epoch,
			LastSequence:          e.LastSeq(),
			LastTimestamp:         e.LastTimestamp,
			CoordinatorEpoch:      e.CoordinatorEpoch,
			CurrentTxnStartOffset: e.TxnFirstOffset,
		}
	}
	return out
}

func (e *entry) export(id int64) Entry {
	return Entry{ProducerID: id, Epoch: e.epoch, LastTimestamp: e.lastTs, Batches: slices.Clone(e.batches[:e.n]), CoordinatorEpoch: e.coordEpoch, TxnFirstOffset: e.txnFirst}
}

// find returns the retained batch with exactly this sequence range. Two
// can match only when a producer expired and came back in the same epoch
// and the state was then rebuilt from the log; the newest is the one the
// live state would have answered with.
func (e *entry) find(first, last int32) (BatchMetadata, bool) {
	for i := e.n - 1; i >= 0; i-- {
		if b := e.batches[i]; b.FirstSeq == first && b.LastSeq == last {
			return b, true
		}
	}
	return BatchMetadata{}, false
}

// lastSequence is the sequence of a batch's last record. Sequences wrap
// from MaxInt32 to 0, and a batch carries one sequence per offset.
func lastSequence(h *log.BatchHeader) int32 {
	return addSequence(h.BaseSequence, h.LastOffsetDelta)
}

func addSequence(seq, delta int32) int32 {
	if seq < 0 {
		return NoSequence
	}
	if seq > math.MaxInt32-delta {
		return delta - (math.MaxInt32 - seq) - 1
	}
	return seq + delta
}

// inSequence reports whether next directly follows last. NoSequence is
// followed by 0.
func inSequence(last, next int32) bool {
	return int64(next) == int64(last)+1 || (next == 0 && last == math.MaxInt32)
}
