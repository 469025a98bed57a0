package replica

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/fetchsession"
	wlog "weir/internal/log"
	"weir/internal/producer"
)

// fakeClock is the replicas' clock in tests: time moves only when the test
// says so, which makes replica.lag.time.max.ms decisions deterministic.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func newFakeClock() *fakeClock { return &fakeClock{now: time.Unix(1_700_000_000, 0)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// eventually polls cond until it holds, failing the test after timeout
// (a bound on a hang, not a performance assertion).
func eventually(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// batch builds a v2 batch of n records whose values start with tag.
func batch(tag string, n int) []byte {
	var bb wlog.BatchBuilder
	bb.Reset(1_700_000_000_000)
	for i := range n {
		bb.Add(1_700_000_000_000, nil, fmt.Appendf(nil, "%s-%d", tag, i), nil)
	}
	return append([]byte(nil), bb.Build()...)
}

// openLog opens a log in a fresh temporary directory.
func openLog(t testing.TB, dir string) *wlog.Log {
	t.Helper()
	l, err := wlog.Open(dir, wlog.DefaultConfig(), wlog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func isKerr(err error, want *kerr.Error) bool {
	var ke *kerr.Error
	return err != nil && asKerr(err, &ke) && ke == want
}

func readAll(t testing.TB, l *wlog.Log) []byte {
	t.Helper()
	b, err := readRange(l, l.StartOffset(), l.EndOffset())
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// readRange reads the batches from offset from up to end, asking again
// where a read stops early (it spans a few segments at most).
func readRange(l *wlog.Log, from, end int64) ([]byte, error) {
	var out []byte
	for from < end {
		b, err := l.ReadBytes(from, 1<<30, end)
		if err != nil || len(b) == 0 {
			return out, err
		}
		out = append(out, b...)
		for len(b) > 0 {
			h, err := wlog.ParseBatchHeader(b)
			if err != nil {
				return out, err
			}
			from = h.NextOffset()
			b = b[h.Length:]
		}
	}
	return out, nil
}

// memNode is one broker of the in-process cluster.
type memNode struct {
	id      int32
	dir     string
	log     *wlog.Log
	state   *producer.State // the log's Options.Producers in transactional clusters
	replica *Replica
	manager *Manager

	mu        sync.Mutex
	grow      chan struct{} // closed when the leader's log or high watermark moves
	copied    []int64       // base offsets passed to OnFollowerAppend
	truncated []int64       // ends passed to OnTruncate

	// The node's fetch sessions, as a leader's broker keeps them, and the
	// marks of those reading its partition.
	sessions *fetchsession.Cache
	src      fetchsession.Source
}

func (n *memNode) hooks() ([]int64, []int64) {
	n.mu.Lock()
	defer n.mu.Unlock()
	return slices.Clone(n.copied), slices.Clone(n.truncated)
}

// lastFetchBy is Config.LastFetch, as the broker's partition answers it.
func (n *memNode) lastFetchBy(id int32) time.Time { return n.src.LastUsedBy(id) }

func (n *memNode) signal() {
	n.mu.Lock()
	close(n.grow)
	n.grow = make(chan struct{})
	n.src.MarkAll()
	n.mu.Unlock()
}

func (n *memNode) growCh() chan struct{} {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.grow
}

// memCluster is a few brokers replicating one partition over an in-memory
// transport, with a controller that accepts every ISR change.
type memCluster struct {
	t       *testing.T
	clock   *fakeClock
	topicID [16]byte
	nodes   map[int32]*memNode

	mu      sync.Mutex
	fetches []fetchSeen // every partition read for a follower, for assertions
	rounds  int         // Fetch requests served

	// manual queues ISR changes for the test to decide (the simulation)
	// instead of the controller goroutine accepting them.
	manual            bool
	txn               bool  // logs drive a producer state (newTxnCluster)
	partitionMaxBytes int32 // replica.fetch.max.bytes of the followers; 0 means the default
	queued            []isrChangeMsg
	changes           chan isrChangeMsg
	stop              chan struct{}
	done              chan struct{}
}

type fetchSeen struct {
	from        int32
	fetchOffset int64
}

type isrChangeMsg struct {
	r *Replica
	c ISRChange
}

func newMemCluster(t *testing.T, ids ...int32) *memCluster { return newCluster(t, false, ids...) }

// newTxnCluster is newMemCluster whose logs drive a producer state, as a
// broker serving transactions opens them.
func newTxnCluster(t *testing.T, ids ...int32) *memCluster { return newCluster(t, true, ids...) }

func newCluster(t *testing.T, txn bool, ids ...int32) *memCluster {
	c := &memCluster{t: t, clock: newFakeClock(), topicID: [16]byte{7}, nodes: map[int32]*memNode{}, txn: txn,
		changes: make(chan isrChangeMsg, 64), stop: make(chan struct{}), done: make(chan struct{})}
	for _, id := range ids {
		n := &memNode{id: id, dir: t.TempDir(), grow: make(chan struct{}), sessions: fetchsession.NewCache(fetchsession.Config{Slots: 10})}
		c.open(n, 0)
		c.nodes[id] = n
	}
	go c.controller()
	t.Cleanup(func() {
		close(c.stop)
		<-c.done
		for _, n := range c.nodes {
			n.manager.Close()
			_ = n.log.Close()
		}
	})
	return c
}

// open opens node n's log and replica from its directory, starting with
// high watermark hw, and gives it a new fetcher manager.
func (c *memCluster) open(n *memNode, hw int64) {
	c.t.Helper()
	if c.txn {
		n.state = producer.NewState(producer.Options{Now: c.clock.Now})
		l, err := wlog.Open(n.dir, wlog.DefaultConfig(), wlog.Options{Producers: func() wlog.ProducerState { return n.state }})
		if err != nil {
			c.t.Fatal(err)
		}
		n.log = l
	} else {
		n.log = openLog(c.t, n.dir)
	}
	env := NewEnv(Env{
		LocalID: n.id,
		Now:     c.clock.Now,
		OnISRChange: func(r *Replica, ch ISRChange) {
			if c.manual {
				c.mu.Lock()
				c.queued = append(c.queued, isrChangeMsg{r, ch})
				c.mu.Unlock()
				return
			}
			select {
			case c.changes <- isrChangeMsg{r, ch}:
			case <-c.stop:
			}
		},
		OnHighWatermark: func(*Replica, int64) { n.signal() },
		LastFetch:       func(_ *Replica, id int32) time.Time { return n.lastFetchBy(id) },
		OnFollowerAppend: func(_ *Replica, h *wlog.BatchHeader) {
			n.mu.Lock()
			n.copied = append(n.copied, h.BaseOffset)
			n.mu.Unlock()
		},
		OnTruncate: func(_ *Replica, end int64) {
			n.mu.Lock()
			n.truncated = append(n.truncated, end)
			n.mu.Unlock()
		},
	})
	r, err := Open(n.log, hw, Config{Env: env, Topic: "t", TopicID: c.topicID, Partition: 0, MinISR: 2})
	if err != nil {
		c.t.Fatal(err)
	}
	n.replica = r
	n.manager = c.newManager(n.id)
}

// restart stops node id (fetchers, log) and opens it again from disk with
// the high watermark it had, as a broker restart would; with dropEpochs
// its leader-epoch checkpoint is deleted first.
func (c *memCluster) restart(id int32, dropEpochs bool) {
	c.t.Helper()
	n := c.nodes[id]
	n.manager.Close()
	hw := n.replica.HighWatermark()
	if err := n.log.Close(); err != nil {
		c.t.Fatal(err)
	}
	if dropEpochs {
		if err := os.Remove(filepath.Join(n.dir, epochCheckpointFile)); err != nil {
			c.t.Fatal(err)
		}
	}
	c.open(n, hw)
}

func (c *memCluster) newManager(id int32) *Manager {
	return NewManager(ManagerConfig{LocalID: id, BrokerEpoch: 1, Transport: c, MaxWait: 50 * time.Millisecond, Backoff: 5 * time.Millisecond, PartitionMaxBytes: c.partitionMaxBytes})
}

// controller accepts every proposed ISR, bumping the partition epoch, as
// the controller commits an AlterPartition.
func (c *memCluster) controller() {
	defer close(c.done)
	for {
		select {
		case <-c.stop:
			return
		case m := <-c.changes:
			m.r.CompleteISRChange(m.c, ISRChangeResult{LeaderEpoch: m.c.LeaderEpoch, PartitionEpoch: m.c.PartitionEpoch + 1, ISR: m.c.NewISR})
		}
	}
}

// elect makes leader lead in epoch and the other nodes in followers follow
// it; nodes not listed are left alone (stopped or partitioned away).
func (c *memCluster) elect(leader int32, epoch int32, replicas, isr, followers []int32) {
	c.t.Helper()
	st := PartitionState{Leader: leader, LeaderEpoch: epoch, PartitionEpoch: epoch * 100, Replicas: replicas, ISR: isr}
	ln := c.nodes[leader]
	ln.manager.RemovePartitions([]*Replica{ln.replica})
	if err := ln.replica.BecomeLeader(st); err != nil {
		c.t.Fatal(err)
	}
	for _, id := range followers {
		n := c.nodes[id]
		if err := n.replica.BecomeFollower(st); err != nil {
			c.t.Fatal(err)
		}
		n.manager.AddPartitions([]Follow{{Replica: n.replica, Leader: leader, LeaderEpoch: epoch}})
	}
}

// produce appends one batch to leader with acks; with acks=-1 it waits for
// the high watermark and returns the outcome.
func (c *memCluster) produce(leader int32, b []byte, acks int16) (AppendResult, error) {
	n := c.nodes[leader]
	res, err := n.replica.Append(b, acks, wlog.AppendOptions{})
	if err != nil {
		return res, err
	}
	n.signal()
	if acks != -1 {
		return res, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	return res, n.replica.WaitForHW(ctx, res.LeaderEpoch, res.LastOffset+1)
}

// Send is the in-memory Transport: Fetch and ListOffsets served by the
// target node's replica, as the broker's handlers would.
func (c *memCluster) Send(ctx context.Context, broker int32, req kmsg.Request) (kmsg.Response, error) {
	n := c.nodes[broker]
	if n == nil {
		return nil, fmt.Errorf("no broker %d", broker)
	}
	switch r := req.(type) {
	case *kmsg.FetchRequest:
		c.mu.Lock()
		c.rounds++
		c.mu.Unlock()
		return c.serveFetch(ctx, n, r), nil
	case *kmsg.ListOffsetsRequest:
		resp := r.ResponseKind().(*kmsg.ListOffsetsResponse)
		for _, rt := range r.Topics {
			st := kmsg.NewListOffsetsResponseTopic()
			st.Topic = rt.Topic
			for _, rp := range rt.Partitions {
				sp := kmsg.NewListOffsetsResponseTopicPartition()
				sp.Partition = rp.Partition
				sp.Offset = n.log.EndOffset()
				if rp.Timestamp == -2 {
					sp.Offset = n.log.StartOffset()
				}
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
		return resp, nil
	}
	return nil, fmt.Errorf("unexpected %T", req)
}

// serveFetch answers a follower Fetch in its fetch session, as the
// broker's Fetch handler does: only partitions that may have changed
// are read, and an empty answer waits up to MaxWait for a change.
func (c *memCluster) serveFetch(ctx context.Context, n *memNode, r *kmsg.FetchRequest) *kmsg.FetchResponse {
	if r.Version != FetchVersion || r.ReplicaState.ID < 0 {
		c.t.Errorf("fetch version %d replica %d", r.Version, r.ReplicaState.ID)
	}
	f, code := n.sessions.Begin(r, r.ReplicaState.ID, c.clock.Now())
	if code != 0 {
		resp := r.ResponseKind().(*kmsg.FetchResponse)
		resp.ErrorCode = code
		return resp
	}
	results := map[int32]kmsg.FetchResponseTopicPartition{}
	outcomes := map[int32]fetchsession.Outcome{}
	var bytes int64
	urgent := false
	read := func() {
		reads := f.Pending(nil)
		for i := range reads {
			rd := &reads[i]
			if rd.Topic.ID == c.topicID && rd.Partition == 0 {
				rd.Src = &n.src
			}
			bytes -= outcomes[rd.Index].Bytes
			sp, b := c.readOne(n, r, rd.Topic.ID, rd.Partition, rd.PartitionData)
			o := fetchsession.Outcome{HighWatermark: sp.HighWatermark, LogStartOffset: sp.LogStartOffset, Bytes: b, ErrorCode: sp.ErrorCode, Diverging: sp.DivergingEpoch.Epoch >= 0}
			urgent = urgent || o.Diverging || (o.ErrorCode != 0 && o.ErrorCode != kerr.UnknownLeaderEpoch.Code)
			results[rd.Index], outcomes[rd.Index] = sp, o
			bytes += b
		}
		f.Bind(reads)
	}
	read()
	if bytes == 0 && !urgent {
		timer := time.NewTimer(time.Duration(r.MaxWaitMillis) * time.Millisecond)
		woken := f.Wait()
		read()
		for bytes == 0 && !urgent {
			select {
			case <-woken:
				read()
				continue
			case <-timer.C:
			case <-ctx.Done():
			}
			break
		}
		timer.Stop()
	}
	res := f.Finish(c.clock.Now(), func(i int32) fetchsession.Outcome { return outcomes[i] })
	resp := r.ResponseKind().(*kmsg.FetchResponse)
	resp.SessionID, resp.ErrorCode = res.SessionID, res.ErrorCode
	for _, in := range res.Include {
		if n := len(resp.Topics); n == 0 || resp.Topics[n-1].TopicID != in.Topic.ID {
			rt := kmsg.NewFetchResponseTopic()
			rt.TopicID = in.Topic.ID
			resp.Topics = append(resp.Topics, rt)
		}
		rt := &resp.Topics[len(resp.Topics)-1]
		rt.Partitions = append(rt.Partitions, results[in.Index])
	}
	return resp
}

// fetchOnce answers every partition a Fetch names, without a session
// (the simulation's fetch rounds).
func (c *memCluster) fetchOnce(n *memNode, r *kmsg.FetchRequest) (*kmsg.FetchResponse, int64) {
	var total int64
	resp := answerFetch(r, func(topicID [16]byte, rp *kmsg.FetchRequestTopicPartition) kmsg.FetchResponseTopicPartition {
		sp, b := c.readOne(n, r, topicID, rp.Partition, fetchsession.PartitionData{FetchOffset: rp.FetchOffset, LeaderEpoch: rp.CurrentLeaderEpoch, LastFetchedEpoch: rp.LastFetchedEpoch, MaxBytes: rp.PartitionMaxBytes})
		total += b
		return sp
	})
	return resp, total
}

// readOne serves one partition of a follower's fetch, recording the
// fetch offset for the tests' assertions.
func (c *memCluster) readOne(n *memNode, r *kmsg.FetchRequest, topicID [16]byte, partition int32, d fetchsession.PartitionData) (kmsg.FetchResponseTopicPartition, int64) {
	sp := kmsg.NewFetchResponseTopicPartition()
	sp.Partition = partition
	if topicID != c.topicID || partition != 0 {
		sp.ErrorCode = kerr.UnknownTopicID.Code
		return sp, 0
	}
	c.mu.Lock()
	c.fetches = append(c.fetches, fetchSeen{r.ReplicaState.ID, d.FetchOffset})
	c.mu.Unlock()
	res := n.replica.FetchForFollower(nil, FollowerFetch{ReplicaID: r.ReplicaState.ID, BrokerEpoch: r.ReplicaState.Epoch, FetchOffset: d.FetchOffset,
		CurrentLeaderEpoch: d.LeaderEpoch, LastFetchedEpoch: d.LastFetchedEpoch, MaxBytes: int64(d.MaxBytes)})
	if res.Err != nil {
		var ke *kerr.Error
		if !asKerr(res.Err, &ke) {
			ke = kerr.UnknownServerError
		}
		sp.ErrorCode = ke.Code
	}
	sp.HighWatermark, sp.LogStartOffset = res.HighWatermark, res.LogStartOffset
	sp.DivergingEpoch.Epoch, sp.DivergingEpoch.EndOffset = res.DivergingEpoch.Epoch, res.DivergingEpoch.EndOffset
	for _, fr := range res.Ranges {
		buf := make([]byte, fr.Len)
		if _, err := fr.File.ReadAt(buf, fr.Pos); err != nil {
			c.t.Errorf("read range: %v", err)
		}
		sp.RecordBatches = append(sp.RecordBatches, buf...)
	}
	return sp, res.Bytes
}

func (c *memCluster) fetchOffsetsFrom(id int32) []int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []int64
	for _, f := range c.fetches {
		if f.from == id {
			out = append(out, f.fetchOffset)
		}
	}
	return out
}

func asKerr(err error, target **kerr.Error) bool { return errors.As(err, target) }

func waitHW(r *Replica, res AppendResult) error {
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	return r.WaitForHW(ctx, res.LeaderEpoch, res.LastOffset+1)
}

// stamped is a batch as a leader stored it: base offset and leader epoch
// set (both outside the CRC).
func stamped(tag string, n int, base int64, epoch int32) []byte {
	b := batch(tag, n)
	binary.BigEndian.PutUint64(b[0:], uint64(base))
	binary.BigEndian.PutUint32(b[12:], uint32(epoch))
	return b
}

func walOpts() wlog.AppendOptions { return wlog.AppendOptions{} }
