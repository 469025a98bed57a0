package coordinator

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/clock"
	wlog "weir/internal/log"
	"weir/internal/replica"
	"weir/internal/txn"
)

var testStart = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// fakeReplica is a __transaction_state replica over a real log: appends
// are committed at once unless a test holds them (gate) or fails them.
type fakeReplica struct {
	log *wlog.Log

	mu       sync.Mutex
	leading  bool
	epoch    int32
	fail     error         // next appends fail with it
	gate     chan struct{} // appends wait for it to close
	waiting  int           // appends waiting for the gate
	appends  int           // batches appended
	appended chan struct{} // closed at the next append (nextAppend)
}

func (r *fakeReplica) Leading() (int32, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.epoch, r.leading
}

func (r *fakeReplica) AppendCommitted(ctx context.Context, batch []byte, opts wlog.AppendOptions) (replica.AppendResult, error) {
	r.mu.Lock()
	gate, fail, epoch, leading := r.gate, r.fail, r.epoch, r.leading
	r.mu.Unlock()
	if gate != nil {
		r.set(func(r *fakeReplica) { r.waiting++ })
		select {
		case <-gate:
		case <-ctx.Done():
			return replica.AppendResult{}, ctx.Err()
		}
	}
	if fail != nil {
		return replica.AppendResult{}, fail
	}
	if !leading {
		return replica.AppendResult{}, kerr.NotLeaderForPartition
	}
	opts.LeaderEpoch = epoch
	res, err := r.log.Append(batch, opts)
	if err != nil {
		return replica.AppendResult{}, err
	}
	r.mu.Lock()
	r.appends++
	if r.appended != nil {
		close(r.appended)
		r.appended = nil
	}
	r.mu.Unlock()
	return replica.AppendResult{AppendResult: res, LeaderEpoch: epoch}, nil
}

// nextAppend returns a channel closed at the next append.
func (r *fakeReplica) nextAppend() <-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.appended == nil {
		r.appended = make(chan struct{})
	}
	return r.appended
}

func (r *fakeReplica) Log() *wlog.Log { return r.log }

func (r *fakeReplica) set(fn func(r *fakeReplica)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	fn(r)
}

