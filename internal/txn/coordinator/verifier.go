package coordinator

import (
	"context"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/txn"
)

// The partition leader's half of KIP-890, Kafka's AddPartitionsToTxnManager:
// before a leader appends a producer's first transactional batch to a
// partition, it asks the transaction's coordinator whether the partition
// is in the transaction (verify only: clients of the classic protocol
// added it themselves) or to add it (transaction version 2: the client
// does not). Without that check a batch of an aborted or timed-out
// transaction could open a transaction no coordinator knows, which would
// hold the partition's last stable offset forever. Calls to one
// coordinator node are batched into one AddPartitionsToTxn (v5) at a time.

// Operation is what a leader asks of the coordinator for a request's
// version (Kafka's TransactionSupportedOperation).
type Operation int8

const (
	// VerifyOnly: Produce v3-10, TxnOffsetCommit v0-3. The client
	// predates TRANSACTION_ABORTABLE: it is answered INVALID_TXN_STATE.
	VerifyOnly Operation = iota
	// VerifyGenericError: Produce v11, TxnOffsetCommit v4.
	VerifyGenericError
	// AddPartition: Produce v12+, TxnOffsetCommit v5+ (transaction
	// version 2): the leader adds the partition itself.
	AddPartition
)

// ProduceOperation is the Operation of a Produce request version.
func ProduceOperation(version int16) Operation {
	switch {
	case version > 11:
		return AddPartition
	case version > 10:
		return VerifyGenericError
	}
	return VerifyOnly
}

// TxnOffsetCommitOperation is the Operation of a TxnOffsetCommit version.
func TxnOffsetCommitOperation(version int16) Operation {
	switch {
	case version > 4:
		return AddPartition
	case version > 3:
		return VerifyGenericError
	}
	return VerifyOnly
}

func (op Operation) adds() bool { return op == AddPartition }

// verifyCall is one transaction's verification waiting for its node's
// next request.
type verifyCall struct {
	id     string
	pid    int64
	epoch  int16
	parts  []txn.TopicPartition
	op     Operation
	result chan map[txn.TopicPartition]int16 // buffered: the answer
}

func (v *verifyCall) fail(code int16) {
	res := make(map[txn.TopicPartition]int16, len(v.parts))
	for _, tp := range v.parts {
		res[tp] = code
	}
	v.result <- res
}

// verifier batches verifications per coordinator node: one goroutine per
// node sends one request at a time with every call queued meanwhile.
type verifier struct {
	c *Coordinator

	mu     sync.Mutex // guards nodes, each node's queue, closed
	nodes  map[int32]*verifyNode
	closed bool
}

type verifyNode struct {
	queue []*verifyCall
	wake  chan struct{}
}

func newVerifier(c *Coordinator) *verifier {
	return &verifier{c: c, nodes: make(map[int32]*verifyNode)}
}

// close stops new node goroutines from starting; Close then waits for
// the running ones.
func (v *verifier) close() {
	v.mu.Lock()
	v.closed = true
	for _, n := range v.nodes {
		for _, call := range n.queue {
			call.fail(kerr.NetworkException.Code)
		}
		n.queue = nil
	}
	v.mu.Unlock()
}

// VerifyTransaction asks the coordinator of transactionalID whether parts
// are in the producer's open transaction, or to add them (op
// AddPartition). It returns the partitions that may not be appended, with
// the code Kafka's AddPartitionsToTxnManager reports (empty when all may),
// and an error only when ctx ends first. Map the codes with ProduceError or
// TxnOffsetCommitError for the answer.
func (c *Coordinator) VerifyTransaction(ctx context.Context, transactionalID string, pid int64, epoch int16, parts []txn.TopicPartition, op Operation) (map[txn.TopicPartition]int16, error) {
	call := &verifyCall{id: transactionalID, pid: pid, epoch: epoch, parts: parts, op: op, result: make(chan map[txn.TopicPartition]int16, 1)}
	if node, _ := c.CoordinatorNode(transactionalID); node < 0 {
		call.fail(kerr.CoordinatorNotAvailable.Code)
	} else {
		c.verifier.enqueue(node, call)
	}
	select {
	case res := <-call.result:
		return res, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-c.ctx.Done():
		res := make(map[txn.TopicPartition]int16, len(parts))
		for _, tp := range parts {
			res[tp] = kerr.NetworkException.Code
		}
		return res, nil
	}
}

