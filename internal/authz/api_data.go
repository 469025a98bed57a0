package authz

import (
	"encoding/binary"
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// split keeps the items allowed returns true for and turns the others
// into denial answers.
func split[T, D any](items []T, allowed func(*T) bool, deny func(*T) D) (kept []T, denied []D) {
	for i := range items {
		if allowed(&items[i]) {
			kept = append(kept, items[i])
		} else {
			denied = append(denied, deny(&items[i]))
		}
	}
	return kept, denied
}

// pruned returns the outcome serving a copy of req with fewer items,
// whose response gets the denied answers added, or req itself when
// nothing was denied.
func pruned[Req kmsg.Request, Resp kmsg.Response, D any](req Req, denied []D, cp func() Req, add func(Resp, []D)) *Outcome[Req, Resp] {
	o := serve[Req, Resp](req)
	if len(denied) > 0 {
		o.Request, o.Partial = cp(), true
		o.then(func(r Resp) { add(r, denied) })
	}
	return o
}

// Record batch v2 header: attributes are the int16 at offset 21, after
// base offset, length, leader epoch, magic and CRC; bit 4 marks a
// transactional batch.
const (
	batchAttributesAt   = 21
	batchLengthAt       = 8
	batchHeaderMin      = 23
	attrTransactional   = 0x10
	batchLengthFieldEnd = 12
)

// transactional reports whether any batch of a produce request is
// transactional (Kafka's RequestUtils.hasTransactionalRecords). Malformed
// batches end the walk: the handler refuses them.
func transactional(req *kmsg.ProduceRequest) bool {
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			b := p.Records
			for len(b) >= batchHeaderMin {
				if binary.BigEndian.Uint16(b[batchAttributesAt:])&attrTransactional != 0 {
					return true
				}
				n := int(int32(binary.BigEndian.Uint32(b[batchLengthAt:])))
				if n <= 0 || n > len(b)-batchLengthFieldEnd {
					break
				}
				b = b[batchLengthFieldEnd+n:]
			}
		}
	}
	return false
}

// Produce (API 0): transactional records need WRITE on the request's
// transactional id, else every partition answers
// TRANSACTIONAL_ID_AUTHORIZATION_FAILED; each topic needs WRITE, else
// its partitions answer TOPIC_AUTHORIZATION_FAILED and nothing of them
// is appended. (Idempotent producers need no more: IDEMPOTENT_WRITE is
// checked when they get their producer id.)
func Produce(c *Checker, env Env, req *kmsg.ProduceRequest) *Outcome[*kmsg.ProduceRequest, *kmsg.ProduceResponse] {
	answer := func(t *kmsg.ProduceRequestTopic, code int16) kmsg.ProduceResponseTopic {
		rt := kmsg.NewProduceResponseTopic()
		rt.Topic, rt.TopicID = t.Topic, t.TopicID
		for _, p := range t.Partitions {
			rp := kmsg.NewProduceResponseTopicPartition()
			rp.Partition, rp.ErrorCode, rp.BaseOffset = p.Partition, code, -1
			rt.Partitions = append(rt.Partitions, rp)
		}
		return rt
	}
	if transactional(req) && (req.TransactionID == nil || !c.Allowed(OpWrite, ResourceTransactionalID, *req.TransactionID)) {
		resp := kmsg.NewPtrProduceResponse()
		for i := range req.Topics {
			resp.Topics = append(resp.Topics, answer(&req.Topics[i], errTxn.Code))
		}
		return reject(req, resp)
	}
	write := c.can(OpWrite, ResourceTopic)
	kept, denied := split(req.Topics, func(t *kmsg.ProduceRequestTopic) bool {
		name, ok := topicName(env, t.Topic, t.TopicID)
		return !ok || write(name)
	}, func(t *kmsg.ProduceRequestTopic) kmsg.ProduceResponseTopic { return answer(t, errTopic.Code) })
	return pruned(req, denied, func() *kmsg.ProduceRequest { cp := *req; cp.Topics = kept; return &cp },
		func(r *kmsg.ProduceResponse, d []kmsg.ProduceResponseTopic) { r.Topics = append(r.Topics, d...) })
}

