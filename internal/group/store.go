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
// each group. It is called once, before the coordinator serves requests.
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

// Compact keeps only the latest record of every key and drops tombstones,
// as a compacted log eventually does. Survivors keep their relative order.
func (s *MemStore) Compact() {
	s.mu.Lock()
	defer s.mu.Unlock()
	last := make(map[string]int, len(s.recs))
	for i, r := range s.recs {
		last[string(r.Key)] = i
	}
	kept := s.recs[:0:0]
	for i, r := range s.recs {
		if last[string(r.Key)] == i && r.Value != nil {
			kept = append(kept, r)
		}
	}
	s.recs = kept
}
