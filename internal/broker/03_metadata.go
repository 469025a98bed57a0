package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/metadata"
	"weir/internal/server"
)

// Metadata v0-13, answered from this node's metadata image: every
// registered broker that is not fenced, each partition's leader, replicas,
// ISR and offline replicas. A null topic list (or an empty one at v0)
// asks for every topic; missing topics are auto-created through the
// controller when the request allows it (v4+, always before v4) and
// auto.create.topics.enable is on. The handler waits (bounded) until the
// new topic reached this node's image, so it is usually returned complete
// rather than with LEADER_NOT_AVAILABLE. Authorized operations are not
// computed (no ACLs): the field keeps its "not requested" default.
var _ = register(handler{key: 3, min: 0, max: 13, serve: (*Broker).handleMetadata})

func (b *Broker) handleMetadata(ctx context.Context, req *server.Request) *server.Reply {
	r := req.Body.(*kmsg.MetadataRequest)
	all := r.Topics == nil || (r.Version == 0 && len(r.Topics) == 0)
	autoCreate := b.cfg.AutoCreateTopics && (r.Version < 4 || r.AllowAutoTopicCreation)
	if !all && autoCreate {
		var missing []string
		for _, rt := range r.Topics {
			if rt.Topic != nil && b.lookupTopic(*rt.Topic) == nil && validateTopicName(*rt.Topic) == nil {
				missing = append(missing, *rt.Topic)
			}
		}
		if len(missing) > 0 {
			return b.async(ctx, func(ctx context.Context) kmsg.Response {
				errs := b.autoCreate(ctx, missing)
				return b.metadataResponse(r, req.Conn.Listener, errs)
			})
		}
	}
	return server.Ready(b.metadataResponse(r, req.Conn.Listener, nil))
}

// metadataResponse answers with the brokers' endpoints on listener, the
// one the request came in on.
func (b *Broker) metadataResponse(r *kmsg.MetadataRequest, listener string, createErrs map[string]int16) *kmsg.MetadataResponse {
	resp := r.ResponseKind().(*kmsg.MetadataResponse)
	img := b.image()
	resp.ClusterID = &b.clusterID
	resp.ControllerID = controllerForClients(img, b.node.Leader(), b.cfg.NodeID)
	for _, br := range img.Brokers() {
		if br.Fenced {
			continue
		}
		if mb, ok := b.endpointFor(br, listener); ok {
			resp.Brokers = append(resp.Brokers, mb)
		}
	}
	if r.Topics == nil || (r.Version == 0 && len(r.Topics) == 0) {
		img.EachTopic(func(t *metadata.Topic) bool {
			resp.Topics = append(resp.Topics, topicMetadata(img, t))
			return true
		})
		return resp
	}
	for _, rt := range r.Topics {
		var t *metadata.Topic
		var ok bool
		if rt.Topic != nil {
			t, ok = img.TopicByName(*rt.Topic)
		} else {
			t, ok = img.Topic(rt.TopicID)
		}
		if !ok {
			mt := kmsg.NewMetadataResponseTopic()
			mt.Topic, mt.TopicID = rt.Topic, rt.TopicID
			mt.ErrorCode = kerr.UnknownTopicOrPartition.Code
			switch {
			case rt.Topic == nil:
				mt.ErrorCode = kerr.UnknownTopicID.Code
			case validateTopicName(*rt.Topic) != nil:
				mt.ErrorCode = kerr.InvalidTopicException.Code
			case createErrs[*rt.Topic] != 0:
				mt.ErrorCode = createErrs[*rt.Topic]
			}
			resp.Topics = append(resp.Topics, mt)
			continue
		}
		resp.Topics = append(resp.Topics, topicMetadata(img, t))
	}
	return resp
}

// autoCreate creates missing topics with the broker defaults through the
// controller and waits until they are in this node's registry. It
// returns the error code of each topic that could not be created (an
// existing topic is not an error).
func (b *Broker) autoCreate(ctx context.Context, names []string) map[string]int16 {
	req := kmsg.NewPtrCreateTopicsRequest()
	for _, n := range names {
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = n, -1, -1
		req.Topics = append(req.Topics, rt)
	}
	req.TimeoutMillis = 10000
	errs := map[string]int16{}
	resp, err := b.admin(ctx, req, func(res kmsg.Response) func() bool {
		// Wait only for the topics that exist now: one the controller
		// refused never appears.
		var made []string
		for _, st := range res.(*kmsg.CreateTopicsResponse).Topics {
			if st.ErrorCode == 0 || st.ErrorCode == kerr.TopicAlreadyExists.Code {
				made = append(made, st.Topic)
			}
		}
		return func() bool {
			for _, n := range made {
				if b.lookupTopic(n) == nil {
					return false
				}
			}
			return true
		}
	})
	if err != nil {
		for _, n := range names {
			errs[n] = kerr.LeaderNotAvailable.Code
		}
		return errs
	}
	for _, st := range resp.(*kmsg.CreateTopicsResponse).Topics {
		switch {
		case st.ErrorCode == kerr.InvalidReplicationFactor.Code:
			// Not enough brokers registered yet (a cluster starting):
			// the client retries, as it does for a topic being created.
			errs[st.Topic] = kerr.LeaderNotAvailable.Code
		case st.ErrorCode != 0 && st.ErrorCode != kerr.TopicAlreadyExists.Code:
			errs[st.Topic] = st.ErrorCode
		case b.lookupTopic(st.Topic) == nil:
			errs[st.Topic] = kerr.LeaderNotAvailable.Code
		}
	}
	return errs
}

// topicMetadata describes t as img holds it.
func topicMetadata(img *metadata.Image, t *metadata.Topic) kmsg.MetadataResponseTopic {
	mt := kmsg.NewMetadataResponseTopic()
	name := t.Name()
	mt.Topic = &name
	mt.TopicID = t.ID()
	mt.IsInternal = metadata.InternalTopic(name)
	t.EachPartition(func(i int32, s metadata.Partition) bool {
		mp := kmsg.NewMetadataResponseTopicPartition()
		mp.Partition = i
		mp.Leader = s.Leader()
		mp.LeaderEpoch = s.LeaderEpoch()
		mp.Replicas = s.Replicas()
		mp.ISR = s.ISR()
		for _, id := range s.Replicas() {
			if br, ok := img.Broker(id); !ok || br.Fenced {
				mp.OfflineReplicas = append(mp.OfflineReplicas, id)
			}
		}
		if s.Leader() < 0 {
			mp.ErrorCode = kerr.LeaderNotAvailable.Code
		}
		mt.Partitions = append(mt.Partitions, mp)
		return true
	})
	return mt
}

// image is the metadata image the registry reflects.
func (b *Broker) image() *metadata.Image { return b.img.Load() }
