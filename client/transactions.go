package client

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Transactions: a producer with transactional.id writes records in
// transactions that commit or abort atomically across partitions, with
// consumer offsets if asked (SendOffsetsToTransaction), as Java's
// KafkaProducer does. read_committed consumers see a transaction's records
// only once it commits.
//
// Two protocols, chosen at InitTransactions from what the transaction
// coordinator's broker finalizes: KIP-890's (transaction.version 2 with
// EndTxn v5 and Produce v12: the partition leaders add partitions to the
// transaction themselves, the epoch goes up at every commit or abort, and
// TRANSACTION_ABORTABLE tells the producer to abort), and the classic one
// (AddPartitionsToTxn before a partition's first batch, AddOffsetsToTxn
// before offsets, Produce v11 at most).

var (
	// ErrNotTransactional is returned by the transaction methods of a
	// producer without transactional.id.
	ErrNotTransactional = errors.New("client: the producer has no transactional.id")
	// ErrTransactionState is returned for a call the transaction's state
	// does not allow (BeginTransaction twice, a Send outside a
	// transaction, a commit before InitTransactions...).
	ErrTransactionState = errors.New("client: not allowed in the transaction's state")
	// ErrTransactionAbortable wraps the error that failed a record of
	// the transaction: CommitTransaction refuses to commit it; abort it
	// and try again.
	ErrTransactionAbortable = errors.New("client: the transaction must be aborted")
	// ErrProducerFenced wraps the error that makes the producer unusable:
	// another producer with the same transactional.id took over (or the
	// coordinator aborted this one's transaction for its timeout). Close
	// the producer.
	ErrProducerFenced = errors.New("client: the producer is fenced")
)

type txnState uint8

const (
	txnUninitialized txnState = iota
	txnReady                  // initialized, no transaction open
	txnOpen                   // BeginTransaction was called
	txnEnding                 // CommitTransaction or AbortTransaction in progress
	txnFatal                  // fenced: only Close is left
)

// GroupMetadata is what a consumer tells a transactional producer about
// its group membership, so that offsets committed inside a transaction are
// refused if the consumer lost its partitions meanwhile (KIP-447).
type GroupMetadata struct {
	GroupID    string
	Generation int32
	MemberID   string
	InstanceID string
}

// GroupMetadata returns the consumer's group membership for
// Producer.SendOffsetsToTransaction.
func (c *Consumer) GroupMetadata() GroupMetadata {
	gm := GroupMetadata{GroupID: c.cfg.groupID, Generation: -1, InstanceID: c.cfg.instanceID}
	if c.group != nil {
		gm.Generation, gm.MemberID = c.group.identity()
	}
	return gm
}

// txnManager is a transactional producer's transaction state.
type txnManager struct {
	id    string
	coord *coordinator

	mu      sync.Mutex
	state   txnState
	v2      bool                    // KIP-890's protocol
	added   map[TopicPartition]bool // classic: partitions in the transaction
	adding  bool                    // classic: an AddPartitionsToTxn is out
	offsets bool                    // SendOffsetsToTransaction added offsets
	failure error                   // the first record or add failure of the transaction
	fatal   error
}

func newTxnManager(p *Producer, id string) *txnManager {
	return &txnManager{id: id, coord: &coordinator{cl: p.cl, group: id, keyType: 1, node: -1}, added: map[TopicPartition]bool{}}
}

// txnFatalError reports whether err fences the producer for good.
func txnFatalError(err error) bool {
	return errors.Is(err, kerr.ProducerFenced) || errors.Is(err, kerr.InvalidProducerEpoch) ||
		errors.Is(err, kerr.TransactionalIDAuthorizationFailed) || errors.Is(err, kerr.InvalidProducerIDMapping) ||
		errors.Is(err, kerr.ClusterAuthorizationFailed) || errors.Is(err, kerr.UnsupportedForMessageFormat)
}

// txnCall sends a request to the transaction coordinator, finding it
// again on coordinator errors and retrying retriable errors
// (CONCURRENT_TRANSACTIONS while a previous transaction completes) with
// backoff until ctx ends. code reads the response's error.
func (p *Producer) txnCall(ctx context.Context, req kmsg.Request, code func(kmsg.Response) int16) (kmsg.Response, error) {
	t := p.txn
	for attempt := 1; ; attempt++ {
		resp, err := t.coord.do(ctx, req, p.cfg.requestTimeout, func(r kmsg.Response) error { return kerr.ErrorForCode(code(r)) })
		if err == nil || txnFatalError(err) || !txnRetriable(err) || ctx.Err() != nil {
			return resp, err
		}
		tm := time.NewTimer(backoff(p.cfg.retryBackoff/5, p.cfg.retryBackoffMax, attempt, p.o.rand))
		select {
		case <-tm.C:
		case <-ctx.Done():
			tm.Stop()
			return nil, fmt.Errorf("client: transaction %s: %w (last error: %v)", t.id, ctx.Err(), err)
		}
	}
}

