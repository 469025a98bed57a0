package broker

import (
	"context"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/server"
	"weir/internal/share"
)

// FindCoordinator v0-6 (v4+ batches keys). A group (key type 0) is
// coordinated by the leader of its __consumer_offsets partition, as in
// Kafka; share groups use the same key type. A transactional id (key type
// 1) is coordinated by the leader of its __transaction_state partition
// (Kafka's hash of the id), the topic created on first use. Share keys (type 2,
// "group:topicId:partition", which locate a share partition's state) are
// answered with the leader of that partition: each node keeps the state
// of the share partitions it leads.
var _ = register(handler{key: 10, min: 0, max: 6, serve: (*Broker).handleFindCoordinator})

func (b *Broker) handleFindCoordinator(_ context.Context, req *server.Request) *server.Reply {
	r := req.Body.(*kmsg.FindCoordinatorRequest)
	resp := r.ResponseKind().(*kmsg.FindCoordinatorResponse)
	answer := func(keyType int8, key string) (int32, string, int32, int16, *string) {
		var node int32 = -1
		switch keyType {
		case 0:
			p, ok := b.coordinatorPartition(key)
			if ok {
				node = p.leader()
			} else {
				b.ensureOffsetsTopicAsync()
			}
		case 2:
			// The leader of the partition keeps its share state; for a
			// partition it does not know, the group's coordinator answers.
			if node = b.shareKeyLeader(key); node < 0 {
				if i := strings.IndexByte(key, ':'); i > 0 {
					if p, ok := b.coordinatorPartition(key[:i]); ok {
						node = p.leader()
					}
				}
			}
		case 1:
			if key == "" {
				msg := "a transactional id must not be empty"
				return -1, "", -1, kerr.InvalidRequest.Code, &msg
			}
			node = b.txnCoordinatorNode(key)
		default:
			msg := "no coordinator of this key type on this broker"
			return -1, "", -1, kerr.CoordinatorNotAvailable.Code, &msg
		}
		if node < 0 {
			msg := "the coordinator is not available yet"
			return -1, "", -1, kerr.CoordinatorNotAvailable.Code, &msg
		}
		host, port, ok := b.endpointOf(node, req.Conn.Listener)
		if !ok {
			msg := "the coordinator's broker is not registered"
			return -1, "", -1, kerr.CoordinatorNotAvailable.Code, &msg
		}
		return node, host, port, 0, nil
	}
	if r.Version < 4 {
		resp.NodeID, resp.Host, resp.Port, resp.ErrorCode, resp.ErrorMessage = answer(r.CoordinatorType, r.CoordinatorKey)
		return server.Ready(resp)
	}
	for _, key := range r.CoordinatorKeys {
		c := kmsg.NewFindCoordinatorResponseCoordinator()
		c.Key = key
		c.NodeID, c.Host, c.Port, c.ErrorCode, c.ErrorMessage = answer(r.CoordinatorType, key)
		resp.Coordinators = append(resp.Coordinators, c)
	}
	return server.Ready(resp)
}

// endpointOf returns a registered, unfenced broker's address on a
// listener.
func (b *Broker) endpointOf(node int32, listener string) (string, int32, bool) {
	br, ok := b.image().Broker(node)
	if !ok || br.Fenced {
		return "", 0, false
	}
	mb, ok := b.endpointFor(br, listener)
	return mb.Host, mb.Port, ok
}

// shareKeyLeader finds the leader of the partition a share key
// ("group:topicId:partition") names, or -1.
func (b *Broker) shareKeyLeader(key string) int32 {
	k, err := share.ParseCoordinatorKey(key)
	if err != nil {
		return -1
	}
	s, ok := b.image().Partition(k.TopicID, k.Partition)
	if !ok {
		return -1
	}
	return s.Leader()
}