// fetchDenied is a fetch topic answered TOPIC_AUTHORIZATION_FAILED.
func fetchDenied(t *kmsg.FetchRequestTopic) kmsg.FetchResponseTopic {
	rt := kmsg.NewFetchResponseTopic()
	rt.Topic, rt.TopicID = t.Topic, t.TopicID
	for _, p := range t.Partitions {
		rp := kmsg.NewFetchResponseTopicPartition()
		rp.Partition, rp.ErrorCode, rp.HighWatermark, rp.PreferredReadReplica = p.Partition, errTopic.Code, -1, -1
		rt.Partitions = append(rt.Partitions, rp)
	}
	return rt
}

// Fetch (API 1): a follower's fetch needs CLUSTER_ACTION, else every
// partition answers TOPIC_AUTHORIZATION_FAILED; a consumer's needs READ
// on each topic, else that topic's partitions do.
func Fetch(c *Checker, env Env, req *kmsg.FetchRequest) *Outcome[*kmsg.FetchRequest, *kmsg.FetchResponse] {
	allowed := func(*kmsg.FetchRequestTopic) bool { return true }
	if replica := req.ReplicaID; replica >= 0 || req.ReplicaState.ID >= 0 {
		ok := c.AllowedCluster(OpClusterAction)
		allowed = func(*kmsg.FetchRequestTopic) bool { return ok }
	} else {
		read := c.can(OpRead, ResourceTopic)
		allowed = func(t *kmsg.FetchRequestTopic) bool {
			name, ok := topicName(env, t.Topic, t.TopicID)
			return !ok || read(name)
		}
	}
	kept, denied := split(req.Topics, allowed, fetchDenied)
	return pruned(req, denied, func() *kmsg.FetchRequest { cp := *req; cp.Topics = kept; return &cp },
		func(r *kmsg.FetchResponse, d []kmsg.FetchResponseTopic) { r.Topics = append(r.Topics, d...) })
}

// ListOffsets (API 2): DESCRIBE on each topic, else its partitions answer
// TOPIC_AUTHORIZATION_FAILED.
func ListOffsets(c *Checker, _ Env, req *kmsg.ListOffsetsRequest) *Outcome[*kmsg.ListOffsetsRequest, *kmsg.ListOffsetsResponse] {
	describe := c.can(OpDescribe, ResourceTopic)
	kept, denied := split(req.Topics, func(t *kmsg.ListOffsetsRequestTopic) bool { return describe(t.Topic) },
		func(t *kmsg.ListOffsetsRequestTopic) kmsg.ListOffsetsResponseTopic {
			rt := kmsg.NewListOffsetsResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewListOffsetsResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p.Partition, errTopic.Code
				rt.Partitions = append(rt.Partitions, rp)
			}
			return rt
		})
	return pruned(req, denied, func() *kmsg.ListOffsetsRequest { cp := *req; cp.Topics = kept; return &cp },
		func(r *kmsg.ListOffsetsResponse, d []kmsg.ListOffsetsResponseTopic) {
			r.Topics = append(r.Topics, d...)
		})
}

