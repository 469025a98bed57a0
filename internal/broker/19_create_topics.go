package broker

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/server"
)

// CreateTopics v2-7. A single node holds one replica of everything, so a
// replication factor other than 1 (or -1, the default) is refused with
// INVALID_REPLICATION_FACTOR, and manual replica assignments must name
// this node only. TimeoutMillis is unused: creation is synchronous.
var _ = register(handler{key: 19, min: 2, max: 7, serve: (*Broker).handleCreateTopics})

func (b *Broker) handleCreateTopics(_ context.Context, req *server.Request) *server.Reply {
	r := req.Body.(*kmsg.CreateTopicsRequest)
	resp := r.ResponseKind().(*kmsg.CreateTopicsResponse)
	seen := map[string]int{}
	for _, rt := range r.Topics {
		seen[rt.Topic]++
	}
	for _, rt := range r.Topics {
		st := kmsg.NewCreateTopicsResponseTopic()
		st.Topic = rt.Topic
		st.NumPartitions, st.ReplicationFactor = -1, -1
		err := b.createTopic(&rt, r.ValidateOnly, seen[rt.Topic] > 1, &st)
		if err != nil {
			st.ErrorCode = errCode(err)
			st.ErrorMessage = errMessage(err)
		}
		resp.Topics = append(resp.Topics, st)
	}
	if !r.ValidateOnly {
		b.groups.TopicsChanged()
	}
	return server.Ready(resp)
}

func (b *Broker) createTopic(rt *kmsg.CreateTopicsRequestTopic, validateOnly, duplicated bool, st *kmsg.CreateTopicsResponseTopic) error {
	if duplicated {
		return fmt.Errorf("%w: topic %q appears more than once in the request", kerr.InvalidRequest, rt.Topic)
	}
	n := rt.NumPartitions
	if len(rt.ReplicaAssignment) > 0 {
		if n != -1 || rt.ReplicationFactor != -1 {
			return fmt.Errorf("%w: both a replica assignment and a partition count or replication factor were given", kerr.InvalidRequest)
		}
		for _, a := range rt.ReplicaAssignment {
			if len(a.Replicas) != 1 || a.Replicas[0] != b.cfg.NodeID {
				return fmt.Errorf("%w: replicas must be [%d] on this single node", kerr.InvalidReplicaAssignment, b.cfg.NodeID)
			}
		}
		n = int32(len(rt.ReplicaAssignment))
	}
	if n == -1 {
		n = b.cfg.NumPartitions
	}
	if rt.ReplicationFactor != -1 && rt.ReplicationFactor != 1 {
		return fmt.Errorf("%w: replication factor %d is larger than the 1 available broker", kerr.InvalidReplicationFactor, rt.ReplicationFactor)
	}
	configs, cerr := b.settings().CreateTopicOverrides(rt.Configs)
	if cerr != nil {
		return configError(cerr)
	}
	if len(configs) == 0 {
		configs = nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if validateOnly {
		if err := validateTopicName(rt.Topic); err != nil {
			return err
		}
		if _, ok := b.topics[rt.Topic]; ok {
			return fmt.Errorf("%w: topic %q already exists", kerr.TopicAlreadyExists, rt.Topic)
		}
		if err := b.checkPartitionCount(n); err != nil {
			return err
		}
	} else {
		t, err := b.createTopicLocked(rt.Topic, n, configs, false)
		if err != nil {
			return err
		}
		st.TopicID = t.id
	}
	st.NumPartitions, st.ReplicationFactor = n, 1
	st.Configs = b.describeTopicConfigsForCreate(configs)
	return nil
}
