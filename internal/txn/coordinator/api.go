package coordinator

import (
	"context"
	"errors"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/metadata"
	"weir/internal/txn"
)

// The transactional APIs, answered as Kafka 4.3's coordinator and its
// request handlers answer them. Each method takes a decoded request
// (Version set) and returns the response for that version; an error only
// means ctx ended before the answer existed (send nothing, close the
// connection). ACLs are not checked here (internal/authz does, before);
// the rule Kafka applies with or without an authorizer, that a producer
// may not add an internal topic to its transaction, is.

// OffsetsTopic is the topic a group's offsets partition belongs to, added
// to a transaction by AddOffsetsToTxn.
const OffsetsTopic = "__consumer_offsets"

// oldFenced is the code clients that predate PRODUCER_FENCED (below
// InitProducerId v4, AddPartitionsToTxn, AddOffsetsToTxn and EndTxn v2)
// understand instead.
func oldFenced(code int16, modern bool) int16 {
	if !modern && code == kerr.ProducerFenced.Code {
		return kerr.InvalidProducerEpoch.Code
	}
	return code
}

// errorCode is the Kafka code of an error; UNKNOWN_SERVER_ERROR when it
// carries none.
func errorCode(err error) int16 {
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Code
	}
	return kerr.UnknownServerError.Code
}

// InitProducerID answers InitProducerId (key 22) v0-5: a new producer id
// for an idempotent producer (no transactional id), the transactional
// id's producer id and bumped epoch otherwise.
func (c *Coordinator) InitProducerID(ctx context.Context, req *kmsg.InitProducerIDRequest) (*kmsg.InitProducerIDResponse, error) {
	resp := req.ResponseKind().(*kmsg.InitProducerIDResponse)
	resp.ProducerID, resp.ProducerEpoch = txn.NoProducerID, txn.NoProducerEpoch
	answer := func(code int16, pid int64, epoch int16) (*kmsg.InitProducerIDResponse, error) {
		resp.ErrorCode = oldFenced(code, req.Version >= 4)
		if code == 0 {
			resp.ProducerID, resp.ProducerEpoch = pid, epoch
		}
		return resp, nil
	}
	var expected *txn.ProducerIDEpoch
	switch {
	case req.ProducerID == txn.NoProducerID && req.ProducerEpoch == txn.NoProducerEpoch:
	case req.ProducerID == txn.NoProducerID || req.ProducerEpoch == txn.NoProducerEpoch:
		return answer(kerr.InvalidRequest.Code, 0, 0)
	default:
		expected = &txn.ProducerIDEpoch{ProducerID: req.ProducerID, Epoch: req.ProducerEpoch}
	}
	if req.TransactionalID == nil {
		id, err := c.cfg.Host.NextProducerID()
		if err != nil {
			return answer(errorCode(err), 0, 0)
		}
		return answer(0, id, 0)
	}
	id, timeout := *req.TransactionalID, req.TransactionTimeoutMillis
	// Checked before the coordinator is looked up, as Kafka does.
	switch {
	case id == "":
		return answer(kerr.InvalidRequest.Code, 0, 0)
	case timeout <= 0 || int64(timeout) > c.cfg.MaxTimeout.Milliseconds():
		return answer(kerr.InvalidTransactionTimeout.Code, 0, 0)
	}
	a, err := c.call(ctx, id, func(p *txn.Partition, ref txn.Ref, now int64) txn.Output {
		return p.InitProducerID(ref, id, timeout, expected, now)
	})
	if err != nil {
		return nil, err
	}
	return answer(a.Code, a.ProducerID, a.ProducerEpoch)
}

// PartitionExists reports whether a topic partition exists; AddPartitionsToTxn
// refuses the others with UNKNOWN_TOPIC_OR_PARTITION.
func (c *Coordinator) partitionExists(tp txn.TopicPartition) bool {
	_, ok := c.cfg.Host.PartitionLeader(tp.Topic, tp.Partition)
	return ok
}

