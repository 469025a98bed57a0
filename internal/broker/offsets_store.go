package broker

import (
	"context"
	"fmt"
	"hash/fnv"

	"github.com/twmb/franz-go/pkg/kerr"

	"weir/internal/group"
	wlog "weir/internal/log"
)

// offsetsTopic holds the group coordinator's records, as in Kafka.
const offsetsTopic = "__consumer_offsets"

// offsetsStore backs the group coordinator's Store with the internal
// __consumer_offsets topic: each Append becomes one batch in the
// partition the group hashes to, so a group's records stay in order.
type offsetsStore struct {
	b *Broker
}

func (s *offsetsStore) partitions() []*partition {
	t := s.b.lookupTopic(offsetsTopic)
	if t == nil {
		return nil
	}
	s.b.mu.RLock()
	defer s.b.mu.RUnlock()
	return t.partitions
}

func (s *offsetsStore) Append(ctx context.Context, groupID string, recs []group.Record) error {
	parts := s.partitions()
	if len(parts) == 0 {
		return fmt.Errorf("broker: %s is missing", offsetsTopic)
	}
	p := parts[groupPartition(groupID, len(parts))]
	if !p.isLeader() {
		return fmt.Errorf("%w: group %s is coordinated by the leader of %s-%d", kerr.NotCoordinator, groupID, offsetsTopic, p.index)
	}
	var bb wlog.BatchBuilder
	now := s.b.now().UnixMilli()
	bb.Reset(now)
	for _, r := range recs {
		bb.Add(now, r.Key, r.Value, nil)
	}
	if bb.Len() == 0 {
		return nil
	}
	// Written as a producer with acks=all would: the answer waits until
	// every in-sync replica has the records.
	_, err := p.rep.AppendCommitted(ctx, bb.Build(), wlog.AppendOptions{})
	return err
}

// AppendTxn writes a producer's transactional offset commit as one
// transactional batch of that producer (implementing group.TxnStore), as
// Kafka's group coordinator does: base sequence -1, checked by the
// producer's epoch only (producer.State.CoordinatorGuard), pending until
// the transaction's marker.
func (s *offsetsStore) AppendTxn(ctx context.Context, groupID string, producerID int64, producerEpoch int16, recs []group.Record) error {
	parts := s.partitions()
	if len(parts) == 0 {
		return fmt.Errorf("broker: %s is missing", offsetsTopic)
	}
	p := parts[groupPartition(groupID, len(parts))]
	if !p.isLeader() {
		return fmt.Errorf("%w: group %s is coordinated by the leader of %s-%d", kerr.NotCoordinator, groupID, offsetsTopic, p.index)
	}
	var bb wlog.BatchBuilder
	now := s.b.now().UnixMilli()
	bb.Reset(now)
	for _, r := range recs {
		bb.Add(now, r.Key, r.Value, nil)
	}
	if bb.Len() == 0 {
		return nil
	}
	batch := bb.BuildTransactional(producerID, producerEpoch)
	_, err := p.rep.AppendCommitted(ctx, batch, wlog.AppendOptions{Guard: p.producers.CoordinatorGuard})
	return err
}

// groupPartition is the __consumer_offsets partition of a group.
func groupPartition(groupID string, n int) int {
	h := fnv.New32a()
	h.Write([]byte(groupID))
	return int(h.Sum32() % uint32(n))
}

// Replay reads the partitions this node leads: the groups it coordinates.
func (s *offsetsStore) Replay(ctx context.Context, fn func(group.Record) error) error {
	for _, p := range s.partitions() {
		if !p.isLeader() {
			continue
		}
		err := p.log.ScanBatchRecords(ctx, func(h *wlog.BatchHeader, r *wlog.Record) error {
			return fn(group.Record{Key: append([]byte(nil), r.Key...), Value: cloneNullable(r.Value),
				Transactional: h.IsTransactional(), Control: h.IsControl(), ProducerID: h.ProducerID, Partition: p.index})
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

// topicsView lets the group coordinator see the broker's topics.
type topicsView struct{ b *Broker }

func (v topicsView) info(t *topic) group.TopicInfo {
	return group.TopicInfo{Name: t.name, ID: t.id, Partitions: int32(len(t.partitions)), Internal: t.internal}
}

func (v topicsView) TopicByName(name string) (group.TopicInfo, bool) {
	v.b.mu.RLock()
	defer v.b.mu.RUnlock()
	t, ok := v.b.topics[name]
	if !ok {
		return group.TopicInfo{}, false
	}
	return v.info(t), true
}

func (v topicsView) TopicByID(id [16]byte) (group.TopicInfo, bool) {
	v.b.mu.RLock()
	defer v.b.mu.RUnlock()
	t, ok := v.b.topicsByID[id]
	if !ok {
		return group.TopicInfo{}, false
	}
	return v.info(t), true
}

func (v topicsView) EachTopic(fn func(group.TopicInfo) bool) {
	v.b.mu.RLock()
	infos := make([]group.TopicInfo, 0, len(v.b.topics))
	for _, t := range v.b.topics {
		infos = append(infos, v.info(t))
	}
	v.b.mu.RUnlock()
	for _, i := range infos {
		if !fn(i) {
			return
		}
	}
}
