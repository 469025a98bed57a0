package broker

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/server"
)

// CreatePartitions v0-3: grow a topic to Count partitions. Assignments, if
// given, must name this node only.
var _ = register(handler{key: 37, min: 0, max: 3, serve: (*Broker).handleCreatePartitions})

func (b *Broker) handleCreatePartitions(_ context.Context, req *server.Request) *server.Reply {
	r := req.Body.(*kmsg.CreatePartitionsRequest)
	resp := r.ResponseKind().(*kmsg.CreatePartitionsResponse)
	for _, rt := range r.Topics {
		res := kmsg.NewCreatePartitionsResponseTopic()
		res.Topic = rt.Topic
		if err := b.createPartitions(&rt, r.ValidateOnly); err != nil {
			res.ErrorCode = errCode(err)
			res.ErrorMessage = errMessage(err)
		}
		resp.Topics = append(resp.Topics, res)
	}
	if !r.ValidateOnly {
		b.groups.TopicsChanged()
	}
	return server.Ready(resp)
}

func (b *Broker) createPartitions(rt *kmsg.CreatePartitionsRequestTopic, validateOnly bool) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	t, ok := b.topics[rt.Topic]
	if !ok {
		return kerr.UnknownTopicOrPartition
	}
	if t.internal {
		return fmt.Errorf("%w: internal topic %s cannot grow", kerr.InvalidTopicException, t.name)
	}
	have := int32(len(t.partitions))
	if rt.Count <= have {
		return fmt.Errorf("%w: topic has %d partitions, cannot change to %d", kerr.InvalidPartitions, have, rt.Count)
	}
	if err := b.checkPartitionCount(rt.Count); err != nil {
		return err
	}
	if rt.Assignment != nil && int32(len(rt.Assignment)) != rt.Count-have {
		return fmt.Errorf("%w: %d assignments for %d new partitions", kerr.InvalidReplicaAssignment, len(rt.Assignment), rt.Count-have)
	}
	for _, a := range rt.Assignment {
		if len(a.Replicas) != 1 || a.Replicas[0] != b.cfg.NodeID {
			return fmt.Errorf("%w: replicas must be [%d] on this single node", kerr.InvalidReplicaAssignment, b.cfg.NodeID)
		}
	}
	if validateOnly {
		return nil
	}
	cfg, err := b.topicLogConfig(t.configs)
	if err != nil {
		return err
	}
	parts := append([]*partition(nil), t.partitions...)
	for i := have; i < rt.Count; i++ {
		p, err := b.openPartition(t, i, cfg)
		if err != nil {
			return fmt.Errorf("%w: %v", kerr.KafkaStorageError, err)
		}
		parts = append(parts, p)
	}
	t.partitions = parts
	if err := b.saveMetaLocked(); err != nil {
		return fmt.Errorf("%w: %v", kerr.KafkaStorageError, err)
	}
	b.logger.Info("partitions added", "topic", t.name, "partitions", rt.Count)
	return nil
}
