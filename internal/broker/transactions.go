package broker

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/clock"
	"weir/internal/config"
	"weir/internal/internaltopics"
	wlog "weir/internal/log"
	"weir/internal/producer"
	"weir/internal/server"
	"weir/internal/txn"
	"weir/internal/txn/coordinator"
	"weir/internal/txn/verification"
)

// Transactions: the transaction coordinator (internal/txn/coordinator)
// runs on every node over the __transaction_state partitions it leads;
// this file is its Host, has its topic created
// (kraft.AutoTopicCreationManager) on the first FindCoordinator of a
// transactional id, tells it of leadership changes, and is the Host of
// internal/txn/verification, which verifies transactional Produce batches
// with it (KIP-890) before they are appended. The handlers 22, 24-28, 61, 65 and 66 only call it, the
// group coordinator and the partition logs.

// txnTopic is the transaction coordinator's internal topic.
const txnTopic = coordinator.Topic

// txnHost implements coordinator.Host over the broker.
type txnHost struct{ b *Broker }

func (h txnHost) Partitions() int {
	t := h.b.lookupTopic(txnTopic)
	if t == nil {
		return 0
	}
	h.b.mu.RLock()
	defer h.b.mu.RUnlock()
	return len(t.partitions)
}

func (h txnHost) Replica(i int32) coordinator.Replica {
	p := h.b.localPartition(txnTopic, i)
	if p == nil || p.rep == nil {
		return nil
	}
	return p.rep
}

func (h txnHost) PartitionLeader(topic string, i int32) (int32, bool) {
	t := h.b.lookupTopic(topic)
	if t == nil {
		return -1, false
	}
	h.b.mu.RLock()
	defer h.b.mu.RUnlock()
	if i < 0 || int(i) >= len(t.partitions) {
		return -1, false
	}
	return t.partitions[i].leader(), true
}

// Send sends a request to another node over the inter-broker listener,
// whose principal needs CLUSTER_ACTION there; one to this node is served
// without a connection, by the broker itself, so it is not authorized:
// a single node needs no inter-broker credentials, and a principal its
// listener would give the loopback connection (User:ANONYMOUS) needs no
// ACLs, as the controller's local path needs none.
func (h txnHost) Send(ctx context.Context, node int32, req kmsg.Request) (kmsg.Response, error) {
	if node != h.b.cfg.NodeID {
		return h.b.transport.Send(ctx, node, req)
	}
	hd, ok := handlers[req.Key()]
	if !ok {
		return nil, fmt.Errorf("broker: no handler for %s", kmsg.NameForKey(req.Key()))
	}
	r := &server.Request{Key: req.Key(), Version: req.GetVersion(), ClientID: replicaClientPrefix + itoa(h.b.cfg.NodeID), Body: req}
	resp, ok := hd.serve(h.b, ctx, r).Response(ctx)
	if !ok {
		return nil, fmt.Errorf("broker: %s to this node: no answer", kmsg.NameForKey(req.Key()))
	}
	return resp, nil
}

func (h txnHost) NextProducerID() (int64, error) { return h.b.producerIDs.NextID() }

// localPartition is partition i of a topic in the registry, nil when
// either does not exist.
func (b *Broker) localPartition(topic string, i int32) *partition {
	t := b.lookupTopic(topic)
	if t == nil {
		return nil
	}
	b.mu.RLock()
	defer b.mu.RUnlock()
	if i < 0 || int(i) >= len(t.partitions) {
		return nil
	}
	return t.partitions[i]
}

// newTxnCoordinator starts the transaction coordinator; it loads nothing
// until LeadershipChanged finds __transaction_state partitions led here.
func (b *Broker) newTxnCoordinator() (*coordinator.Coordinator, error) {
	s := b.settings()
	return coordinator.New(coordinator.Config{
		Host:               txnHost{b: b},
		Logger:             b.logger.With("component", "txn"),
		Clock:              clock.System(),
		MaxTimeout:         s.Millis(config.TransactionMaxTimeout),
		IDExpiration:       s.Millis(config.TransactionalIDExpiration),
		AbortInterval:      s.Millis(config.TransactionAbortInterval),
		ExpirationInterval: s.Millis(config.TransactionExpirationInterval),
	})
}

// txnLeadershipChanged tells the transaction coordinator to load the
// __transaction_state partitions this node now leads and to unload the
// others. Called with no broker lock held.
func (b *Broker) txnLeadershipChanged() {
	if b.txn != nil && b.started.Load() {
		b.txn.LeadershipChanged()
	}
}

