package group

import (
	"context"
	"fmt"
	"hash/fnv"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	wlog "weir/internal/log"
)

// OffsetsTopic holds the group coordinator's records, as in Kafka.
const OffsetsTopic = "__consumer_offsets"

// PartitionFor is the partition, of n, of __consumer_offsets that a
// group's records go to: its leader is the group's coordinator.
func PartitionFor(group string, n int) int {
	h := fnv.New32a()
	h.Write([]byte(group))
	return int(h.Sum32() % uint32(n))
}

// LogPartition is one partition of __consumer_offsets as LogStore needs
// it.
type LogPartition interface {
	Index() int32
	// Leading reports whether this node leads the partition.
	Leading() bool
	// AppendCommitted appends a batch as leader and waits until it is
	// committed (replica.Replica.AppendCommitted); coordinator marks a
	// batch of a transaction's offsets, checked by the producer's epoch
	// only, as Kafka checks its coordinator's writes.
	AppendCommitted(ctx context.Context, batch []byte, coordinator bool) error
	Log() *wlog.Log
}

// LogStore is the Store (and TxnStore) over the __consumer_offsets
// partitions: each Append is one batch in the partition the group hashes
// to, so a group's records stay in order, written as a producer with
// acks=all would; Replay reads the partitions this node leads, the
// groups it coordinates.
type LogStore struct {
	// Partitions are the topic's partitions in order, none while it does
	// not exist.
	Partitions func() []LogPartition
	Now        func() time.Time
}

// leading is the partition of a group, if this node leads it.
func (s LogStore) leading(group string) (LogPartition, error) {
	parts := s.Partitions()
	if len(parts) == 0 {
		return nil, fmt.Errorf("%w: %s is missing", kerr.CoordinatorNotAvailable, OffsetsTopic)
	}
	p := parts[PartitionFor(group, len(parts))]
	if !p.Leading() {
		return nil, fmt.Errorf("%w: group %s is coordinated by the leader of %s-%d", kerr.NotCoordinator, group, OffsetsTopic, p.Index())
	}
	return p, nil
}

func (s LogStore) batch(recs []Record) *wlog.BatchBuilder {
	var bb wlog.BatchBuilder
	now := s.Now().UnixMilli()
	bb.Reset(now)
	for _, r := range recs {
		bb.Add(now, r.Key, r.Value, nil)
	}
	return &bb
}

// Append writes recs of a group as one batch and waits until it is
// committed.
func (s LogStore) Append(ctx context.Context, group string, recs []Record) error {
	p, err := s.leading(group)
	if err != nil {
		return err
	}
	bb := s.batch(recs)
	if bb.Len() == 0 {
		return nil
	}
	return p.AppendCommitted(ctx, bb.Build(), false)
}

// AppendTxn writes a producer's transactional offset commit as one
// transactional batch of that producer, as Kafka's group coordinator
// does: base sequence -1, checked by the producer's epoch only, pending
// until the transaction's marker.
func (s LogStore) AppendTxn(ctx context.Context, group string, producerID int64, producerEpoch int16, recs []Record) error {
	p, err := s.leading(group)
	if err != nil {
		return err
	}
	bb := s.batch(recs)
	if bb.Len() == 0 {
		return nil
	}
	return p.AppendCommitted(ctx, bb.BuildTransactional(producerID, producerEpoch), true)
}

// Replay reads the partitions this node leads, in offset order.
func (s LogStore) Replay(ctx context.Context, fn func(Record) error) error {
	for _, p := range s.Partitions() {
		if !p.Leading() {
			continue
		}
		index := p.Index()
		err := p.Log().ScanBatchRecords(ctx, func(h *wlog.BatchHeader, r *wlog.Record) error {
			return fn(Record{Key: append([]byte(nil), r.Key...), Value: cloneNullable(r.Value),
				Transactional: h.IsTransactional(), Control: h.IsControl(), ProducerID: h.ProducerID, Partition: index})
		})
		if err != nil {
			return err
		}
	}
	return nil
}

func cloneNullable(b []byte) []byte {
	if b == nil {
		return nil
	}
	return append([]byte{}, b...)
}
