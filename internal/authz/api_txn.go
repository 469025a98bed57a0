package authz

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/metadata"
)

// The transaction APIs. A producer's requests (AddPartitionsToTxn v0-3,
// AddOffsetsToTxn, EndTxn, TxnOffsetCommit) need WRITE on its
// transactional id; the requests transaction coordinators and partition
// leaders send each other (WriteTxnMarkers, AddPartitionsToTxn v4+) need
// CLUSTER_ACTION, which the inter-broker principal has as a super user
// or by ACL. A node's requests to itself are not authorized: the broker
// serves them without a connection.

// firstAddPartitionsBrokerVersion is the first AddPartitionsToTxn version
// of the brokers' batches (KIP-890); producers send versions 0 to 3.
const firstAddPartitionsBrokerVersion = 4

// AddPartitionsToTxn (API 24): a producer's request (versions 0 to 3)
// needs WRITE on its transactional id, else every partition answers
// TRANSACTIONAL_ID_AUTHORIZATION_FAILED, and WRITE on each topic: a
// topic without it, or an internal topic, fails the whole request (as
// Kafka fails the transaction's add): its partitions answer
// TOPIC_AUTHORIZATION_FAILED, those of unknown topics or partitions
// UNKNOWN_TOPIC_OR_PARTITION and the others OPERATION_NOT_ATTEMPTED. A
// broker's batch (version 4 on) needs CLUSTER_ACTION, else the request
// answers CLUSTER_AUTHORIZATION_FAILED.
func AddPartitionsToTxn(c *Checker, env Env, req *kmsg.AddPartitionsToTxnRequest) *Outcome[*kmsg.AddPartitionsToTxnRequest, *kmsg.AddPartitionsToTxnResponse] {
	if req.Version >= firstAddPartitionsBrokerVersion {
		if c.AllowedCluster(OpClusterAction) {
			return serve[*kmsg.AddPartitionsToTxnRequest, *kmsg.AddPartitionsToTxnResponse](req)
		}
		resp := kmsg.NewPtrAddPartitionsToTxnResponse()
		resp.ErrorCode = errCluster.Code
		return reject(req, resp)
	}
	answer := func(code func(topic string, partition int32) int16) *kmsg.AddPartitionsToTxnResponse {
		resp := kmsg.NewPtrAddPartitionsToTxnResponse()
		type partition struct {
			topic string
			index int32
		}
		seen := map[string]int{} // topic -> its index in resp.Topics
		done := map[partition]bool{}
		for _, t := range req.Topics {
			i, ok := seen[t.Topic]
			if !ok {
				i = len(resp.Topics)
				seen[t.Topic] = i
				rt := kmsg.NewAddPartitionsToTxnResponseTopic()
				rt.Topic = t.Topic
				resp.Topics = append(resp.Topics, rt)
			}
			for _, p := range t.Partitions {
				if done[partition{t.Topic, p}] {
					continue
				}
				done[partition{t.Topic, p}] = true
				rp := kmsg.NewAddPartitionsToTxnResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p, code(t.Topic, p)
				resp.Topics[i].Partitions = append(resp.Topics[i].Partitions, rp)
			}
		}
		return resp
	}
	if !c.Allowed(OpWrite, ResourceTransactionalID, req.TransactionalID) {
		return reject(req, answer(func(string, int32) int16 { return errTxn.Code }))
	}
	write := c.can(OpWrite, ResourceTopic)
	// A producer never adds an internal topic's partitions itself
	// (AddOffsetsToTxn adds the group's __consumer_offsets partition).
	denied := func(topic string) bool { return metadata.InternalTopic(topic) || !write(topic) }
	if !slices.ContainsFunc(req.Topics, func(t kmsg.AddPartitionsToTxnRequestTopic) bool { return denied(t.Topic) }) {
		return serve[*kmsg.AddPartitionsToTxnRequest, *kmsg.AddPartitionsToTxnResponse](req)
	}
	return reject(req, answer(func(topic string, p int32) int16 {
		switch {
		case denied(topic):
			return errTopic.Code
		case !partitionExists(env, topic, p):
			return kerr.UnknownTopicOrPartition.Code
		}
		return kerr.OperationNotAttempted.Code
	}))
}

// partitionExists reports whether a topic partition exists in the image
// the request is served with (true when the env cannot tell).
func partitionExists(env Env, topic string, p int32) bool {
	if env.Topics == nil {
		return true
	}
	n, ok := env.Topics.Partitions(topic)
	return ok && p >= 0 && p < n
}

