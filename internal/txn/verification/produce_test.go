package verification

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	wlog "weir/internal/log"
	"weir/internal/producer"
	"weir/internal/txn"
	"weir/internal/txn/coordinator"
)

const (
	pid   = int64(1000)
	epoch = int16(3)
)

// coordinatorNode is the node coordinating every transactional id: a
// fake answering each AddPartitionsToTxn with a code per partition, or
// failing to be reached, or never answering until gate closes.
type coordinatorNode struct {
	mu    sync.Mutex
	codes map[txn.TopicPartition]int16
	err   error
	gate  chan struct{}
	reqs  []*kmsg.AddPartitionsToTxnRequest
}

func (h *coordinatorNode) Partitions() int                             { return 1 }
func (h *coordinatorNode) Replica(int32) coordinator.Replica           { return nil }
func (h *coordinatorNode) NextProducerID() (int64, error)              { return 0, errors.New("no ids here") }
func (h *coordinatorNode) PartitionLeader(string, int32) (int32, bool) { return 2, true }

func (h *coordinatorNode) Send(ctx context.Context, node int32, req kmsg.Request) (kmsg.Response, error) {
	r, ok := req.(*kmsg.AddPartitionsToTxnRequest)
	if !ok || node != 2 {
		return nil, fmt.Errorf("unexpected %s to node %d", kmsg.NameForKey(req.Key()), node)
	}
	h.mu.Lock()
	h.reqs = append(h.reqs, r)
	codes, err, gate := h.codes, h.err, h.gate
	h.mu.Unlock()
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if err != nil {
		return nil, err
	}
	resp := r.ResponseKind().(*kmsg.AddPartitionsToTxnResponse)
	for _, t := range r.Transactions {
		rt := kmsg.NewAddPartitionsToTxnResponseTransaction()
		rt.TransactionalID = t.TransactionalID
		for _, tt := range t.Topics {
			rtt := kmsg.NewAddPartitionsToTxnResponseTransactionTopic()
			rtt.Topic = tt.Topic
			for _, i := range tt.Partitions {
				rp := kmsg.NewAddPartitionsToTxnResponseTransactionTopicPartition()
				rp.Partition, rp.ErrorCode = i, codes[txn.TopicPartition{Topic: tt.Topic, Partition: i}]
				rtt.Partitions = append(rtt.Partitions, rp)
			}
			rt.Topics = append(rt.Topics, rtt)
		}
		resp.Transactions = append(resp.Transactions, rt)
	}
	return resp, nil
}

func (h *coordinatorNode) requests() []*kmsg.AddPartitionsToTxnRequest {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]*kmsg.AddPartitionsToTxnRequest(nil), h.reqs...)
}

// leader is a partition led here, over a real producer state.
type leader struct {
	tp txn.TopicPartition
	mu sync.Mutex // the log's producer lock
	st *producer.State
}

func (p *leader) TopicPartition() txn.TopicPartition { return p.tp }
func (p *leader) Producers() *producer.State         { return p.st }
func (p *leader) WithProducers(fn func()) {
	p.mu.Lock()
	defer p.mu.Unlock()
	fn()
}

// node leads the partitions of its topics; a topic is also known by the
// id whose first byte is its index in ids.
type node struct {
	parts map[txn.TopicPartition]*leader
	ids   []string
}

func newNode(tps ...txn.TopicPartition) *node {
	n := &node{parts: make(map[txn.TopicPartition]*leader)}
	for _, tp := range tps {
		n.parts[tp] = &leader{tp: tp, st: producer.NewState(producer.Options{})}
		n.ids = append(n.ids, tp.Topic)
	}
	return n
}

func topicID(i int) [16]byte { return [16]byte{byte(i + 1)} }

func (n *node) Partition(topic string, id [16]byte, byID bool, i int32) (Partition, bool) {
	if byID {
		topic = ""
		if k := int(id[0]) - 1; k >= 0 && k < len(n.ids) {
			topic = n.ids[k]
		}
	}
	p, ok := n.parts[txn.TopicPartition{Topic: topic, Partition: i}]
	if !ok {
		return nil, false
	}
	return p, true
}

func tp(topic string, i int32) txn.TopicPartition {
	return txn.TopicPartition{Topic: topic, Partition: i}
}

// batch is a producer's batch of one record, transactional or not.
func batch(producerID int64, producerEpoch int16, transactional bool) []byte {
	var bb wlog.BatchBuilder
	bb.Add(1, nil, []byte("v"), nil)
	if transactional {
		return bb.BuildTransactional(producerID, producerEpoch)
	}
	b := bb.Build()
	return b
}