// VerifyForProduce is VerifyTransaction as Kafka's produce path uses it:
// under transaction version 2 a CONCURRENT_TRANSACTIONS (the previous
// transaction still completing) is retried every
// add.partitions.to.txn.retry.backoff.ms (20 ms) for at most
// add.partitions.to.txn.retry.backoff.max.ms (100 ms), and the codes are
// mapped with ProduceError.
func (c *Coordinator) VerifyForProduce(ctx context.Context, transactionalID string, pid int64, epoch int16, parts []txn.TopicPartition, version int16) (map[txn.TopicPartition]int16, error) {
	op := ProduceOperation(version)
	deadline := c.cfg.Clock.Now().Add(min(100*time.Millisecond, c.cfg.RequestTimeout))
	for {
		res, err := c.VerifyTransaction(ctx, transactionalID, pid, epoch, parts, op)
		if err != nil {
			return nil, err
		}
		retry := op.adds() && len(res) > 0 && c.cfg.Clock.Now().Before(deadline)
		for _, code := range res {
			retry = retry && code == kerr.ConcurrentTransactions.Code
		}
		if !retry {
			for tp, code := range res {
				res[tp] = ProduceError(code, op)
			}
			return res, nil
		}
		if err := c.sleep(ctx, 20*time.Millisecond); err != nil {
			return nil, err
		}
	}
}

// sleep waits d on the coordinator's clock.
func (c *Coordinator) sleep(ctx context.Context, d time.Duration) error {
	ch := make(chan struct{})
	t := c.cfg.Clock.AfterFunc(d, func() { close(ch) })
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		t.Stop()
		return ctx.Err()
	}
}

// ProduceError maps a verification failure to a Produce answer, as
// Kafka's ReplicaManager does: a coordinator that could not be reached or
// asked is NOT_ENOUGH_REPLICAS (retriable for every producer), as is a
// transaction still completing under the classic protocol.
func ProduceError(code int16, op Operation) int16 {
	switch code {
	case kerr.NetworkException.Code, kerr.CoordinatorLoadInProgress.Code,
		kerr.CoordinatorNotAvailable.Code, kerr.NotCoordinator.Code:
		return kerr.NotEnoughReplicas.Code
	case kerr.ConcurrentTransactions.Code:
		if !op.adds() {
			return kerr.NotEnoughReplicas.Code
		}
	}
	return code
}

// TxnOffsetCommitError maps a verification failure to a TxnOffsetCommit
// answer, as Kafka's group coordinator maps a failed transactional write.
func TxnOffsetCommitError(code int16) int16 {
	switch code {
	case kerr.NetworkException.Code:
		return kerr.CoordinatorLoadInProgress.Code
	case kerr.UnknownTopicOrPartition.Code, kerr.NotEnoughReplicas.Code, kerr.RequestTimedOut.Code:
		return kerr.CoordinatorNotAvailable.Code
	case kerr.NotLeaderForPartition.Code, kerr.KafkaStorageError.Code:
		return kerr.NotCoordinator.Code
	case kerr.MessageTooLarge.Code, kerr.RecordListTooLarge.Code, kerr.InvalidFetchSize.Code:
		return kerr.UnknownServerError.Code
	}
	return code
}

