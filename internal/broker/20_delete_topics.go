package broker

import (
	"context"
	"fmt"
	"os"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/server"
)

// DeleteTopics v1-6 (v6 names topics by name or id). The partition
// directories are removed once their logs are closed. Internal topics
// cannot be deleted.
var _ = register(handler{key: 20, min: 1, max: 6, serve: (*Broker).handleDeleteTopics})

func (b *Broker) handleDeleteTopics(_ context.Context, req *server.Request) *server.Reply {
	r := req.Body.(*kmsg.DeleteTopicsRequest)
	resp := r.ResponseKind().(*kmsg.DeleteTopicsResponse)
	type target struct {
		name *string
		id   [16]byte
	}
	var targets []target
	if r.Version >= 6 {
		for _, t := range r.Topics {
			targets = append(targets, target{t.Topic, t.TopicID})
		}
	} else {
		for _, n := range r.TopicNames {
			targets = append(targets, target{name: &n})
		}
	}
	for _, tg := range targets {
		st := kmsg.NewDeleteTopicsResponseTopic()
		st.Topic, st.TopicID = tg.name, tg.id
		var t *topic
		if tg.name != nil {
			t = b.lookupTopic(*tg.name)
		} else {
			t = b.lookupTopicID(tg.id)
		}
		var err error
		switch {
		case t == nil && tg.name == nil:
			err = kerr.UnknownTopicID
		case t == nil:
			err = kerr.UnknownTopicOrPartition
		default:
			name := t.name
			st.Topic, st.TopicID = &name, t.id
			err = b.deleteTopic(t)
		}
		if err != nil {
			st.ErrorCode = errCode(err)
			st.ErrorMessage = errMessage(err)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return server.Ready(resp)
}

func (b *Broker) deleteTopic(t *topic) error {
	if t.internal {
		return fmt.Errorf("%w: internal topic %s cannot be deleted", kerr.InvalidTopicException, t.name)
	}
	b.mu.Lock()
	if b.topics[t.name] != t {
		b.mu.Unlock()
		return kerr.UnknownTopicOrPartition
	}
	delete(b.topics, t.name)
	delete(b.topicsByID, t.id)
	err := b.saveMetaLocked()
	parts := t.partitions
	b.mu.Unlock()
	if err != nil {
		return fmt.Errorf("%w: %v", kerr.KafkaStorageError, err)
	}
	for _, p := range parts {
		p.log.Close()
		p.advanced(p.highWatermark()) // wake parked fetches so they see the topic gone
		if err := os.RemoveAll(p.log.Dir()); err != nil {
			b.logger.Warn("could not remove partition directory", "topic", t.name, "partition", p.index, "err", err)
		}
	}
	b.groups.TopicsChanged()
	b.logger.Info("topic deleted", "topic", t.name)
	return nil
}