// txnCoordinatorNode is the node coordinating a transactional id, -1
// while there is none (the topic is created here on first use, as Kafka
// does; clients retry FindCoordinator meanwhile).
func (b *Broker) txnCoordinatorNode(id string) int32 {
	node, exists := b.txn.CoordinatorNode(id)
	if !exists {
		b.autoTopics.EnsureAsync(internaltopics.Transactions(b.settings()))
	}
	return node
}

// verifyProduce verifies a transactional Produce request's batches with
// their transaction's coordinator before anything is appended
// (internal/txn/verification).
func (b *Broker) verifyProduce(ctx context.Context, r *kmsg.ProduceRequest) map[verification.Partition]verification.Guard {
	if b.cfg.NullStorage {
		return nil
	}
	return verification.Produce(ctx, produceHost{b}, b.txn, r, b.settings().Bool(config.TransactionPartitionVerify))
}

// produceHost is the broker as internal/txn/verification sees it.
type produceHost struct{ b *Broker }

func (h produceHost) Partition(name string, id [16]byte, byID bool, i int32) (verification.Partition, bool) {
	var t *topic
	if byID {
		t = h.b.lookupTopicID(id)
	} else {
		t = h.b.lookupTopic(name)
	}
	if t == nil || t.internal {
		return nil, false
	}
	p, err := h.b.partitionOf(t, i)
	if err != nil {
		return nil, false
	}
	return p, true
}

// TopicPartition, Producers and WithProducers make a partition led here
// a verification.Partition.
func (p *partition) TopicPartition() txn.TopicPartition {
	return txn.TopicPartition{Topic: p.topic.name, Partition: p.index}
}

func (p *partition) Producers() *producer.State { return p.producers() }

func (p *partition) WithProducers(fn func()) { p.rep.LogToWrite().WithProducers(fn) }

// startProducerExpiration forgets, every
// producer.id.expiration.check.interval.ms, the producers of each local
// partition idle for producer.id.expiration.ms.
func (b *Broker) startProducerExpiration() *producer.Expiration {
	return producer.StartExpiration(producer.ExpirationConfig{
		Every: b.settings().Millis(config.ProducerIDExpirationCheckPeriod), Partitions: b.localLogs, Logger: b.logger,
	})
}

// localLogs lists the log of every partition this node holds a replica
// of.
func (b *Broker) localLogs() []producer.Expirer {
	b.mu.RLock()
	defer b.mu.RUnlock()
	var out []producer.Expirer
	for _, t := range b.topics {
		for _, p := range t.partitions {
			if p.rep != nil {
				out = append(out, p.log())
			}
		}
	}
	return out
}

// txnCall answers a request the transaction coordinator serves off the
// request path (it waits for state writes); an error (the request was
// abandoned) closes the connection.
func (b *Broker) txnCall(ctx context.Context, fn func(ctx context.Context) (kmsg.Response, error)) *server.Reply {
	return b.async(ctx, func(ctx context.Context) kmsg.Response {
		resp, err := fn(ctx)
		if err != nil {
			return nil
		}
		return resp
	})
}

// readIsolated reads a consumer's fetch of p at an isolation level
// (read_committed stops at the last stable offset) and fills the answer's
// LastStableOffset and, for read_committed, the aborted transactions
// overlapping the records returned, from the aborted-transaction index.
func (p *partition) readIsolated(offset, maxBytes, hw int64, iso wlog.Isolation, sp *kmsg.FetchResponseTopicPartition) (wlog.ReadResult, error) {
	res, err := p.log().ReadIsolated(nil, offset, maxBytes, hw, iso)
	if err != nil {
		return res.ReadResult, err
	}
	sp.LastStableOffset = res.LastStableOffset
	if iso == wlog.ReadCommitted {
		sp.AbortedTransactions = make([]kmsg.FetchResponseTopicPartitionAbortedTransaction, 0, len(res.Aborted))
		for _, a := range res.Aborted {
			at := kmsg.NewFetchResponseTopicPartitionAbortedTransaction()
			at.ProducerID, at.FirstOffset = a.ProducerID, a.FirstOffset
			sp.AbortedTransactions = append(sp.AbortedTransactions, at)
		}
	}
	return res.ReadResult, nil
}

// latestOffset is ListOffsets' latest offset for a consumer at an
// isolation level: the high watermark, or the last stable offset for
// read_committed.
func (p *partition) latestOffset(hw int64, iso wlog.Isolation) int64 {
	if iso == wlog.ReadCommitted {
		return p.log().LastStableOffset(hw)
	}
	return hw
}
