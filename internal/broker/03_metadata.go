package broker

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/server"
)

// Metadata v0-13. A null topic list (or an empty one at v0) asks for every
// topic; missing topics are auto-created when the request allows it (v4+,
// always before v4) and auto.create.topics.enable is on. Creation is
// synchronous, so a new topic is returned complete rather than with
// LEADER_NOT_AVAILABLE. Authorized operations are not computed (no ACLs):
// the field keeps its "not requested" default.
var _ = register(handler{key: 3, min: 0, max: 13, serve: (*Broker).handleMetadata})

func (b *Broker) handleMetadata(_ context.Context, req *server.Request) *server.Reply {
	r := req.Body.(*kmsg.MetadataRequest)
	resp := r.ResponseKind().(*kmsg.MetadataResponse)
	host, port := b.advertised()
	br := kmsg.NewMetadataResponseBroker()
	br.NodeID, br.Host, br.Port = b.cfg.NodeID, host, port
	if b.cfg.Rack != "" {
		br.Rack = &b.cfg.Rack
	}
	resp.Brokers = []kmsg.MetadataResponseBroker{br}
	resp.ClusterID = &b.clusterID
	resp.ControllerID = b.cfg.NodeID

	all := r.Topics == nil || (r.Version == 0 && len(r.Topics) == 0)
	if all {
		b.mu.RLock()
		for _, t := range b.topics {
			resp.Topics = append(resp.Topics, b.topicMetadata(t))
		}
		b.mu.RUnlock()
		return server.Ready(resp)
	}
	autoCreate := b.cfg.AutoCreateTopics && (r.Version < 4 || r.AllowAutoTopicCreation)
	for _, rt := range r.Topics {
		var t *topic
		switch {
		case rt.Topic != nil:
			t = b.lookupTopic(*rt.Topic)
			if t == nil && autoCreate {
				var err error
				t, err = b.autoCreate(*rt.Topic)
				if err != nil {
					mt := kmsg.NewMetadataResponseTopic()
					mt.Topic = rt.Topic
					mt.ErrorCode = errCode(err)
					resp.Topics = append(resp.Topics, mt)
					continue
				}
			}
		default:
			t = b.lookupTopicID(rt.TopicID)
		}
		if t == nil {
			mt := kmsg.NewMetadataResponseTopic()
			mt.Topic, mt.TopicID = rt.Topic, rt.TopicID
			mt.ErrorCode = kerr.UnknownTopicOrPartition.Code
			if rt.Topic == nil {
				mt.ErrorCode = kerr.UnknownTopicID.Code
			} else if err := validateTopicName(*rt.Topic); err != nil {
				mt.ErrorCode = kerr.InvalidTopicException.Code
			}
			resp.Topics = append(resp.Topics, mt)
			continue
		}
		b.mu.RLock()
		resp.Topics = append(resp.Topics, b.topicMetadata(t))
		b.mu.RUnlock()
	}
	return server.Ready(resp)
}

// autoCreate creates a topic with the broker defaults, tolerating a
// concurrent creation of the same topic.
func (b *Broker) autoCreate(name string) (*topic, error) {
	b.mu.Lock()
	if t, ok := b.topics[name]; ok {
		b.mu.Unlock()
		return t, nil
	}
	t, err := b.createTopicLocked(name, b.cfg.NumPartitions, nil, false)
	if errors.Is(err, kerr.TopicAlreadyExists) {
		t, err = b.topics[name], nil
	}
	b.mu.Unlock()
	if err == nil {
		b.groups.TopicsChanged()
	}
	return t, err
}

// topicMetadata describes t. Broker.mu is held for reading.
func (b *Broker) topicMetadata(t *topic) kmsg.MetadataResponseTopic {
	mt := kmsg.NewMetadataResponseTopic()
	name := t.name
	mt.Topic = &name
	mt.TopicID = t.id
	mt.IsInternal = t.internal
	for _, p := range t.partitions {
		mp := kmsg.NewMetadataResponseTopicPartition()
		mp.Partition = p.index
		mp.Leader = b.cfg.NodeID
		mp.LeaderEpoch = p.leaderEpoch.Load()
		mp.Replicas = []int32{b.cfg.NodeID}
		mp.ISR = []int32{b.cfg.NodeID}
		mt.Partitions = append(mt.Partitions, mp)
	}
	return mt
}