// AddPartitionsToTxn answers AddPartitionsToTxn (key 24) v0-5. v0-3 come
// from producers (the classic protocol); v4+ from partition leaders, in
// batches of transactions: VerifyOnly ones ask whether partitions are in
// the transaction (KIP-890 part 1), the others add them (part 2, under
// transaction version 2). A producer's transaction (v0-3) naming an
// internal topic gets TOPIC_AUTHORIZATION_FAILED for its partitions,
// authorizer or not, as Kafka leaves internal topics out of the topics a
// producer may write; a partition leader's (v4+) is not checked so. A
// transaction naming a partition that does not exist gets
// UNKNOWN_TOPIC_OR_PARTITION for it. Either failure fails the whole add:
// the other partitions answer OPERATION_NOT_ATTEMPTED and nothing is
// added.
func (c *Coordinator) AddPartitionsToTxn(ctx context.Context, req *kmsg.AddPartitionsToTxnRequest) (*kmsg.AddPartitionsToTxnResponse, error) {
	resp := req.ResponseKind().(*kmsg.AddPartitionsToTxnResponse)
	if req.Version < 4 {
		parts := flatten(req.Topics, func(t kmsg.AddPartitionsToTxnRequestTopic) (string, []int32) { return t.Topic, t.Partitions })
		codes, err := c.addOne(ctx, req.TransactionalID, req.ProducerID, req.ProducerEpoch, parts, false, txn.V0, req.Version >= 2, true)
		if err != nil {
			return nil, err
		}
		byTopic(parts, func(topic string, run []txn.TopicPartition) {
			rt := kmsg.NewAddPartitionsToTxnResponseTopic()
			rt.Topic = topic
			for _, tp := range run {
				rt.Partitions = append(rt.Partitions, kmsg.AddPartitionsToTxnResponseTopicPartition{Partition: tp.Partition, ErrorCode: codes[tp]})
			}
			resp.Topics = append(resp.Topics, rt)
		})
		return resp, nil
	}
	for _, t := range req.Transactions {
		parts := flatten(t.Topics, func(t kmsg.AddPartitionsToTxnRequestTransactionTopic) (string, []int32) { return t.Topic, t.Partitions })
		codes, err := c.addOne(ctx, t.TransactionalID, t.ProducerID, t.ProducerEpoch, parts, t.VerifyOnly, txn.V2, true, false)
		if err != nil {
			return nil, err
		}
		rt := kmsg.NewAddPartitionsToTxnResponseTransaction()
		rt.TransactionalID = t.TransactionalID
		byTopic(parts, func(topic string, run []txn.TopicPartition) {
			tt := kmsg.NewAddPartitionsToTxnResponseTransactionTopic()
			tt.Topic = topic
			for _, tp := range run {
				tt.Partitions = append(tt.Partitions, kmsg.AddPartitionsToTxnResponseTransactionTopicPartition{Partition: tp.Partition, ErrorCode: codes[tp]})
			}
			rt.Topics = append(rt.Topics, tt)
		})
		resp.Transactions = append(resp.Transactions, rt)
	}
	return resp, nil
}

// byTopic calls fn for each run of consecutive partitions of one topic.
func byTopic(parts []txn.TopicPartition, fn func(topic string, run []txn.TopicPartition)) {
	for i := 0; i < len(parts); {
		j := i + 1
		for j < len(parts) && parts[j].Topic == parts[i].Topic {
			j++
		}
		fn(parts[i].Topic, parts[i:j])
		i = j
	}
}

func partitionIDs(run []txn.TopicPartition) []int32 {
	ids := make([]int32, len(run))
	for k, tp := range run {
		ids[k] = tp.Partition
	}
	return ids
}

// flatten lists a request's partitions in request order, each once.
func flatten[T any](topics []T, each func(T) (string, []int32)) []txn.TopicPartition {
	var out []txn.TopicPartition
	seen := make(map[txn.TopicPartition]bool)
	for _, t := range topics {
		name, ps := each(t)
		for _, p := range ps {
			tp := txn.TopicPartition{Topic: name, Partition: p}
			if !seen[tp] {
				seen[tp] = true
				out = append(out, tp)
			}
		}
	}
	return out
}