// Metadata (API 3): a request for every topic lists only the topics the
// principal may DESCRIBE. Topics named (or given by id) without DESCRIBE
// answer TOPIC_AUTHORIZATION_FAILED, without their id (by name) or name
// (by id), so that their existence is not told. When the request would
// create topics (allow_auto_topic_creation and auto.create.topics.enable),
// those that do not exist need CREATE on the cluster or on the topic,
// else they answer TOPIC_AUTHORIZATION_FAILED and are not created. The
// authorized operations asked for are filled: the cluster's (versions 8
// to 10; 0 without DESCRIBE on the cluster) and each listed topic's.
func Metadata(c *Checker, env Env, req *kmsg.MetadataRequest) *Outcome[*kmsg.MetadataRequest, *kmsg.MetadataResponse] {
	describe := c.can(OpDescribe, ResourceTopic)
	all := req.Topics == nil || req.Version == 0 && len(req.Topics) == 0
	o := serve[*kmsg.MetadataRequest, *kmsg.MetadataResponse](req)
	if all {
		o.then(func(r *kmsg.MetadataResponse) {
			r.Topics = slices.DeleteFunc(r.Topics, func(t kmsg.MetadataResponseTopic) bool {
				return t.Topic == nil || !describe(*t.Topic)
			})
		})
	} else {
		mayCreate := memo(func(name string) bool {
			if !env.AutoCreateTopics || !req.AllowAutoTopicCreation || env.Topics == nil {
				return true
			}
			if _, exists := env.Topics.TopicID(name); exists {
				return true
			}
			return c.AllowedCluster(OpCreate) || c.Allowed(OpCreate, ResourceTopic, name)
		})
		kept, denied := split(req.Topics, func(t *kmsg.MetadataRequestTopic) bool {
			if t.Topic == nil { // by id
				name, ok := topicName(env, "", t.TopicID)
				return !ok || describe(name)
			}
			return describe(*t.Topic) && mayCreate(*t.Topic)
		}, func(t *kmsg.MetadataRequestTopic) kmsg.MetadataResponseTopic {
			rt := kmsg.NewMetadataResponseTopic()
			rt.ErrorCode = errTopic.Code
			if t.Topic == nil {
				rt.TopicID = t.TopicID
			} else {
				rt.Topic = t.Topic
			}
			return rt
		})
		if len(denied) > 0 {
			none := len(kept) == 0
			o = pruned(req, denied, func() *kmsg.MetadataRequest {
				cp := *req
				cp.Topics = kept
				if none {
					cp.Topics = []kmsg.MetadataRequestTopic{} // not nil: nil asks for every topic
				}
				return &cp
			}, func(r *kmsg.MetadataResponse, d []kmsg.MetadataResponseTopic) {
				if none && req.Version == 0 {
					// Version 0 reads an empty list as every topic.
					r.Topics = r.Topics[:0]
				}
				r.Topics = append(r.Topics, d...)
			})
		}
	}
	if req.Version >= 8 && req.Version <= 10 && req.IncludeClusterAuthorizedOperations {
		o.then(func(r *kmsg.MetadataResponse) {
			r.AuthorizedOperations = 0
			if c.AllowedCluster(OpDescribe) {
				r.AuthorizedOperations = c.Operations(ResourceCluster, ClusterName)
			}
		})
	}
	if req.Version >= 8 && req.IncludeTopicAuthorizedOperations {
		o.then(func(r *kmsg.MetadataResponse) {
			for i := range r.Topics {
				if t := &r.Topics[i]; t.ErrorCode != errTopic.Code && t.Topic != nil {
					t.AuthorizedOperations = c.Operations(ResourceTopic, *t.Topic)
				}
			}
		})
	}
	return o
}

// OffsetForLeaderEpoch (API 23): CLUSTER_ACTION allows every topic (a
// follower); otherwise DESCRIBE on each topic, else its partitions answer
// TOPIC_AUTHORIZATION_FAILED.
func OffsetForLeaderEpoch(c *Checker, _ Env, req *kmsg.OffsetForLeaderEpochRequest) *Outcome[*kmsg.OffsetForLeaderEpochRequest, *kmsg.OffsetForLeaderEpochResponse] {
	if c.AllowedCluster(OpClusterAction) {
		return serve[*kmsg.OffsetForLeaderEpochRequest, *kmsg.OffsetForLeaderEpochResponse](req)
	}
	describe := c.can(OpDescribe, ResourceTopic)
	kept, denied := split(req.Topics, func(t *kmsg.OffsetForLeaderEpochRequestTopic) bool { return describe(t.Topic) },
		func(t *kmsg.OffsetForLeaderEpochRequestTopic) kmsg.OffsetForLeaderEpochResponseTopic {
			rt := kmsg.NewOffsetForLeaderEpochResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewOffsetForLeaderEpochResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p.Partition, errTopic.Code
				rt.Partitions = append(rt.Partitions, rp)
			}
			return rt
		})
	return pruned(req, denied, func() *kmsg.OffsetForLeaderEpochRequest { cp := *req; cp.Topics = kept; return &cp },
		func(r *kmsg.OffsetForLeaderEpochResponse, d []kmsg.OffsetForLeaderEpochResponseTopic) {
			r.Topics = append(r.Topics, d...)
		})
}