// AddOffsetsToTxn (API 25): WRITE on the transactional id, else
// TRANSACTIONAL_ID_AUTHORIZATION_FAILED; READ on the group, else
// GROUP_AUTHORIZATION_FAILED.
func AddOffsetsToTxn(c *Checker, _ Env, req *kmsg.AddOffsetsToTxnRequest) *Outcome[*kmsg.AddOffsetsToTxnRequest, *kmsg.AddOffsetsToTxnResponse] {
	var e *kerr.Error
	switch {
	case !c.Allowed(OpWrite, ResourceTransactionalID, req.TransactionalID):
		e = errTxn
	case !groupRead(c, req.Group):
		e = errGroup
	default:
		return serve[*kmsg.AddOffsetsToTxnRequest, *kmsg.AddOffsetsToTxnResponse](req)
	}
	resp := kmsg.NewPtrAddOffsetsToTxnResponse()
	resp.ErrorCode = e.Code
	return reject(req, resp)
}

// EndTxn (API 26): WRITE on the transactional id, else
// TRANSACTIONAL_ID_AUTHORIZATION_FAILED.
func EndTxn(c *Checker, _ Env, req *kmsg.EndTxnRequest) *Outcome[*kmsg.EndTxnRequest, *kmsg.EndTxnResponse] {
	if c.Allowed(OpWrite, ResourceTransactionalID, req.TransactionalID) {
		return serve[*kmsg.EndTxnRequest, *kmsg.EndTxnResponse](req)
	}
	resp := kmsg.NewPtrEndTxnResponse()
	resp.ErrorCode = errTxn.Code
	return reject(req, resp)
}

// WriteTxnMarkers (API 27), which transaction coordinators send to
// partition leaders (and kafka-transactions.sh abort): ALTER on the
// cluster or CLUSTER_ACTION, else every partition answers
// CLUSTER_AUTHORIZATION_FAILED and no marker is written.
func WriteTxnMarkers(c *Checker, _ Env, req *kmsg.WriteTxnMarkersRequest) *Outcome[*kmsg.WriteTxnMarkersRequest, *kmsg.WriteTxnMarkersResponse] {
	if c.AllowedCluster(OpAlter) || c.AllowedCluster(OpClusterAction) {
		return serve[*kmsg.WriteTxnMarkersRequest, *kmsg.WriteTxnMarkersResponse](req)
	}
	resp := kmsg.NewPtrWriteTxnMarkersResponse()
	for _, m := range req.Markers {
		rm := kmsg.NewWriteTxnMarkersResponseMarker()
		rm.ProducerID = m.ProducerID
		for _, t := range m.Topics {
			rt := kmsg.NewWriteTxnMarkersResponseMarkerTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewWriteTxnMarkersResponseMarkerTopicPartition()
				rp.Partition, rp.ErrorCode = p, errCluster.Code
				rt.Partitions = append(rt.Partitions, rp)
			}
			rm.Topics = append(rm.Topics, rt)
		}
		resp.Markers = append(resp.Markers, rm)
	}
	return reject(req, resp)
}

// TxnOffsetCommit (API 28): WRITE on the transactional id, else every
// partition answers TRANSACTIONAL_ID_AUTHORIZATION_FAILED; READ on the
// group, else GROUP_AUTHORIZATION_FAILED; READ on each topic, else its
// partitions answer TOPIC_AUTHORIZATION_FAILED and are not committed.
// When no topic is left the denials are the whole answer: the
// transaction is not touched (a version 5 commit would add the group's
// offsets partition to it).
func TxnOffsetCommit(c *Checker, _ Env, req *kmsg.TxnOffsetCommitRequest) *Outcome[*kmsg.TxnOffsetCommitRequest, *kmsg.TxnOffsetCommitResponse] {
	answer := func(t *kmsg.TxnOffsetCommitRequestTopic, code int16) kmsg.TxnOffsetCommitResponseTopic {
		rt := kmsg.NewTxnOffsetCommitResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewTxnOffsetCommitResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p.Partition, code
			rt.Partitions = append(rt.Partitions, rp)
		}
		return rt
	}
	whole := func(code int16) *Outcome[*kmsg.TxnOffsetCommitRequest, *kmsg.TxnOffsetCommitResponse] {
		resp := kmsg.NewPtrTxnOffsetCommitResponse()
		for i := range req.Topics {
			resp.Topics = append(resp.Topics, answer(&req.Topics[i], code))
		}
		return reject(req, resp)
	}
	switch {
	case !c.Allowed(OpWrite, ResourceTransactionalID, req.TransactionalID):
		return whole(errTxn.Code)
	case !groupRead(c, req.Group):
		return whole(errGroup.Code)
	}
	read := c.can(OpRead, ResourceTopic)
	kept, denied := split(req.Topics, func(t *kmsg.TxnOffsetCommitRequestTopic) bool { return read(t.Topic) },
		func(t *kmsg.TxnOffsetCommitRequestTopic) kmsg.TxnOffsetCommitResponseTopic {
			return answer(t, errTopic.Code)
		})
	if len(kept) == 0 && len(denied) > 0 {
		resp := kmsg.NewPtrTxnOffsetCommitResponse()
		resp.Topics = denied
		return reject(req, resp)
	}
	return pruned(req, denied, func() *kmsg.TxnOffsetCommitRequest { cp := *req; cp.Topics = kept; return &cp },
		func(r *kmsg.TxnOffsetCommitResponse, d []kmsg.TxnOffsetCommitResponseTopic) {
			r.Topics = append(r.Topics, d...)
		})
}

