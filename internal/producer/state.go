package producer

import (
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

// Options configure a State.
type Options struct {
	// Expiration is producer.id.expiration.ms; zero means
	// DefaultExpiration.
	Expiration time.Duration
	// Now is the clock used by ExpireProducers; nil means time.Now.
	Now func() time.Time
}

// State is the idempotent-producer state of one partition. It has no lock:
// its owner serialises every call with the partition's appends (see the
// package documentation).
type State struct {
	expiration time.Duration
	now        func() time.Time
	producers  map[int64]*entry
}

// entry is the live form of Entry; batches[:n] are the retained batches,
// oldest first.
type entry struct {
	epoch   int16
	lastTs  int64
	n       int
	batches [BatchesRetained]BatchMetadata
}

// NewState returns an empty state.
func NewState(opts Options) *State {
	s := &State{expiration: opts.Expiration, now: opts.Now, producers: make(map[int64]*entry)}
	if s.expiration <= 0 {
		s.expiration = DefaultExpiration
	}
	if s.now == nil {
		s.now = time.Now
	}
	return s
}

// Check decides whether a data batch a client sent may be appended. It
// returns nil to append it, a *DuplicateError to acknowledge it without
// writing, or an error wrapping the Kafka error to answer with:
//
//   - INVALID_RECORD: an idempotent batch (producer id >= 0) with a
//     negative base sequence.
//   - INVALID_TXN_STATE: a transactional batch. Kafka answers this for a
//     transactional batch on a partition that is not in an ongoing,
//     verified transaction; without transaction support no partition ever
//     is.
//   - INVALID_PRODUCER_EPOCH: an epoch older than the producer's current
//     one (Kafka has answered produce with this, not PRODUCER_FENCED,
//     since 2.7).
//   - OUT_OF_ORDER_SEQUENCE_NUMBER: a newer epoch whose first sequence is
//     not 0, or a sequence that does not follow the producer's last one
//     (a gap, or a retry older than the retained batches).
//
// A producer the partition does not know (new, expired or never seen
// because its batches were deleted) is accepted at any sequence, as Kafka
// 4.x does for non-transactional producers; UNKNOWN_PRODUCER_ID is never
// returned. Batches without a producer id are always accepted. Check does
// not change the state: Record does, once the batch is written.
func (s *State) Check(h *log.BatchHeader) error {
	if h.ProducerID < 0 {
		return nil
	}
	if h.BaseSequence < 0 {
		return fmt.Errorf("%w: producer %d sent base sequence %d", kerr.InvalidRecord, h.ProducerID, h.BaseSequence)
	}
	e := s.producers[h.ProducerID]
	if e != nil && e.epoch == h.ProducerEpoch {
		if b, ok := e.find(h.BaseSequence, lastSequence(h)); ok {
			return &DuplicateError{ProducerID: h.ProducerID, Epoch: h.ProducerEpoch, Batch: b}
		}
	}
	if h.IsTransactional() {
		return fmt.Errorf("%w: transactional batch from producer %d, but no transaction is ongoing on this partition", kerr.InvalidTxnState, h.ProducerID)
	}
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

// Record updates the state with a batch as written to the log: its header
// must carry the offsets and timestamps the broker stamped. It applies the
// batch without validating it, so it serves both after an append that
// Check accepted and when replaying the log (see Rebuild); a follower
// records the batches it copies from its leader the same way. A newer or
// older epoch replaces the producer's epoch and forgets its retained
// batches. Control batches update the epoch and timestamp only.
func (s *State) Record(h *log.BatchHeader) {
	if h.ProducerID < 0 {
		return
	}
	e := s.producers[h.ProducerID]
	if e == nil {
		e = &entry{epoch: NoProducerEpoch}
		s.producers[h.ProducerID] = e
	}
	if e.epoch != h.ProducerEpoch {
		e.epoch = h.ProducerEpoch
		e.n = 0
	}
	e.lastTs = h.MaxTimestamp
	if h.IsControl() {
		return
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
}

// Guard has the signature of log.AppendOptions.Guard and runs Check.
func (s *State) Guard(info log.BatchInfo, _ int64) error { return s.Check(&info.BatchHeader) }

// Appended has the signature of log.AppendOptions.Appended and runs
// Record.
func (s *State) Appended(info log.BatchInfo) { s.Record(&info.BatchHeader) }

// ExpireProducers forgets every producer whose latest batch timestamp is
// at least the expiration older than the clock, and returns how many it
// forgot. A forgotten producer is accepted again at any sequence.
func (s *State) ExpireProducers() int {
	now := s.now().UnixMilli()
	limit := s.expiration.Milliseconds()
	n := 0
	for id, e := range s.producers {
		if now-e.lastTs >= limit {
			delete(s.producers, id)
			n++
		}
	}
	return n
}

// Reset forgets every producer, as before a Rebuild.
func (s *State) Reset() { clear(s.producers) }

// Len is the number of producers the partition knows.
func (s *State) Len() int { return len(s.producers) }

// Entry returns a copy of one producer's state.
func (s *State) Entry(producerID int64) (Entry, bool) {
	e := s.producers[producerID]
	if e == nil {
		return Entry{}, false
	}
	return e.export(producerID), true
}

// Entries returns a copy of every producer's state, by producer id (for
// DescribeProducers and for tests).
func (s *State) Entries() []Entry {
	out := make([]Entry, 0, len(s.producers))
	for id, e := range s.producers {
		out = append(out, e.export(id))
	}
	slices.SortFunc(out, func(a, b Entry) int {
		switch {
		case a.ProducerID < b.ProducerID:
			return -1
		case a.ProducerID > b.ProducerID:
			return 1
		}
		return 0
	})
	return out
}

func (e *entry) export(id int64) Entry {
	return Entry{ProducerID: id, Epoch: e.epoch, LastTimestamp: e.lastTs, Batches: slices.Clone(e.batches[:e.n])}
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