// addOne adds (or verifies) one transaction's partitions and returns each
// partition's code. fromProducer marks a producer's own request (v0-3),
// which may not name internal topics.
func (c *Coordinator) addOne(ctx context.Context, id string, pid int64, epoch int16, parts []txn.TopicPartition, verify bool, v txn.Version, modern, fromProducer bool) (map[txn.TopicPartition]int16, error) {
	codes := make(map[txn.TopicPartition]int16, len(parts))
	all := func(code int16) map[txn.TopicPartition]int16 {
		for _, tp := range parts {
			codes[tp] = code
		}
		return codes
	}
	failed := false
	for _, tp := range parts {
		switch {
		case fromProducer && metadata.InternalTopic(tp.Topic):
			codes[tp] = kerr.TopicAuthorizationFailed.Code
		case !c.partitionExists(tp):
			codes[tp] = kerr.UnknownTopicOrPartition.Code
		default:
			continue
		}
		failed = true
	}
	if failed {
		for _, tp := range parts {
			if codes[tp] == 0 {
				codes[tp] = kerr.OperationNotAttempted.Code
			}
		}
		return codes, nil
	}
	if id == "" {
		return all(kerr.InvalidRequest.Code), nil
	}
	if verify {
		res, code, err := read(ctx, c, id, func(p *txn.Partition, _ int64) []int16 { return p.Verify(id, pid, epoch, parts) })
		if err != nil {
			return nil, err
		}
		if code != 0 {
			return all(code), nil
		}
		for k, tp := range parts {
			codes[tp] = res[k]
		}
		return codes, nil
	}
	a, err := c.call(ctx, id, func(p *txn.Partition, ref txn.Ref, now int64) txn.Output {
		return p.AddPartitions(ref, id, pid, epoch, parts, v, now)
	})
	if err != nil {
		return nil, err
	}
	return all(oldFenced(a.Code, modern)), nil
}

// AddOffsetsToTxn answers AddOffsetsToTxn (key 25) v0-4: the group's
// __consumer_offsets partition (offsetsPartition, which the broker knows)
// joins the transaction.
func (c *Coordinator) AddOffsetsToTxn(ctx context.Context, req *kmsg.AddOffsetsToTxnRequest, offsetsPartition int32) (*kmsg.AddOffsetsToTxnResponse, error) {
	resp := req.ResponseKind().(*kmsg.AddOffsetsToTxnResponse)
	id := req.TransactionalID
	if id == "" {
		resp.ErrorCode = kerr.InvalidRequest.Code
		return resp, nil
	}
	parts := []txn.TopicPartition{{Topic: OffsetsTopic, Partition: offsetsPartition}}
	a, err := c.call(ctx, id, func(p *txn.Partition, ref txn.Ref, now int64) txn.Output {
		// Always the classic protocol: version 2 producers do not send it.
		return p.AddPartitions(ref, id, req.ProducerID, req.ProducerEpoch, parts, txn.V0, now)
	})
	if err != nil {
		return nil, err
	}
	resp.ErrorCode = oldFenced(a.Code, req.Version >= 2)
	return resp, nil
}

// EndTxn answers EndTxn (key 26) v0-5. v5 is transaction version 2: the
// epoch is bumped and returned.
func (c *Coordinator) EndTxn(ctx context.Context, req *kmsg.EndTxnRequest) (*kmsg.EndTxnResponse, error) {
	resp := req.ResponseKind().(*kmsg.EndTxnResponse)
	resp.ProducerID, resp.ProducerEpoch = txn.NoProducerID, txn.NoProducerEpoch
	v := txn.V0
	if req.Version >= 5 {
		v = txn.V2
	}
	id := req.TransactionalID
	if id == "" {
		resp.ErrorCode = kerr.InvalidRequest.Code
		return resp, nil
	}
	a, err := c.call(ctx, id, func(p *txn.Partition, ref txn.Ref, now int64) txn.Output {
		return p.EndTxn(ref, id, req.ProducerID, req.ProducerEpoch, req.Commit, v, now)
	})
	if err != nil {
		return nil, err
	}
	resp.ErrorCode = oldFenced(a.Code, req.Version >= 2)
	resp.ProducerID, resp.ProducerEpoch = a.ProducerID, a.ProducerEpoch
	return resp, nil
}