// produce is a Produce request of version v with one batch per partition.
func produce(v int16, id *string, timeoutMs int32, byID bool, batches map[txn.TopicPartition][]byte, n *node) *kmsg.ProduceRequest {
	r := kmsg.NewPtrProduceRequest()
	r.Version, r.TransactionID, r.Acks, r.TimeoutMillis = v, id, -1, timeoutMs
	for tp, b := range batches {
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = tp.Topic
		if byID {
			rt.Topic = ""
			for k, name := range n.ids {
				if name == tp.Topic {
					rt.TopicID = topicID(k)
				}
			}
		}
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Partition, rp.Records = tp.Partition, b
		rt.Partitions = append(rt.Partitions, rp)
		r.Topics = append(r.Topics, rt)
	}
	return r
}

func code(err error) int16 {
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Code
	}
	if err != nil {
		return -1
	}
	return 0
}

// guardKind tells the append guards apart by what they do with the
// producer's next batch once a marker ended its transaction on the
// partition: the verification guard refuses it (its verification ended
// with the marker), the epoch check alone accepts it.
func guardKind(t *testing.T, p *leader, g Guard) string {
	t.Helper()
	if g.Append == nil {
		return "none"
	}
	h, err := wlog.ParseBatchHeader(batch(pid, epoch, true))
	if err != nil {
		t.Fatal(err)
	}
	h.BaseSequence = 0
	if err := g.Append(wlog.BatchInfo{BatchHeader: h}, 0); err != nil {
		t.Fatalf("the guard refuses the producer's batch before any marker: %v", err)
	}
	mh, err := wlog.ParseBatchHeader(wlog.MarkerBatch(pid, epoch, wlog.Marker{Type: wlog.ControlAbort}, 1))
	if err != nil {
		t.Fatal(err)
	}
	p.WithProducers(func() { p.st.Apply(&mh, &wlog.Marker{Type: wlog.ControlAbort}) })
	switch err := g.Append(wlog.BatchInfo{BatchHeader: h}, 0); code(err) {
	case 0:
		return "epoch"
	case kerr.InvalidTxnState.Code:
		return "verification"
	default:
		t.Fatalf("after a marker: %v", err)
	}
	return ""
}