// DescribeProducers (API 61): READ on each topic, else its partitions
// answer TOPIC_AUTHORIZATION_FAILED. A name that is not a valid topic
// name is left to the handler, as Kafka validates before it authorizes.
func DescribeProducers(c *Checker, _ Env, req *kmsg.DescribeProducersRequest) *Outcome[*kmsg.DescribeProducersRequest, *kmsg.DescribeProducersResponse] {
	read := c.can(OpRead, ResourceTopic)
	kept, denied := split(req.Topics, func(t *kmsg.DescribeProducersRequestTopic) bool {
		return metadata.ValidTopicName(t.Topic) != nil || read(t.Topic)
	}, func(t *kmsg.DescribeProducersRequestTopic) kmsg.DescribeProducersResponseTopic {
		rt := kmsg.NewDescribeProducersResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewDescribeProducersResponseTopicPartition()
			rp.Partition, rp.ErrorCode, rp.ErrorMessage = p, errTopic.Code, message(errTopic)
			rt.Partitions = append(rt.Partitions, rp)
		}
		return rt
	})
	return pruned(req, denied, func() *kmsg.DescribeProducersRequest { cp := *req; cp.Topics = kept; return &cp },
		func(r *kmsg.DescribeProducersResponse, d []kmsg.DescribeProducersResponseTopic) {
			r.Topics = append(r.Topics, d...)
		})
}

// DescribeTransactions (API 65): DESCRIBE on each transactional id, else
// its state answers TRANSACTIONAL_ID_AUTHORIZATION_FAILED; a described
// transaction lists only the topics the principal may DESCRIBE.
func DescribeTransactions(c *Checker, _ Env, req *kmsg.DescribeTransactionsRequest) *Outcome[*kmsg.DescribeTransactionsRequest, *kmsg.DescribeTransactionsResponse] {
	kept, denied := split(req.TransactionalIDs, func(id *string) bool {
		return c.Allowed(OpDescribe, ResourceTransactionalID, *id)
	}, func(id *string) kmsg.DescribeTransactionsResponseTransactionState {
		st := kmsg.NewDescribeTransactionsResponseTransactionState()
		st.TransactionalID, st.ErrorCode = *id, errTxn.Code
		return st
	})
	o := pruned(req, denied, func() *kmsg.DescribeTransactionsRequest { cp := *req; cp.TransactionalIDs = kept; return &cp },
		func(r *kmsg.DescribeTransactionsResponse, d []kmsg.DescribeTransactionsResponseTransactionState) {
			r.TransactionStates = append(r.TransactionStates, d...)
		})
	describe := c.can(OpDescribe, ResourceTopic)
	o.then(func(r *kmsg.DescribeTransactionsResponse) {
		for i := range r.TransactionStates {
			st := &r.TransactionStates[i]
			st.Topics = slices.DeleteFunc(st.Topics, func(t kmsg.DescribeTransactionsResponseTransactionStateTopic) bool {
				return !describe(t.Topic)
			})
		}
	})
	return o
}

// ListTransactions (API 66): only the transactional ids the principal
// may DESCRIBE are listed.
func ListTransactions(c *Checker, _ Env, req *kmsg.ListTransactionsRequest) *Outcome[*kmsg.ListTransactionsRequest, *kmsg.ListTransactionsResponse] {
	o := serve[*kmsg.ListTransactionsRequest, *kmsg.ListTransactionsResponse](req)
	describe := c.can(OpDescribe, ResourceTransactionalID)
	o.then(func(r *kmsg.ListTransactionsResponse) {
		r.TransactionStates = slices.DeleteFunc(r.TransactionStates, func(st kmsg.ListTransactionsResponseTransactionState) bool {
			return !describe(st.TransactionalID)
		})
	})
	return o
}