// enqueue queues a call for node's next request. A call of the same
// transaction already queued is replaced: the one with the older epoch is
// INVALID_PRODUCER_EPOCH, an equal one NETWORK_EXCEPTION (its client
// retries), as Kafka does.
func (v *verifier) enqueue(node int32, call *verifyCall) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.closed {
		call.fail(kerr.NetworkException.Code)
		return
	}
	n := v.nodes[node]
	if n == nil {
		n = &verifyNode{wake: make(chan struct{}, 1)}
		v.nodes[node] = n
		v.c.wg.Add(1)
		go func() {
			defer v.c.wg.Done()
			v.run(node, n)
		}()
	}
	for k, old := range n.queue {
		if old.id != call.id {
			continue
		}
		if old.epoch > call.epoch {
			call.fail(kerr.InvalidProducerEpoch.Code)
			return
		}
		code := kerr.NetworkException.Code
		if old.epoch < call.epoch {
			code = kerr.InvalidProducerEpoch.Code
		}
		old.fail(code)
		n.queue[k] = call
		poke(n.wake)
		return
	}
	n.queue = append(n.queue, call)
	poke(n.wake)
}

// run is one node's goroutine.
func (v *verifier) run(node int32, n *verifyNode) {
	ctx := v.c.ctx
	for {
		select {
		case <-n.wake:
		case <-ctx.Done():
			return
		}
		v.mu.Lock()
		calls := n.queue
		n.queue = nil
		v.mu.Unlock()
		if len(calls) > 0 {
			v.send(ctx, node, calls)
		}
	}
}

// send asks node about calls in one request and answers each.
func (v *verifier) send(ctx context.Context, node int32, calls []*verifyCall) {
	req := kmsg.NewPtrAddPartitionsToTxnRequest()
	req.Version = 5
	for _, call := range calls {
		t := kmsg.NewAddPartitionsToTxnRequestTransaction()
		t.TransactionalID, t.ProducerID, t.ProducerEpoch, t.VerifyOnly = call.id, call.pid, call.epoch, !call.op.adds()
		byTopic(call.parts, func(topic string, run []txn.TopicPartition) {
			rt := kmsg.NewAddPartitionsToTxnRequestTransactionTopic()
			rt.Topic, rt.Partitions = topic, partitionIDs(run)
			t.Topics = append(t.Topics, rt)
		})
		req.Transactions = append(req.Transactions, t)
	}
	rctx, cancel := context.WithTimeout(ctx, v.c.cfg.RequestTimeout)
	kresp, err := v.c.cfg.Host.Send(rctx, node, req)
	cancel()
	resp, ok := kresp.(*kmsg.AddPartitionsToTxnResponse)
	if err != nil || !ok {
		for _, call := range calls {
			call.fail(kerr.NetworkException.Code)
		}
		return
	}
	if code := resp.ErrorCode; code != 0 {
		if code == kerr.ClusterAuthorizationFailed.Code {
			code = kerr.InvalidTxnState.Code
		}
		for _, call := range calls {
			call.fail(code)
		}
		return
	}
	byID := make(map[string]*kmsg.AddPartitionsToTxnResponseTransaction, len(resp.Transactions))
	for k := range resp.Transactions {
		byID[resp.Transactions[k].TransactionalID] = &resp.Transactions[k]
	}
	for _, call := range calls {
		rt := byID[call.id]
		if rt == nil {
			call.fail(kerr.NetworkException.Code)
			continue
		}
		res := make(map[txn.TopicPartition]int16)
		for _, t := range rt.Topics {
			for _, p := range t.Partitions {
				code := p.ErrorCode
				switch {
				case code == 0:
					continue
				case code == kerr.ProducerFenced.Code:
					code = kerr.InvalidProducerEpoch.Code
				case code == kerr.TransactionAbortable.Code && call.op == VerifyOnly:
					code = kerr.InvalidTxnState.Code
				}
				res[txn.TopicPartition{Topic: t.Topic, Partition: p.Partition}] = code
			}
		}
		call.result <- res
	}
}