// A leader asks the coordinator about the transactional batches of a
// Produce request before appending them: once for every partition, verify
// only for the classic protocol and adding the partition for transaction
// version 2, and answers each partition with the coordinator's refusal
// mapped to a Produce code, or appends it under the guard the answer
// calls for.
func TestProduce(t *testing.T) {
	a0, a1, b0 := tp("a", 0), tp("a", 1), tp("b", 0)
	id := "t"
	for _, tc := range []struct {
		name      string
		version   int16
		verifyAll bool
		byID      bool
		txnID     *string
		batches   map[txn.TopicPartition][]byte
		codes     map[txn.TopicPartition]int16 // the coordinator's answer
		sendErr   error
		ongoing   bool  // the producer's transaction is ongoing on a0 at its epoch
		timeout   int32 // the request's, in ms; the coordinator never answers when set
		asked     []txn.TopicPartition
		addOnly   bool                         // the request adds (VerifyOnly false)
		want      map[txn.TopicPartition]int16 // each guard's error code
		guards    map[txn.TopicPartition]string
	}{{
		name: "not transactional", version: 9, verifyAll: true,
		batches: map[txn.TopicPartition][]byte{a0: batch(pid, epoch, true)},
	}, {
		name: "non-transactional batch", version: 9, verifyAll: true, txnID: &id,
		batches: map[txn.TopicPartition][]byte{a0: batch(pid, epoch, false)},
	}, {
		name: "not led here", version: 9, verifyAll: true, txnID: &id,
		batches: map[txn.TopicPartition][]byte{tp("c", 0): batch(pid, epoch, true), a0: []byte("short")},
	}, {
		name: "verify only, in the transaction", version: 9, verifyAll: true, txnID: &id,
		batches: map[txn.TopicPartition][]byte{a0: batch(pid, epoch, true), b0: batch(pid, epoch, true)},
		asked:   []txn.TopicPartition{a0, b0},
		want:    map[txn.TopicPartition]int16{a0: 0, b0: 0},
		guards:  map[txn.TopicPartition]string{a0: "verification", b0: "verification"},
	}, {
		name: "v13, by topic id", version: 13, verifyAll: true, byID: true, txnID: &id,
		batches: map[txn.TopicPartition][]byte{a0: batch(pid, epoch, true)},
		asked:   []txn.TopicPartition{a0}, addOnly: true,
		want:   map[txn.TopicPartition]int16{a0: 0},
		guards: map[txn.TopicPartition]string{a0: "epoch"},
	}, {
		name: "v9: not in the transaction", version: 9, verifyAll: true, txnID: &id,
		batches: map[txn.TopicPartition][]byte{a0: batch(pid, epoch, true), a1: batch(pid, epoch, true)},
		codes:   map[txn.TopicPartition]int16{a1: kerr.TransactionAbortable.Code},
		asked:   []txn.TopicPartition{a0, a1},
		want:    map[txn.TopicPartition]int16{a0: 0, a1: kerr.InvalidTxnState.Code},
		guards:  map[txn.TopicPartition]string{a0: "verification", a1: "none"},
	}, {
		name: "v11: not in the transaction", version: 11, verifyAll: true, txnID: &id,
		batches: map[txn.TopicPartition][]byte{a0: batch(pid, epoch, true)},
		codes:   map[txn.TopicPartition]int16{a0: kerr.TransactionAbortable.Code},
		asked:   []txn.TopicPartition{a0},
		want:    map[txn.TopicPartition]int16{a0: kerr.TransactionAbortable.Code},
	}, {
		name: "v9: invalid state", version: 9, verifyAll: true, txnID: &id,
		batches: map[txn.TopicPartition][]byte{a0: batch(pid, epoch, true)},
		codes:   map[txn.TopicPartition]int16{a0: kerr.InvalidTxnState.Code},
		asked:   []txn.TopicPartition{a0},
		want:    map[txn.TopicPartition]int16{a0: kerr.InvalidTxnState.Code},
	}, {
		name: "fenced", version: 11, verifyAll: true, txnID: &id,
		batches: map[txn.TopicPartition][]byte{a0: batch(pid, epoch, true)},
		codes:   map[txn.TopicPartition]int16{a0: kerr.ProducerFenced.Code},
		asked:   []txn.TopicPartition{a0},
		want:    map[txn.TopicPartition]int16{a0: kerr.InvalidProducerEpoch.Code},
	}, {
		name: "classic: previous transaction completing", version: 10, verifyAll: true, txnID: &id,
		batches: map[txn.TopicPartition][]byte{a0: batch(pid, epoch, true)},
		codes:   map[txn.TopicPartition]int16{a0: kerr.ConcurrentTransactions.Code},
		asked:   []txn.TopicPartition{a0},
		want:    map[txn.TopicPartition]int16{a0: kerr.NotEnoughReplicas.Code},
	}, {
		name: "coordinator unreachable", version: 9, verifyAll: true, txnID: &id,
		batches: map[txn.TopicPartition][]byte{a0: batch(pid, epoch, true)},
		sendErr: errors.New("connection refused"),
		asked:   []txn.TopicPartition{a0},
		want:    map[txn.TopicPartition]int16{a0: kerr.NotEnoughReplicas.Code},
	}, {
		name: "coordinator loading", version: 12, verifyAll: true, txnID: &id,
		batches: map[txn.TopicPartition][]byte{a0: batch(pid, epoch, true)},
		codes:   map[txn.TopicPartition]int16{a0: kerr.CoordinatorLoadInProgress.Code},
		asked:   []txn.TopicPartition{a0}, addOnly: true,
		want: map[txn.TopicPartition]int16{a0: kerr.NotEnoughReplicas.Code},
	}, {
		name: "v12 adds the partition", version: 12, txnID: &id,
		batches: map[txn.TopicPartition][]byte{a0: batch(pid, epoch, true)},
		asked:   []txn.TopicPartition{a0}, addOnly: true,
		want:   map[txn.TopicPartition]int16{a0: 0},
		guards: map[txn.TopicPartition]string{a0: "epoch"},
	}, {
		name: "verification disabled", version: 9, txnID: &id,
		batches: map[txn.TopicPartition][]byte{a0: batch(pid, epoch, true)},
		want:    map[txn.TopicPartition]int16{a0: 0},
		guards:  map[txn.TopicPartition]string{a0: "epoch"},
	}, {
		name: "ongoing here", version: 9, verifyAll: true, txnID: &id, ongoing: true,
		batches: map[txn.TopicPartition][]byte{a0: batch(pid, epoch, true), b0: batch(pid, epoch, true)},
		asked:   []txn.TopicPartition{b0},
		want:    map[txn.TopicPartition]int16{a0: 0, b0: 0},
	}, {
		name: "two producers", version: 9, verifyAll: true, txnID: &id,
		batches: map[txn.TopicPartition][]byte{a0: batch(pid, epoch, true), a1: batch(pid+1, epoch, true)},
		asked:   nil, // one of the two, whichever the request lists first
		want:    nil,
	}, {
		name: "request timeout", version: 9, verifyAll: true, txnID: &id, timeout: 50,
		batches: map[txn.TopicPartition][]byte{a0: batch(pid, epoch, true)},
		asked:   []txn.TopicPartition{a0},
		want:    map[txn.TopicPartition]int16{a0: kerr.RequestTimedOut.Code},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			coordHost := &coordinatorNode{codes: tc.codes, err: tc.sendErr}
			if tc.timeout > 0 {
				coordHost.gate = make(chan struct{})
				defer close(coordHost.gate)
			}
			c, err := coordinator.New(coordinator.Config{Host: coordHost})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			n := newNode(a0, a1, b0)
			if tc.ongoing {
				h, _ := wlog.ParseBatchHeader(batch(pid, epoch, true))
				n.parts[a0].st.Record(&h)
			}
			r := produce(tc.version, tc.txnID, tc.timeout, tc.byID, tc.batches, n)
			guards := Produce(context.Background(), n, c, r, tc.verifyAll)

			reqs := coordHost.requests()
			if tc.name == "two producers" {
				checkTwoProducers(t, guards, reqs, n, a0, a1)
				return
			}
			if len(tc.asked) == 0 {
				if len(reqs) != 0 {
					t.Fatalf("asked the coordinator: %+v", reqs)
				}
			} else {
				checkAsked(t, reqs, id, tc.asked, !tc.addOnly)
			}
			if len(guards) != len(tc.want) {
				t.Fatalf("guards for %d partitions, want %d: %v", len(guards), len(tc.want), guards)
			}
			for tp, want := range tc.want {
				g, ok := guards[n.parts[tp]]
				if !ok {
					t.Fatalf("no guard for %v", tp)
				}
				if got := code(g.Err); got != want {
					t.Fatalf("%v: %v, want code %d", tp, g.Err, want)
				}
				if want != 0 && g.Append != nil {
					t.Fatalf("%v refused but given an append guard", tp)
				}
				if kind, ok := tc.guards[tp]; ok {
					if got := guardKind(t, n.parts[tp], g); got != kind {
						t.Fatalf("%v: %s guard, want %s", tp, got, kind)
					}
				}
			}
		})
	}
}