// records returns the partition's log as (transactional id, decoded
// state) lines.
func (r *fakeReplica) records(t testing.TB) []string {
	var out []string
	err := r.log.ScanRecords(context.Background(), func(rec *wlog.Record) error {
		id, err := txn.DecodeKey(rec.Key)
		if err != nil {
			return err
		}
		if rec.Value == nil {
			out = append(out, id+" tombstone")
			return nil
		}
		v, err := txn.DecodeValue(rec.Value)
		if err != nil {
			return err
		}
		out = append(out, fmt.Sprintf("%s %s pid=%d epoch=%d", id, v.Status, v.ProducerID, v.ProducerEpoch))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// markerWrite is one marker a fake broker received.
type markerWrite struct {
	node   int32
	tp     txn.TopicPartition
	pid    int64
	epoch  int16
	commit bool
	cepoch int32
	tv     int8
}

// fakeHost is a cluster as the coordinator sees it: replicas of the state
// partitions on this node, leaders of every other partition, brokers that
// answer WriteTxnMarkers (with errors a test queues), and a producer-id
// counter.
type fakeHost struct {
	t        testing.TB
	replicas []*fakeReplica

	mu       sync.Mutex
	leaders  map[txn.TopicPartition]int32 // default node 1
	deleted  map[txn.TopicPartition]bool
	errs     map[txn.TopicPartition][]int16 // answers to come, in order
	down     map[int32]bool                 // nodes whose requests fail
	written  []markerWrite
	requests int
	nextID   int64

	coord      *Coordinator  // answers AddPartitionsToTxn sent to any node
	verifies   []int         // transactions per AddPartitionsToTxn request
	verifyGate chan struct{} // AddPartitionsToTxn requests wait for it
	markerGate chan struct{} // WriteTxnMarkers requests wait for it
}

func newHost(t testing.TB, partitions int) *fakeHost {
	h := &fakeHost{
		t:       t,
		leaders: map[txn.TopicPartition]int32{},
		deleted: map[txn.TopicPartition]bool{},
		errs:    map[txn.TopicPartition][]int16{},
		down:    map[int32]bool{},
		nextID:  1000,
	}
	dir := t.TempDir()
	for i := range partitions {
		l, err := wlog.Open(filepath.Join(dir, fmt.Sprintf("%s-%d", Topic, i)), wlog.DefaultConfig(), wlog.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		h.replicas = append(h.replicas, &fakeReplica{log: l})
	}
	return h
}

func (h *fakeHost) Partitions() int { return len(h.replicas) }

func (h *fakeHost) Replica(i int32) Replica {
	if int(i) >= len(h.replicas) {
		return nil
	}
	return h.replicas[i]
}

func (h *fakeHost) PartitionLeader(topic string, p int32) (int32, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	tp := txn.TopicPartition{Topic: topic, Partition: p}
	if h.deleted[tp] {
		return -1, false
	}
	if l, ok := h.leaders[tp]; ok {
		return l, true
	}
	return 1, true
}

func (h *fakeHost) Send(ctx context.Context, node int32, req kmsg.Request) (kmsg.Response, error) {
	if r, ok := req.(*kmsg.AddPartitionsToTxnRequest); ok {
		// Every coordinator is this node's: loop back, as a broker
		// sending to itself does.
		h.mu.Lock()
		h.verifies = append(h.verifies, len(r.Transactions))
		gate, c := h.verifyGate, h.coord
		h.mu.Unlock()
		if gate != nil {
			select {
			case <-gate:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		return c.AddPartitionsToTxn(ctx, r)
	}
	r, ok := req.(*kmsg.WriteTxnMarkersRequest)
	if !ok {
		return nil, fmt.Errorf("unexpected %T", req)
	}
	h.mu.Lock()
	gate := h.markerGate
	h.mu.Unlock()
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.requests++
	if h.down[node] {
		return nil, fmt.Errorf("node %d is down", node)
	}
	resp := r.ResponseKind().(*kmsg.WriteTxnMarkersResponse)
	for _, m := range r.Markers {
		rm := kmsg.NewWriteTxnMarkersResponseMarker()
		rm.ProducerID = m.ProducerID
		for _, t := range m.Topics {
			rt := kmsg.NewWriteTxnMarkersResponseMarkerTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				tp := txn.TopicPartition{Topic: t.Topic, Partition: p}
				code := int16(0)
				if q := h.errs[tp]; len(q) > 0 {
					code, h.errs[tp] = q[0], q[1:]
				}
				if code == 0 {
					h.written = append(h.written, markerWrite{node, tp, m.ProducerID, m.ProducerEpoch, m.Committed, m.CoordinatorEpoch, m.TransactionVersion})
				}
				rp := kmsg.NewWriteTxnMarkersResponseMarkerTopicPartition()
				rp.Partition, rp.ErrorCode = p, code
				rt.Partitions = append(rt.Partitions, rp)
			}
			rm.Topics = append(rm.Topics, rt)
		}
		resp.Markers = append(resp.Markers, rm)
	}
	return resp, nil
}

func (h *fakeHost) NextProducerID() (int64, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.nextID++
	return h.nextID - 1, nil
}

func (h *fakeHost) markers() []markerWrite {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.written)
}

func (h *fakeHost) with(fn func(h *fakeHost)) {
	h.mu.Lock()
	defer h.mu.Unlock()
	fn(h)
}

// lead makes this node the leader of state partition i at epoch.
func (h *fakeHost) lead(i int, epoch int32) {
	h.replicas[i].set(func(r *fakeReplica) { r.leading, r.epoch = true, epoch })
}

// env is a coordinator over a fake host with a manual clock.
type env struct {
	t     testing.TB
	h     *fakeHost
	clock *clock.Manual
	c     *Coordinator
}

func newEnv(t testing.TB, partitions int, tweak func(*Config)) *env {
	e := &env{t: t, h: newHost(t, partitions), clock: clock.NewManual(testStart)}
	e.start(tweak)
	return e
}

func (e *env) start(tweak func(*Config)) {
	cfg := Config{Host: e.h, Clock: e.clock, Shards: 2}
	if tweak != nil {
		tweak(&cfg)
	}
	c, err := New(cfg)
	if err != nil {
		e.t.Fatal(err)
	}
	e.c = c
	e.h.with(func(h *fakeHost) { h.coord = c })
	e.t.Cleanup(c.Close)
}

// loadAll leads every state partition at epoch and waits until the
// coordinator serves them all.
func (e *env) loadAll(epoch int32) {
	for i := range e.h.replicas {
		e.h.lead(i, epoch)
	}
	e.c.LeadershipChanged()
	eventually(e.t, 5*time.Second, "partitions loaded", func() bool {
		st, err := e.c.Stats(context.Background())
		return err == nil && st.Partitions == len(e.h.replicas) && st.Loading == 0
	})
}

// onShard runs fn on the goroutine of the shard owning state partition
// i and waits for it.
func (e *env) onShard(i int32, fn func(*shard)) {
	s := e.c.shardOf(i)
	done := make(chan struct{})
	if !s.enqueue(func() { fn(s); close(done) }) {
		e.t.Fatal("coordinator closed")
	}
	<-done
}

func eventually(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

func ctx(t testing.TB) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return c
}

func (e *env) init(id string, v int16, timeoutMs int32) *kmsg.InitProducerIDResponse {
	e.t.Helper()
	req := kmsg.NewPtrInitProducerIDRequest()
	req.Version = v
	req.TransactionalID = &id
	req.TransactionTimeoutMillis = timeoutMs
	resp, err := e.c.InitProducerID(ctx(e.t), req)
	if err != nil {
		e.t.Fatal(err)
	}
	return resp
}

func (e *env) add(id string, pid int64, epoch int16, v int16, parts ...txn.TopicPartition) *kmsg.AddPartitionsToTxnResponse {
	e.t.Helper()
	req := kmsg.NewPtrAddPartitionsToTxnRequest()
	req.Version = v
	req.TransactionalID, req.ProducerID, req.ProducerEpoch = id, pid, epoch
	for _, tp := range parts {
		rt := kmsg.NewAddPartitionsToTxnRequestTopic()
		rt.Topic, rt.Partitions = tp.Topic, []int32{tp.Partition}
		req.Topics = append(req.Topics, rt)
	}
	resp, err := e.c.AddPartitionsToTxn(ctx(e.t), req)
	if err != nil {
		e.t.Fatal(err)
	}
	return resp
}

// leaderAdd adds one partition to a transaction as a partition leader
// does under transaction version 2 (AddPartitionsToTxn v5, not
// VerifyOnly) and returns its code.
func (e *env) leaderAdd(id string, pid int64, epoch int16, part txn.TopicPartition) int16 {
	e.t.Helper()
	req := kmsg.NewPtrAddPartitionsToTxnRequest()
	req.Version = 5
	tr := kmsg.NewAddPartitionsToTxnRequestTransaction()
	tr.TransactionalID, tr.ProducerID, tr.ProducerEpoch = id, pid, epoch
	tr.Topics = []kmsg.AddPartitionsToTxnRequestTransactionTopic{{Topic: part.Topic, Partitions: []int32{part.Partition}}}
	req.Transactions = append(req.Transactions, tr)
	resp, err := e.c.AddPartitionsToTxn(ctx(e.t), req)
	if err != nil {
		e.t.Fatal(err)
	}
	return resp.Transactions[0].Topics[0].Partitions[0].ErrorCode
}

func (e *env) end(id string, pid int64, epoch int16, commit bool, v int16) *kmsg.EndTxnResponse {
	e.t.Helper()
	req := kmsg.NewPtrEndTxnRequest()
	req.Version = v
	req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit = id, pid, epoch, commit
	resp, err := e.c.EndTxn(ctx(e.t), req)
	if err != nil {
		e.t.Fatal(err)
	}
	return resp
}

func (e *env) describe(id string) kmsg.DescribeTransactionsResponseTransactionState {
	e.t.Helper()
	req := kmsg.NewPtrDescribeTransactionsRequest()
	req.TransactionalIDs = []string{id}
	resp, err := e.c.DescribeTransactions(ctx(e.t), req)
	if err != nil {
		e.t.Fatal(err)
	}
	return resp.TransactionStates[0]
}

// waitState waits until DescribeTransactions reports state for id.
func (e *env) waitState(id, state string) {
	e.t.Helper()
	eventually(e.t, 5*time.Second, id+" in "+state, func() bool {
		return e.describe(id).State == state
	})
}

func addCodes(resp *kmsg.AddPartitionsToTxnResponse) []int16 {
	var out []int16
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			out = append(out, p.ErrorCode)
		}
	}
	return out
}

func tp(topic string, p int32) txn.TopicPartition {
	return txn.TopicPartition{Topic: topic, Partition: p}
}