// txnRetriable says whether a transactional call may succeed if sent
// again: CONCURRENT_TRANSACTIONS (a previous transaction still
// completing) is, though the protocol does not mark it retriable.
func txnRetriable(err error) bool {
	return errors.Is(err, kerr.ConcurrentTransactions) || isRetriable(err)
}

func (p *Producer) txnOrErr() (*txnManager, error) {
	if p.txn == nil {
		return nil, ErrNotTransactional
	}
	return p.txn, nil
}

// InitTransactions registers transactional.id with its coordinator: the
// producer gets its producer id and epoch, fencing any earlier producer
// with the same id, and whatever transaction that one left open is
// aborted (or completed) first. Call it once, before the first
// transaction.
func (p *Producer) InitTransactions(ctx context.Context) error {
	t, err := p.txnOrErr()
	if err != nil {
		return err
	}
	t.mu.Lock()
	if t.state != txnUninitialized {
		t.mu.Unlock()
		return fmt.Errorf("%w: InitTransactions was called already", ErrTransactionState)
	}
	t.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, p.cfg.maxBlock)
	defer cancel()
	v2, err := p.txnVersion2(ctx)
	if err != nil {
		return err
	}
	req := kmsg.NewPtrInitProducerIDRequest()
	req.TransactionalID = &t.id
	req.TransactionTimeoutMillis = int32(p.cfg.txnTimeout / time.Millisecond)
	req.ProducerID, req.ProducerEpoch = -1, -1
	raw, err := p.txnCall(ctx, req, func(r kmsg.Response) int16 { return r.(*kmsg.InitProducerIDResponse).ErrorCode })
	if err != nil {
		return fmt.Errorf("client: InitTransactions: %w", err)
	}
	resp := raw.(*kmsg.InitProducerIDResponse)
	p.mu.Lock()
	p.pid, p.epoch, p.pidState = resp.ProducerID, resp.ProducerEpoch, pidReady
	p.mu.Unlock()
	t.mu.Lock()
	t.state, t.v2 = txnReady, v2
	t.mu.Unlock()
	p.log.Info("transactional producer initialized", "transactional_id", t.id, "producer_id", resp.ProducerID, logEpoch, resp.ProducerEpoch, "transaction_version_2", v2)
	return nil
}

// txnVersion2 asks the transaction coordinator's broker whether the
// cluster finalizes transaction.version 2 and serves what it takes
// (EndTxn v5, Produce v12).
func (p *Producer) txnVersion2(ctx context.Context) (bool, error) {
	if p.cfg.txnClassic {
		return false, nil
	}
	node, err := p.txn.coord.get(ctx)
	if err != nil {
		return false, fmt.Errorf("client: InitTransactions: %w", err)
	}
	conn, err := p.cl.conn(ctx, node)
	if err != nil {
		return false, fmt.Errorf("client: InitTransactions: %w", err)
	}
	endTxn, ok1 := conn.Version(26)
	produce, ok2 := conn.Version(0)
	if !ok1 || !ok2 || endTxn < 5 || produce < 12 {
		return false, nil
	}
	req := kmsg.NewPtrApiVersionsRequest()
	req.ClientSoftwareName, req.ClientSoftwareVersion = "weir-go", "1"
	raw, err := conn.Do(ctx, req, p.cfg.requestTimeout)
	if err != nil {
		return false, fmt.Errorf("client: InitTransactions: ApiVersions: %w", err)
	}
	for _, f := range raw.(*kmsg.ApiVersionsResponse).FinalizedFeatures {
		if f.Name == "transaction.version" && f.MaxVersionLevel >= 2 {
			return true, nil
		}
	}
	return false, nil
}

