package group

import (
	"bytes"
	"context"
	"sync"
)

// Record is one opaque key/value pair of the coordinator's durable state. A
// nil Value is a tombstone: the key is deleted. Only the latest value of a
// key matters, so a store may compact its log by key.
type Record struct {
	Key   []byte
	Value []byte

	// The fields below are set by Replay from the batch a record was read
	// from (Append and AppendTxn ignore them). Transactional marks a
	// record of a transactional batch of producer ProducerID: a
	// transactional offset commit, pending until the producer's marker
	// follows in the same partition. Control marks a control record (a
	// transaction marker: Key and Value are the control record's), read
	// from __consumer_offsets partition Partition.
	Transactional bool
	Control       bool
	ProducerID    int64
	Partition     int32
}

// Store persists the coordinator's records. The broker backs it with its
// internal __consumer_offsets topic; MemStore backs it in tests.
//
// Append must make the records durable, in order, before it returns nil;
// the coordinator answers a client only after that. All records of one call
// belong to the named group, so a store that spreads groups over several
// partitions (as Kafka hashes group ids over __consumer_offsets partitions)
// can route a call by group and keep each group's records in order.
//
// Replay calls fn for every record appended so far, in append order within
// each group, control records (transaction markers) included, with the
// batch fields of Record set. It is called once, before the coordinator
// serves requests.
type Store interface {
	Append(ctx context.Context, group string, recs []Record) error
	Replay(ctx context.Context, fn func(Record) error) error
}

// MemStore is an in-memory Store. It is safe for concurrent use.
type MemStore struct {
	mu      sync.Mutex
	recs    []Record
	failErr error
}

// NewMemStore returns an empty MemStore.
func NewMemStore() *MemStore { return &MemStore{} }

// Append stores copies of recs, or returns the error set by FailAppends.
func (s *MemStore) Append(_ context.Context, _ string, recs []Record) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failErr != nil {
		return s.failErr
	}
	for _, r := range recs {
		c := Record{Key: bytes.Clone(r.Key)}
		if r.Value != nil {
			c.Value = bytes.Clone(r.Value)
		}
		s.recs = append(s.recs, c)
	}
	return nil
}

// AppendTxn stores copies of recs as a transactional batch of the
// producer, or returns the error set by FailAppends.
func (s *MemStore) AppendTxn(_ context.Context, _ string, producerID int64, _ int16, recs []Record) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failErr != nil {
		return s.failErr
	}
	for _, r := range recs {
		c := Record{Key: bytes.Clone(r.Key), Transactional: true, ProducerID: producerID}
		if r.Value != nil {
			c.Value = bytes.Clone(r.Value)
		}
		s.recs = append(s.recs, c)
	}
	return nil
}

// AppendMarker stores a transaction marker of the producer, as the broker
// writes one to __consumer_offsets partition partition.
func (s *MemStore) AppendMarker(partition int32, producerID int64, commit bool) {
	key := []byte{0, 0, 0, byte(controlAbort)}
	if commit {
		key[3] = byte(controlCommit)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.recs = append(s.recs, Record{Key: key, Value: []byte{0, 0, 0, 0, 0, 0}, Transactional: true, Control: true,
		ProducerID: producerID, Partition: partition})
}

// Replay calls fn for every stored record in append order.
func (s *MemStore) Replay(ctx context.Context, fn func(Record) error) error {
	s.mu.Lock()
	recs := append([]Record(nil), s.recs...)
	s.mu.Unlock()
	for _, r := range recs {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := fn(r); err != nil {
			return err
		}
	}
	return nil
}

// FailAppends makes every later Append return err, until called with nil.
func (s *MemStore) FailAppends(err error) {
	s.mu.Lock()
	s.failErr = err
	s.mu.Unlock()
}

// Len returns the number of records stored.
func (s *MemStore) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.recs)
}

// Records returns a copy of the stored records.
func (s *MemStore) Records() []Record {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Record(nil), s.recs...)
}

// Compact does what Kafka's log cleaner does to a compacted topic with
// transactions: below the first record of a transaction still open, it
// drops aborted transactional records, then keeps only the latest record
// of every key and no tombstone (transaction markers stay). Survivors keep
// their relative order; the open tail is left as is.
func (s *MemStore) Compact() {
	s.mu.Lock()
	defer s.mu.Unlock()
	// The outcome of each transactional record: the producer's next marker.
	const open, committed, aborted = 0, 1, 2
	outcome := make([]int, len(s.recs))
	end := len(s.recs)
	for i, r := range s.recs {
		if !r.Transactional || r.Control {
			continue
		}
		for _, m := range s.recs[i+1:] {
			if m.Control && m.ProducerID == r.ProducerID {
				outcome[i] = aborted
				if commit, _ := markerOutcome(m.Key); commit {
					outcome[i] = committed
				}
				break
			}
		}
		if outcome[i] == open && i < end {
			end = i
		}
	}
	last := make(map[string]int, end)
	for i, r := range s.recs[:end] {
		if !r.Control && outcome[i] != aborted {
			last[string(r.Key)] = i
		}
	}
	kept := s.recs[:0:0]
	for i, r := range s.recs[:end] {
		if r.Control || (outcome[i] != aborted && last[string(r.Key)] == i && r.Value != nil) {
			kept = append(kept, r)
		}
	}
	s.recs = append(kept, s.recs[end:]...)
}