// checkAsked checks that one AddPartitionsToTxn v5 asked about exactly
// parts of the producer's transaction.
func checkAsked(t *testing.T, reqs []*kmsg.AddPartitionsToTxnRequest, id string, parts []txn.TopicPartition, verifyOnly bool) {
	t.Helper()
	if len(reqs) != 1 || len(reqs[0].Transactions) != 1 {
		t.Fatalf("requests %+v, want one of one transaction", reqs)
	}
	tr := reqs[0].Transactions[0]
	if reqs[0].Version != 5 || tr.TransactionalID != id || tr.ProducerID != pid || tr.ProducerEpoch != epoch || tr.VerifyOnly != verifyOnly {
		t.Fatalf("asked %+v (v%d), want %s %d/%d verify only %v", tr, reqs[0].Version, id, pid, epoch, verifyOnly)
	}
	got := map[txn.TopicPartition]bool{}
	for _, rt := range tr.Topics {
		for _, i := range rt.Partitions {
			got[tp(rt.Topic, i)] = true
		}
	}
	if len(got) != len(parts) {
		t.Fatalf("asked about %v, want %v", got, parts)
	}
	for _, p := range parts {
		if !got[p] {
			t.Fatalf("asked about %v, want %v", got, parts)
		}
	}
}

// checkTwoProducers: a request's batches come from one producer; the
// partition whose batch comes from another is refused INVALID_RECORD and
// the coordinator is asked about the first producer's only.
func checkTwoProducers(t *testing.T, guards map[Partition]Guard, reqs []*kmsg.AddPartitionsToTxnRequest, n *node, parts ...txn.TopicPartition) {
	t.Helper()
	var refused, asked int
	for _, p := range parts {
		switch code(guards[n.parts[p]].Err) {
		case kerr.InvalidRecord.Code:
			refused++
		case 0:
			asked++
		}
	}
	if refused != 1 || asked != 1 || len(reqs) != 1 || len(reqs[0].Transactions) != 1 || len(reqs[0].Transactions[0].Topics) != 1 {
		t.Fatalf("guards %v, requests %+v", guards, reqs)
	}
}