// BeginTransaction opens a transaction: records sent from now until
// CommitTransaction or AbortTransaction belong to it.
func (p *Producer) BeginTransaction() error {
	t, err := p.txnOrErr()
	if err != nil {
		return err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	switch t.state {
	case txnReady:
		t.state = txnOpen
		clear(t.added)
		t.failure = nil
		return nil
	case txnFatal:
		return t.fatal
	}
	return fmt.Errorf("%w: BeginTransaction in state %d", ErrTransactionState, t.state)
}

// txnSendable is nil when a record may be sent now: always without
// transactional.id, else only inside an open transaction.
func (p *Producer) txnSendable() error {
	t := p.txn
	if t == nil {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	switch t.state {
	case txnOpen:
		return nil
	case txnFatal:
		return t.fatal
	}
	return fmt.Errorf("%w: Send outside a transaction", ErrTransactionState)
}

// txnBatchFailed notes a record failure of the open transaction: a
// fencing error makes the producer fatal, any other makes the transaction
// abortable.
func (p *Producer) txnBatchFailed(err error) {
	t := p.txn
	if t == nil || err == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if txnFatalError(err) {
		t.setFatalLocked(err)
		return
	}
	if t.failure == nil {
		t.failure = err
	}
}

func (t *txnManager) setFatalLocked(err error) {
	if t.state != txnFatal {
		t.state = txnFatal
		t.fatal = fmt.Errorf("%w: %w", ErrProducerFenced, err)
	}
}

// txnDrainable says whether a partition's batches may be sent: under the
// classic protocol only once AddPartitionsToTxn added it.
func (p *Producer) txnDrainable(tp TopicPartition) bool {
	t := p.txn
	if t == nil {
		return true
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.v2 || t.added[tp]
}

// txnAddPartitions starts, under the classic protocol, one
// AddPartitionsToTxn for the partitions with queued batches that are not
// in the transaction yet; the sender drains them once it answers.
func (p *Producer) txnAddPartitions() {
	t := p.txn
	if t == nil {
		return
	}
	t.mu.Lock()
	if t.v2 || t.adding || t.state != txnOpen && t.state != txnEnding {
		t.mu.Unlock()
		return
	}
	var want []TopicPartition
	p.topicsMu.RLock()
	for _, ts := range p.topics {
		for _, q := range ts.all() {
			if q == nil {
				continue
			}
			tp := TopicPartition{Topic: ts.name, Partition: q.partition}
			if t.added[tp] {
				continue
			}
			q.mu.Lock()
			queued := len(q.batches) > 0
			q.mu.Unlock()
			if queued {
				want = append(want, tp)
			}
		}
	}
	p.topicsMu.RUnlock()
	if len(want) == 0 {
		t.mu.Unlock()
		return
	}
	t.adding = true
	t.mu.Unlock()
	p.mu.Lock()
	pid, epoch := p.pid, p.epoch
	p.mu.Unlock()
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		err := p.addPartitions(pid, epoch, want)
		t.mu.Lock()
		t.adding = false
		switch {
		case err == nil:
			for _, tp := range want {
				t.added[tp] = true
			}
		case txnFatalError(err):
			t.setFatalLocked(err)
		default:
			if t.failure == nil {
				t.failure = err
			}
		}
		t.mu.Unlock()
		if err != nil {
			// The queued batches cannot be sent in this transaction.
			p.failUnsent(want, fmt.Errorf("%w: %w", ErrTransactionAbortable, err))
		}
		p.wakeup()
	}()
}

func (p *Producer) addPartitions(pid int64, epoch int16, tps []TopicPartition) error {
	ctx, cancel := context.WithTimeout(p.cl.ctx, p.cfg.deliveryTimeout)
	defer cancel()
	req := kmsg.NewPtrAddPartitionsToTxnRequest()
	req.SetVersion(3)
	req.TransactionalID, req.ProducerID, req.ProducerEpoch = p.txn.id, pid, epoch
	idx := map[string]int{}
	for _, tp := range tps {
		i, ok := idx[tp.Topic]
		if !ok {
			i = len(req.Topics)
			idx[tp.Topic] = i
			rt := kmsg.NewAddPartitionsToTxnRequestTopic()
			rt.Topic = tp.Topic
			req.Topics = append(req.Topics, rt)
		}
		req.Topics[i].Partitions = append(req.Topics[i].Partitions, tp.Partition)
	}
	// A partition's own error decides: the first one found is the
	// request's (CONCURRENT_TRANSACTIONS and coordinator errors retry).
	first := func(r kmsg.Response) int16 {
		for _, t := range r.(*kmsg.AddPartitionsToTxnResponse).Topics {
			for _, pt := range t.Partitions {
				if pt.ErrorCode != 0 && pt.ErrorCode != kerr.OperationNotAttempted.Code {
					return pt.ErrorCode
				}
			}
		}
		return 0
	}
	_, err := p.txnCall(ctx, req, first)
	if err != nil {
		return fmt.Errorf("client: AddPartitionsToTxn: %w", err)
	}
	return nil
}

// failUnsent fails the queued batches of partitions with err.
func (p *Producer) failUnsent(tps []TopicPartition, err error) {
	for _, tp := range tps {
		ts := p.topic(tp.Topic)
		for _, q := range ts.all() {
			if q == nil || q.partition != tp.Partition {
				continue
			}
			q.mu.Lock()
			bs := q.batches
			q.batches = nil
			q.mu.Unlock()
			for _, b := range bs {
				p.finish(b, -1, -1, err)
			}
		}
	}
}

// SendOffsetsToTransaction commits a consumer group's offsets (the next
// offset to read of each partition) as part of the open transaction: they
// become the group's committed offsets if and only if the transaction
// commits. group is the consumer's GroupMetadata, so that a consumer that
// lost its partitions in a rebalance cannot commit them.
func (p *Producer) SendOffsetsToTransaction(ctx context.Context, offsets map[TopicPartition]int64, group GroupMetadata) error {
	t, err := p.txnOrErr()
	if err != nil {
		return err
	}
	t.mu.Lock()
	state, v2 := t.state, t.v2
	t.mu.Unlock()
	if state == txnFatal {
		return t.fatal
	}
	if state != txnOpen {
		return fmt.Errorf("%w: SendOffsetsToTransaction outside a transaction", ErrTransactionState)
	}
	ctx, cancel := context.WithTimeout(ctx, p.cfg.maxBlock)
	defer cancel()
	p.mu.Lock()
	pid, epoch := p.pid, p.epoch
	p.mu.Unlock()
	if !v2 {
		req := kmsg.NewPtrAddOffsetsToTxnRequest()
		req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Group = t.id, pid, epoch, group.GroupID
		if _, err := p.txnCall(ctx, req, func(r kmsg.Response) int16 { return r.(*kmsg.AddOffsetsToTxnResponse).ErrorCode }); err != nil {
			return p.txnFailed(fmt.Errorf("client: AddOffsetsToTxn: %w", err))
		}
	}
	req := kmsg.NewPtrTxnOffsetCommitRequest()
	if !v2 {
		req.SetVersion(3)
	}
	req.TransactionalID, req.Group, req.ProducerID, req.ProducerEpoch = t.id, group.GroupID, pid, epoch
	req.Generation, req.MemberID = group.Generation, group.MemberID
	if group.InstanceID != "" {
		req.InstanceID = &group.InstanceID
	}
	idx := map[string]int{}
	for tp, off := range offsets {
		i, ok := idx[tp.Topic]
		if !ok {
			i = len(req.Topics)
			idx[tp.Topic] = i
			rt := kmsg.NewTxnOffsetCommitRequestTopic()
			rt.Topic = tp.Topic
			req.Topics = append(req.Topics, rt)
		}
		rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset, rp.LeaderEpoch = tp.Partition, off, -1
		req.Topics[i].Partitions = append(req.Topics[i].Partitions, rp)
	}
	gco := &coordinator{cl: p.cl, group: group.GroupID, node: -1}
	for attempt := 1; ; attempt++ {
		_, err := gco.do(ctx, req, p.cfg.requestTimeout, func(r kmsg.Response) error {
			for _, rt := range r.(*kmsg.TxnOffsetCommitResponse).Topics {
				for _, rp := range rt.Partitions {
					if err := kerr.ErrorForCode(rp.ErrorCode); err != nil {
						return err
					}
				}
			}
			return nil
		})
		if err == nil {
			t.mu.Lock()
			t.offsets = true
			t.mu.Unlock()
			return nil
		}
		if txnFatalError(err) || !txnRetriable(err) || ctx.Err() != nil {
			return p.txnFailed(fmt.Errorf("client: TxnOffsetCommit: %w", err))
		}
		tm := time.NewTimer(backoff(p.cfg.retryBackoff/5, p.cfg.retryBackoffMax, attempt, p.o.rand))
		select {
		case <-tm.C:
		case <-ctx.Done():
			tm.Stop()
		}
	}
}

// txnFailed records a failed transactional call and returns its error:
// fatal when it fences the producer, else the transaction is abortable.
func (p *Producer) txnFailed(err error) error {
	t := p.txn
	t.mu.Lock()
	defer t.mu.Unlock()
	if txnFatalError(err) {
		t.setFatalLocked(err)
		return t.fatal
	}
	if t.failure == nil {
		t.failure = err
	}
	return fmt.Errorf("%w: %w", ErrTransactionAbortable, err)
}

// CommitTransaction sends every record of the open transaction, waits for
// their results and commits it. If a record or SendOffsetsToTransaction
// failed, nothing is committed and the error wraps
// ErrTransactionAbortable: abort the transaction. A fenced producer gets
// an error wrapping ErrProducerFenced.
func (p *Producer) CommitTransaction(ctx context.Context) error {
	return p.endTransaction(ctx, true)
}

// AbortTransaction waits for the records sent so far and aborts the open
// transaction: read_committed consumers never see them, and offsets sent
// with it are not committed.
func (p *Producer) AbortTransaction(ctx context.Context) error {
	return p.endTransaction(ctx, false)
}

func (p *Producer) endTransaction(ctx context.Context, commit bool) error {
	t, err := p.txnOrErr()
	if err != nil {
		return err
	}
	t.mu.Lock()
	switch t.state {
	case txnOpen:
		t.state = txnEnding
	case txnFatal:
		t.mu.Unlock()
		return t.fatal
	default:
		t.mu.Unlock()
		return fmt.Errorf("%w: no transaction is open", ErrTransactionState)
	}
	t.mu.Unlock()
	reopen := func() {
		t.mu.Lock()
		if t.state == txnEnding {
			t.state = txnOpen
		}
		t.mu.Unlock()
	}
	if err := p.Flush(ctx); err != nil {
		reopen()
		return err
	}
	t.mu.Lock()
	failure, fatal, v2, added := t.failure, t.fatal, t.v2, len(t.added)
	t.mu.Unlock()
	if fatal != nil {
		return fatal
	}
	if commit && failure != nil {
		reopen()
		return fmt.Errorf("%w: %w", ErrTransactionAbortable, failure)
	}
	p.mu.Lock()
	pid, epoch := p.pid, p.epoch
	p.mu.Unlock()
	// Under the classic protocol a transaction that added nothing has
	// nothing to end at the coordinator.
	if v2 || added > 0 || p.txnOffsetsSent() {
		req := kmsg.NewPtrEndTxnRequest()
		if !v2 {
			req.SetVersion(4)
		}
		req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit = t.id, pid, epoch, commit
		ctx, cancel := context.WithTimeout(ctx, p.cfg.maxBlock)
		defer cancel()
		raw, err := p.txnCall(ctx, req, func(r kmsg.Response) int16 { return r.(*kmsg.EndTxnResponse).ErrorCode })
		if err != nil {
			err = fmt.Errorf("client: EndTxn: %w", err)
			t.mu.Lock()
			if txnFatalError(err) {
				t.setFatalLocked(err)
				err = t.fatal
			}
			t.mu.Unlock()
			reopen()
			return err
		}
		if resp := raw.(*kmsg.EndTxnResponse); v2 && resp.ProducerID >= 0 {
			// KIP-890: every transaction ends with a new epoch (or a new
			// producer id once the epochs run out); sequences restart.
			p.newProducerEpoch(resp.ProducerID, resp.ProducerEpoch)
		}
	}
	t.mu.Lock()
	if t.state == txnEnding {
		t.state = txnReady
	}
	clear(t.added)
	t.failure = nil
	t.offsets = false
	t.mu.Unlock()
	return nil
}

// txnOffsetsSent reports whether the open transaction carries offsets.
func (p *Producer) txnOffsetsSent() bool {
	t := p.txn
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.offsets
}

// newProducerEpoch installs the producer id and epoch EndTxn v5 returned
// and restarts every partition's sequences.
func (p *Producer) newProducerEpoch(pid int64, epoch int16) {
	p.mu.Lock()
	p.pid, p.epoch = pid, epoch
	p.mu.Unlock()
	p.resetSequences()
}

// txnVersion2Active reports whether the producer runs KIP-890's
// transaction protocol (always for a producer without transactions,
// which Produce v12 does not concern).
func (p *Producer) txnVersion2Active() bool {
	t := p.txn
	if t == nil {
		return true
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.v2
}

// resetSequences restarts every partition's sequences from 0 (a new
// producer id or epoch).
func (p *Producer) resetSequences() {
	p.topicsMu.RLock()
	for _, t := range p.topics {
		for _, q := range t.all() {
			if q == nil {
				continue
			}
			q.mu.Lock()
			q.nextSeq = 0
			q.inflight = nil
			for _, b := range q.batches {
				b.seq = -1
			}
			q.mu.Unlock()
		}
	}
	p.topicsMu.RUnlock()
}