// DescribeTransactions answers DescribeTransactions (key 65) v0.
func (c *Coordinator) DescribeTransactions(ctx context.Context, req *kmsg.DescribeTransactionsRequest) (*kmsg.DescribeTransactionsResponse, error) {
	resp := req.ResponseKind().(*kmsg.DescribeTransactionsResponse)
	for _, id := range req.TransactionalIDs {
		st := kmsg.NewDescribeTransactionsResponseTransactionState()
		st.TransactionalID = id
		if id == "" {
			st.ErrorCode = kerr.InvalidRequest.Code
			resp.TransactionStates = append(resp.TransactionStates, st)
			continue
		}
		d, code, err := read(ctx, c, id, func(p *txn.Partition, _ int64) txn.Description { return p.Describe(id) })
		if err != nil {
			return nil, err
		}
		if code == 0 {
			code = d.Code
		}
		st.ErrorCode = code
		if code == 0 {
			st.State = d.State.String()
			st.TimeoutMillis = d.TimeoutMs
			st.StartTimestamp = d.StartMs
			st.ProducerID = d.ProducerID
			st.ProducerEpoch = d.ProducerEpoch
			byTopic(d.Partitions, func(topic string, run []txn.TopicPartition) {
				t := kmsg.NewDescribeTransactionsResponseTransactionStateTopic()
				t.Topic, t.Partitions = topic, partitionIDs(run)
				st.Topics = append(st.Topics, t)
			})
		}
		resp.TransactionStates = append(resp.TransactionStates, st)
	}
	return resp, nil
}

// ListTransactions answers ListTransactions (key 66) v0-2 for the
// partitions this node leads (the admin client asks every broker).
// COORDINATOR_LOAD_IN_PROGRESS while any of them loads; state filters
// naming no state are listed in UnknownStateFilters; a pattern (v2) that
// does not compile is INVALID_REGULAR_EXPRESSION.
func (c *Coordinator) ListTransactions(ctx context.Context, req *kmsg.ListTransactionsRequest) (*kmsg.ListTransactionsResponse, error) {
	resp := req.ResponseKind().(*kmsg.ListTransactionsResponse)
	f := txn.ListFilter{ProducerIDs: req.ProducerIDFilters, MinDurationMs: -1}
	if req.Version >= 1 {
		f.MinDurationMs = req.DurationFilterMillis
	}
	for _, name := range req.StateFilters {
		if s, ok := txn.StateByName(name); ok {
			f.States = append(f.States, s)
		} else {
			resp.UnknownStateFilters = append(resp.UnknownStateFilters, name)
		}
	}
	if req.Version >= 2 && req.TransactionalIDPattern != nil && *req.TransactionalIDPattern != "" {
		re, err := txn.CompilePattern(*req.TransactionalIDPattern)
		if err != nil {
			resp.ErrorCode = kerr.InvalidRegularExpression.Code
			return resp, nil
		}
		f.Pattern = re
	}
	type part struct {
		ls      []txn.Listing
		loading bool
	}
	ch := make(chan part, len(c.shards))
	for _, s := range c.shards {
		if !s.enqueue(func() {
			var r part
			for _, sl := range s.slots {
				if sl.p == nil {
					r.loading = true
					continue
				}
				r.ls = append(r.ls, sl.p.List(f, c.now())...)
			}
			ch <- r
		}) {
			resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
			return resp, nil
		}
	}
	var all []txn.Listing
	for range c.shards {
		select {
		case r := <-ch:
			if r.loading {
				resp.ErrorCode = kerr.CoordinatorLoadInProgress.Code
			}
			all = append(all, r.ls...)
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if resp.ErrorCode != 0 {
		return resp, nil
	}
	// State filters that all name unknown states select nothing.
	if len(req.StateFilters) > 0 && len(f.States) == 0 {
		all = nil
	}
	slices.SortFunc(all, func(a, b txn.Listing) int {
		switch {
		case a.TransactionalID < b.TransactionalID:
			return -1
		case a.TransactionalID > b.TransactionalID:
			return 1
		}
		return 0
	})
	for _, l := range all {
		st := kmsg.NewListTransactionsResponseTransactionState()
		st.TransactionalID = l.TransactionalID
		st.ProducerID = l.ProducerID
		st.TransactionState = l.State.String()
		resp.TransactionStates = append(resp.TransactionStates, st)
	}
	return resp, nil
}