// DeleteRecords (API 21): DELETE on each topic, else its partitions
// answer TOPIC_AUTHORIZATION_FAILED and nothing is deleted.
func DeleteRecords(c *Checker, _ Env, req *kmsg.DeleteRecordsRequest) *Outcome[*kmsg.DeleteRecordsRequest, *kmsg.DeleteRecordsResponse] {
	del := c.can(OpDelete, ResourceTopic)
	kept, denied := split(req.Topics, func(t *kmsg.DeleteRecordsRequestTopic) bool { return del(t.Topic) },
		func(t *kmsg.DeleteRecordsRequestTopic) kmsg.DeleteRecordsResponseTopic {
			rt := kmsg.NewDeleteRecordsResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewDeleteRecordsResponseTopicPartition()
				rp.Partition, rp.ErrorCode, rp.LowWatermark = p.Partition, errTopic.Code, -1
				rt.Partitions = append(rt.Partitions, rp)
			}
			return rt
		})
	return pruned(req, denied, func() *kmsg.DeleteRecordsRequest { cp := *req; cp.Topics = kept; return &cp },
		func(r *kmsg.DeleteRecordsResponse, d []kmsg.DeleteRecordsResponseTopic) {
			r.Topics = append(r.Topics, d...)
		})
}

// DescribeTopicPartitions (API 75): as Metadata, by name: a request for
// every topic lists the described ones; a named topic (at or after the
// cursor) without DESCRIBE answers TOPIC_AUTHORIZATION_FAILED. Every
// listed topic carries its authorized operations.
func DescribeTopicPartitions(c *Checker, _ Env, req *kmsg.DescribeTopicPartitionsRequest) *Outcome[*kmsg.DescribeTopicPartitionsRequest, *kmsg.DescribeTopicPartitionsResponse] {
	describe := c.can(OpDescribe, ResourceTopic)
	var o *Outcome[*kmsg.DescribeTopicPartitionsRequest, *kmsg.DescribeTopicPartitionsResponse]
	if len(req.Topics) == 0 {
		o = serve[*kmsg.DescribeTopicPartitionsRequest, *kmsg.DescribeTopicPartitionsResponse](req)
		o.then(func(r *kmsg.DescribeTopicPartitionsResponse) {
			r.Topics = slices.DeleteFunc(r.Topics, func(t kmsg.DescribeTopicPartitionsResponseTopic) bool {
				return t.Topic == nil || !describe(*t.Topic)
			})
		})
	} else {
		after := ""
		if req.Cursor != nil {
			after = req.Cursor.Topic
		}
		kept, denied := split(req.Topics, func(t *kmsg.DescribeTopicPartitionsRequestTopic) bool { return describe(t.Topic) },
			func(t *kmsg.DescribeTopicPartitionsRequestTopic) kmsg.DescribeTopicPartitionsResponseTopic {
				rt := kmsg.NewDescribeTopicPartitionsResponseTopic()
				name := t.Topic
				rt.ErrorCode, rt.Topic = errTopic.Code, &name
				return rt
			})
		denied = slices.DeleteFunc(denied, func(t kmsg.DescribeTopicPartitionsResponseTopic) bool { return *t.Topic < after })
		if len(kept) == 0 {
			// Nothing left to describe (an empty list would mean every
			// topic): the denials are the whole answer.
			resp := kmsg.NewPtrDescribeTopicPartitionsResponse()
			resp.Topics = denied
			return reject(req, resp)
		}
		o = pruned(req, denied, func() *kmsg.DescribeTopicPartitionsRequest { cp := *req; cp.Topics = kept; return &cp },
			func(r *kmsg.DescribeTopicPartitionsResponse, d []kmsg.DescribeTopicPartitionsResponseTopic) {
				r.Topics = append(r.Topics, d...)
			})
	}
	o.then(func(r *kmsg.DescribeTopicPartitionsResponse) {
		for i := range r.Topics {
			if t := &r.Topics[i]; t.ErrorCode != errTopic.Code && t.Topic != nil {
				t.AuthorizedOperations = c.Operations(ResourceTopic, *t.Topic)
			}
		}
	})
	return o
}
