package client

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/client/internal/records"
	"weir/client/internal/wire"
	"weir/internal/wiretag"
)

// shareFake is two share-group leaders in memory: partition 0 on node 0,
// partition 1 on node 1. A ShareFetch that finds nothing waits MaxWaitMs in
// real time, as a broker does. available[p] records wait in partition p.
type shareFake struct {
	topic string
	id    [16]byte

	mu        sync.Mutex
	available [2]int
	next      [2]int64
	waits     [2][]int32 // MaxWaitMs of every ShareFetch per node
	records   [2][]int32 // MaxRecords of every ShareFetch per node
	tagged    [2][]bool  // whether each ShareFetch carried wiretag.ShareFetchAllLeaders
	// held counts records acquired and not yet acknowledged, on both
	// nodes together; maxHeld is its peak.
	held, maxHeld int
	// hints: answer fetches that ask with the backlog
	// (wiretag.ShareFetchBacklog), as a weir broker does.
	hints bool
	// deferred[node] says, for each ShareFetch that carried
	// acknowledgements, whether it had wiretag.ShareFetchDeferAcks.
	deferred [2][]bool
	// acknowledges counts ShareAcknowledge requests per node; when
	// ackGate is not nil they wait for it to close (a broker waiting for
	// deferred writes), and ackFail is the error code they answer for the
	// node's partition.
	acknowledges [2]int
	ackGate      chan struct{}
	ackFail      int16
	// sessionLost[node] makes the next ShareFetch to node answer
	// SHARE_SESSION_NOT_FOUND, as after a broker restart.
	sessionLost [2]bool
	// hold[node]: a ShareFetch that may wait and finds nothing there
	// waits until records arrive (arrive) or release, however long its
	// MaxWaitMs. A fetch that waits wakes when records arrive, as a
	// broker's does; waiting counts those out.
	hold    [2]bool
	waiting [2]int
	arrived [2]chan struct{}
	// inflight counts the requests a node is answering, maxInflight its
	// peak; ackCounts how often each offset was acknowledged; epochErrs
	// the requests whose ShareSessionEpoch was not the session's next.
	inflight, maxInflight [2]int
	ackCounts             [2]map[int64]int
	nextEpoch             [2]int32
	epochErrs             []string
}

// acked takes records acknowledged to node off held and counts them.
func (f *shareFake) acked(node int32, first, last int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.held -= int(last - first + 1)
	if f.ackCounts[node] == nil {
		f.ackCounts[node] = map[int64]int{}
	}
	for o := first; o <= last; o++ {
		f.ackCounts[node][o]++
	}
}

// begin notes a request to node with a session epoch: one more in
// flight, and an epoch out of sequence is noted. end undoes the count.
func (f *shareFake) begin(node, epoch int32) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.inflight[node]++
	f.maxInflight[node] = max(f.maxInflight[node], f.inflight[node])
	switch {
	case epoch == 0:
		f.nextEpoch[node] = 1
	case epoch == -1:
		f.nextEpoch[node] = 0
	case epoch != f.nextEpoch[node]:
		f.epochErrs = append(f.epochErrs, fmt.Sprintf("node %d: epoch %d, want %d", node, epoch, f.nextEpoch[node]))
		f.nextEpoch[node] = epoch + 1
	default:
		f.nextEpoch[node]++
	}
}

func (f *shareFake) end(node int32) {
	f.mu.Lock()
	f.inflight[node]--
	f.mu.Unlock()
}

// arrive adds n records to node's partition and wakes a fetch waiting
// there.
func (f *shareFake) arrive(node int32, n int) {
	f.mu.Lock()
	f.available[node] += n
	f.wakeLocked(node)
	f.mu.Unlock()
}

// release ends node's hold: a fetch waiting there answers.
func (f *shareFake) release(node int32) {
	f.mu.Lock()
	f.hold[node] = false
	f.wakeLocked(node)
	f.mu.Unlock()
}

func (f *shareFake) wakeLocked(node int32) {
	if f.arrived[node] != nil {
		close(f.arrived[node])
		f.arrived[node] = nil
	}
}

// arrival returns a channel closed when records arrive on node.
func (f *shareFake) arrivalLocked(node int32) chan struct{} {
	if f.arrived[node] == nil {
		f.arrived[node] = make(chan struct{})
	}
	return f.arrived[node]
}

// recordLimitConsumer is a subscribed share consumer of f with
// record_limit, max.poll.records=10 and fetch.max.wait.ms=500; the test's
// end closes it.
func (f *shareFake) recordLimitConsumer(t *testing.T, extra ...string) *ShareConsumer {
	t.Helper()
	props := map[string]string{
		"bootstrap.servers": "fake:9092", "group.id": "g",
		"share.acquire.mode": "record_limit", "max.poll.records": "10", "fetch.max.wait.ms": "500",
	}
	for i := 0; i+1 < len(extra); i += 2 {
		props[extra[i]] = extra[i+1]
	}
	s, err := NewShareConsumer(props, f.options()...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close(context.Background()) })
	if err := s.Subscribe([]string{f.topic}); err != nil {
		t.Fatal(err)
	}
	return s
}

func (f *shareFake) options() []Option {
	return []Option{func(o *options) {
		o.dial = func(_ context.Context, _ int32, addr string, _ func(int)) (brokerConn, error) {
			var port int32
			if _, err := fmt.Sscanf(addr, "fake:%d", &port); err != nil {
				return nil, fmt.Errorf("fake: bad address %q", addr)
			}
			return &shareFakeConn{f: f, node: port - 9092, done: make(chan struct{})}, nil
		}
	}}
}

type shareFakeConn struct {
	f    *shareFake
	node int32
	done chan struct{}
}

func (c *shareFakeConn) Version(int16) (int16, bool) { return 0, true }
func (c *shareFakeConn) Done() <-chan struct{}       { return c.done }
func (c *shareFakeConn) Close()                      {}
func (c *shareFakeConn) Send(req kmsg.Request, timeout time.Duration, _ bool, cb wire.Callback) {
	resp, err := c.Do(context.Background(), req, timeout)
	cb(resp, err)
}

func (c *shareFakeConn) Do(ctx context.Context, req kmsg.Request, _ time.Duration) (kmsg.Response, error) {
	f := c.f
	switch r := req.(type) {
	case *kmsg.MetadataRequest:
		resp := kmsg.NewPtrMetadataResponse()
		for id := range int32(2) {
			b := kmsg.NewMetadataResponseBroker()
			b.NodeID, b.Host, b.Port = id, "fake", 9092+id
			resp.Brokers = append(resp.Brokers, b)
		}
		t := kmsg.NewMetadataResponseTopic()
		t.Topic, t.TopicID = kmsg.StringPtr(f.topic), f.id
		for p := range int32(2) {
			mp := kmsg.NewMetadataResponseTopicPartition()
			mp.Partition, mp.Leader, mp.Replicas, mp.ISR = p, p, []int32{p}, []int32{p}
			t.Partitions = append(t.Partitions, mp)
		}
		resp.Topics = append(resp.Topics, t)
		return resp, nil
	case *kmsg.FindCoordinatorRequest:
		resp := kmsg.NewPtrFindCoordinatorResponse()
		resp.NodeID, resp.Host, resp.Port = 0, "fake", 9092
		co := kmsg.NewFindCoordinatorResponseCoordinator()
		co.Key, co.NodeID, co.Host, co.Port = r.CoordinatorKey, 0, "fake", 9092
		resp.Coordinators = append(resp.Coordinators, co)
		return resp, nil
	case *kmsg.ShareGroupHeartbeatRequest:
		resp := kmsg.NewPtrShareGroupHeartbeatResponse()
		resp.MemberEpoch, resp.HeartbeatIntervalMillis = max(r.MemberEpoch, 0)+1, 5000
		if r.MemberEpoch == -1 {
			resp.MemberEpoch = -1
			return resp, nil
		}
		a := kmsg.NewShareGroupHeartbeatResponseAssignmentTopicPartition()
		a.TopicID, a.Partitions = f.id, []int32{0, 1}
		resp.Assignment = &kmsg.ShareGroupHeartbeatResponseAssignment{TopicPartitions: []kmsg.ShareGroupHeartbeatResponseAssignmentTopicPartition{a}}
		return resp, nil
	case *kmsg.ShareFetchRequest:
		return f.shareFetch(ctx, c.node, r)
	case *kmsg.ShareAcknowledgeRequest:
		for _, t := range r.Topics {
			for _, p := range t.Partitions {
				for _, b := range p.AcknowledgementBatches {
					f.acked(c.node, b.FirstOffset, b.LastOffset)
				}
			}
		}
		f.begin(c.node, r.ShareSessionEpoch)
		defer f.end(c.node)
		f.mu.Lock()
		f.acknowledges[c.node]++
		gate, fail := f.ackGate, f.ackFail
		f.mu.Unlock()
		if gate != nil {
			select {
			case <-gate:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		resp := kmsg.NewPtrShareAcknowledgeResponse()
		if fail != 0 {
			t := kmsg.NewShareAcknowledgeResponseTopic()
			t.TopicID = f.id
			p := kmsg.NewShareAcknowledgeResponseTopicPartition()
			p.Partition, p.ErrorCode = c.node, fail
			t.Partitions = append(t.Partitions, p)
			resp.Topics = append(resp.Topics, t)
		}
		return resp, nil
	}
	return nil, fmt.Errorf("fake: unexpected %T", req)
}

func (f *shareFake) shareFetch(ctx context.Context, node int32, r *kmsg.ShareFetchRequest) (kmsg.Response, error) {
	f.begin(node, r.ShareSessionEpoch)
	defer f.end(node)
	f.mu.Lock()
	lost := f.sessionLost[node]
	f.sessionLost[node] = false
	f.mu.Unlock()
	if lost {
		resp := kmsg.NewPtrShareFetchResponse()
		resp.ErrorCode = kerr.ShareSessionNotFound.Code
		return resp, nil
	}
	carried := false
	for _, t := range r.Topics {
		for _, p := range t.Partitions {
			for _, b := range p.AcknowledgementBatches {
				f.acked(node, b.FirstOffset, b.LastOffset)
				carried = true
			}
		}
	}
	f.mu.Lock()
	if carried {
		f.deferred[node] = append(f.deferred[node], wiretag.HasShareFetchDeferAcks(&r.UnknownTags))
	}
	f.waits[node] = append(f.waits[node], r.MaxWaitMillis)
	f.records[node] = append(f.records[node], r.MaxRecords)
	f.tagged[node] = append(f.tagged[node], wiretag.HasShareFetchAllLeaders(&r.UnknownTags))
	f.mu.Unlock()
	// Records are acquired when there are some; a fetch that may wait
	// waits for them for MaxWaitMs (or, held, until they come or the
	// hold is released).
	timer := time.NewTimer(time.Duration(r.MaxWaitMillis) * time.Millisecond)
	defer timer.Stop()
	var n, left int
	var first int64
	for {
		f.mu.Lock()
		n = min(f.available[node], int(r.MaxRecords))
		f.available[node] -= n
		first = f.next[node]
		f.next[node] += int64(n)
		f.held += n
		f.maxHeld = max(f.maxHeld, f.held)
		left = f.available[node]
		held := f.hold[node]
		arrival := f.arrivalLocked(node)
		if n > 0 || r.MaxWaitMillis == 0 {
			f.mu.Unlock()
			break
		}
		f.waiting[node]++
		f.mu.Unlock()
		expired := timer.C
		if held {
			expired = nil
		}
		var err error
		done := false
		select {
		case <-arrival:
		case <-expired:
			done = true
		case <-ctx.Done():
			err = ctx.Err()
		}
		f.mu.Lock()
		f.waiting[node]--
		if held && !f.hold[node] {
			done = true // released
		}
		f.mu.Unlock()
		if err != nil {
			return nil, err
		}
		if done {
			break
		}
	}
	resp := kmsg.NewPtrShareFetchResponse()
	if f.hints && wiretag.HasShareFetchBacklogWanted(&r.UnknownTags) {
		wiretag.SetShareFetchBacklog(&resp.UnknownTags, []wiretag.PartitionBacklog{{TopicID: f.id, Partition: node, Records: int64(left)}})
	}
	if n == 0 {
		return resp, nil
	}
	b := records.NewBuilder(records.None, 1<<20, 1)
	for i := range n {
		b.TryAppend(0, nil, fmt.Appendf(nil, "%d-%d", node, int(first)+i), nil)
	}
	raw, _, err := b.Build(nil, records.NoProducer, records.Options{})
	if err != nil {
		return nil, err
	}
	for i := range 8 { // base offset, outside the CRC
		raw[i] = byte(uint64(first) >> (56 - 8*i))
	}
	t := kmsg.NewShareFetchResponseTopic()
	t.TopicID = f.id
	p := kmsg.NewShareFetchResponseTopicPartition()
	p.Partition, p.Records = node, raw
	p.AcquiredRecords = []kmsg.ShareFetchResponseTopicPartitionAcquiredRecord{{FirstOffset: first, LastOffset: first + int64(n) - 1, DeliveryCount: 1}}
	t.Partitions = append(t.Partitions, p)
	resp.Topics = append(resp.Topics, t)
	return resp, nil
}

// TestShareRecordLimitNoStallTwoLeaders is the seed's pathology: one
// leader with a backlog, one with nothing, share.acquire.mode=record_limit,
// fetch.max.wait.ms=500. Rotating one fetch per Poll across the leaders
// would spend 500 ms on the empty one every other Poll; the policy keeps
// every Poll with records far below that, never sends the empty leader a
// waiting fetch while the other has records, asks it far less often than
// the busy one, and never asks for more than max.poll.records in one
// round.
func TestShareRecordLimitNoStallTwoLeaders(t *testing.T) {
	f := &shareFake{topic: "backlog", id: [16]byte{1, 2, 3}}
	f.available[0] = 200
	s := f.recordLimitConsumer(t)
	ctx := testCtx(t)
	got := 0
	var slowest time.Duration
	polls := 0
	start := time.Now()
	for got < 200 && polls < 500 {
		t0 := time.Now()
		recs, err := s.Poll(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(recs) > 10 {
			t.Fatalf("poll returned %d records, max.poll.records=10", len(recs))
		}
		if len(recs) > 0 {
			slowest = max(slowest, time.Since(t0))
		}
		got += len(recs)
		polls++
	}
	drain := time.Since(start)
	if got != 200 {
		t.Fatalf("drained %d of 200 in %d polls", got, polls)
	}
	f.mu.Lock()
	waits1, recs0 := f.waits[1], f.records[0]
	f.mu.Unlock()
	t.Logf("200 records in %d polls, %v; slowest poll with records %v; fetches: node 0 %d, node 1 %d", polls, drain, slowest, len(recs0), len(waits1))
	if slowest >= 250*time.Millisecond {
		t.Errorf("a poll with records took %v: it waited for the empty leader", slowest)
	}
	for i, w := range waits1 {
		if w != 0 {
			t.Errorf("fetch %d to the empty leader waited %d ms while the other leader had records", i, w)
		}
	}
	if len(waits1) == 0 {
		t.Error("the empty leader was never fetched")
	}
	if len(waits1) > len(recs0)/2 {
		t.Errorf("the empty leader was fetched %d times for %d fetches from the busy one", len(waits1), len(recs0))
	}
	f.mu.Lock()
	maxHeld := f.maxHeld
	f.mu.Unlock()
	if maxHeld > 10 {
		t.Errorf("the consumer held %d records acquired and not acknowledged, max.poll.records=10", maxHeld)
	}
	// Dry now: the target comes back empty (unless its last fetch
	// already gave less than asked), then a round asks every leader
	// without waiting; only the round after that long-polls.
	quick := 0
	for {
		t0 := time.Now()
		if recs, err := s.Poll(ctx); err != nil || len(recs) != 0 {
			t.Fatalf("poll %d after the drain: %d records, %v", quick, len(recs), err)
		}
		if time.Since(t0) >= 450*time.Millisecond {
			break
		}
		if quick++; quick > 2 {
			t.Fatalf("%d empty polls after the drain without a long poll, want at most 2", quick)
		}
	}
	if quick == 0 {
		t.Errorf("the first empty poll after the drain waited: want a 0-wait round first")
	}
	// Every record_limit fetch tells weir brokers that this consumer asks
	// every leader at once (wiretag.ShareFetchAllLeaders).
	f.mu.Lock()
	defer f.mu.Unlock()
	for node, tags := range f.tagged {
		for i, ok := range tags {
			if !ok {
				t.Errorf("fetch %d to node %d lacks the all-leaders tag", i, node)
			}
		}
	}
}

// TestShareRecordLimitTwoBusyLeaders: both leaders have a backlog. The
// consumer serves one at a time, switching after a few rounds (so neither
// waits for the other to be drained), and the records it holds, acquired
// and not acknowledged, never exceed max.poll.records, switches included.
func TestShareRecordLimitTwoBusyLeaders(t *testing.T) {
	f := &shareFake{topic: "backlog", id: [16]byte{4, 5, 6}}
	f.available = [2]int{1000, 1000}
	s := f.recordLimitConsumer(t)
	ctx := testCtx(t)
	var order []int32 // partition of each record, in delivery order
	for polls := 0; len(order) < 2000 && polls < 3000; polls++ {
		recs, err := s.Poll(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			order = append(order, r.Partition)
		}
	}
	if len(order) != 2000 {
		t.Fatalf("drained %d of 2000", len(order))
	}
	f.mu.Lock()
	maxHeld := f.maxHeld
	f.mu.Unlock()
	if maxHeld > 10 {
		t.Errorf("the consumer held %d records acquired and not acknowledged, max.poll.records=10", maxHeld)
	}
	seen := map[int32]bool{}
	for _, p := range order[:1000] {
		seen[p] = true
	}
	if !seen[0] || !seen[1] {
		t.Errorf("the first 1000 records came from partitions %v only: one leader waited for the other to drain", seen)
	}
}

// TestShareRecordLimitFollowsTheBacklog: 100 records wait on node 0 and
// 900 on node 1, and the brokers say so (wiretag.ShareFetchBacklog). With
// backlog hints the consumer serves the heavy leader first and stays on
// it until its backlog is within a factor shareSwitchFactor of the other:
// nearly all of the first 500 records come from partition 1. Without
// hints (weir.share.fetch.backlog.hints=false) it follows whichever
// leader returned records, and partition 0's 100 come early.
func TestShareRecordLimitFollowsTheBacklog(t *testing.T) {
	for _, hints := range []bool{true, false} {
		f := &shareFake{topic: "uneven", id: [16]byte{7, 8, 9}, hints: true}
		f.available = [2]int{100, 900}
		s := f.recordLimitConsumer(t, "weir.share.fetch.backlog.hints", fmt.Sprint(hints))
		ctx := testCtx(t)
		var order []int32
		for polls := 0; len(order) < 1000 && polls < 2000; polls++ {
			recs, err := s.Poll(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range recs {
				order = append(order, r.Partition)
			}
		}
		if len(order) != 1000 {
			t.Fatalf("hints=%v: drained %d of 1000", hints, len(order))
		}
		heavy := 0
		for _, p := range order[:500] {
			if p == 1 {
				heavy++
			}
		}
		t.Logf("hints=%v: %d of the first 500 records from the heavy partition", hints, heavy)
		if hints && heavy < 450 {
			t.Errorf("with hints %d of the first 500 records came from the heavy leader, want nearly all", heavy)
		}
		if !hints && heavy > 450 {
			t.Errorf("without hints %d of the first 500 came from the heavy leader: the hints were used", heavy)
		}
	}
}

// TestShareCommitWaitsForDeferredAcks: in record_limit mode the fetch
// that carries a Poll's acknowledgements asks weir brokers to answer
// without waiting for their durability (wiretag.ShareFetchDeferAcks).
// CommitSync then sends that leader a ShareAcknowledge, though nothing
// is pending, and returns only with its answer (a broker answers it once
// the deferred writes are durable), with a failure the answer reports;
// a second commit has nothing left to ask. With
// weir.share.acknowledgement.defer=false no fetch carries the tag and a
// commit with nothing pending sends nothing.
func TestShareCommitWaitsForDeferredAcks(t *testing.T) {
	for _, tc := range []struct {
		name     string
		deferred bool
		fail     int16
	}{
		{"deferred", true, 0},
		{"deferred write failed", true, kerr.KafkaStorageError.Code},
		{"not deferred", false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &shareFake{topic: "defer", id: [16]byte{3, 1, 4}, ackGate: make(chan struct{}), ackFail: tc.fail}
			f.available[0] = 10
			s := f.recordLimitConsumer(t, "share.acknowledgement.mode", "explicit", "weir.share.acknowledgement.defer", fmt.Sprint(tc.deferred))
			// Open the gate before the consumer's Close, which the test's
			// end runs, should the test stop early.
			var open sync.Once
			openGate := func() { open.Do(func() { close(f.ackGate) }) }
			t.Cleanup(openGate)
			ctx := testCtx(t)
			recs := pollShare(t, s, 10)
			for _, r := range recs {
				if err := s.Acknowledge(r, AckAccept); err != nil {
					t.Fatal(err)
				}
			}
			// The acknowledgements ride on the next fetch from node 0.
			if _, err := s.Poll(ctx); err != nil {
				t.Fatal(err)
			}
			f.mu.Lock()
			tags, acks := f.deferred[0], f.acknowledges[0]
			f.mu.Unlock()
			if len(tags) != 1 || tags[0] != tc.deferred || acks != 0 {
				t.Fatalf("fetches carrying acknowledgements: tagged %v, want one tagged %v, and no ShareAcknowledge (%d)", tags, tc.deferred, acks)
			}
			done := make(chan error, 1)
			go func() { done <- s.CommitSync(ctx) }()
			var err error
			if tc.deferred {
				select {
				case err := <-done:
					t.Fatalf("CommitSync returned (%v) before the leader answered", err)
				case <-time.After(50 * time.Millisecond):
				}
				openGate()
				err = <-done
			} else {
				// Nothing is asked: the gate is never reached.
				err = <-done
				openGate()
			}
			switch {
			case tc.fail != 0 && (!errors.Is(err, ErrShareAckFailed) || !errors.Is(err, kerr.KafkaStorageError)):
				t.Fatalf("CommitSync: %v, want the deferred write's failure", err)
			case tc.fail == 0 && err != nil:
				t.Fatalf("CommitSync: %v", err)
			}
			if err := s.CommitSync(ctx); err != nil {
				t.Fatalf("second CommitSync: %v", err)
			}
			f.mu.Lock()
			acks = f.acknowledges[0]
			f.mu.Unlock()
			want := 0
			if tc.deferred {
				want = 1
			}
			if acks != want {
				t.Fatalf("%d ShareAcknowledge requests to node 0 over two commits, want %d", acks, want)
			}
		})
	}
}

// TestShareSessionLostWithDeferredAcks: the leader that took a Poll's
// acknowledgements with their durability deferred loses the share session
// (SHARE_SESSION_NOT_FOUND) before a commit asked it. Their outcome is
// unknown, so the next commit says so (ErrShareAckFailed: the records may
// be delivered again) instead of reporting them durable.
func TestShareSessionLostWithDeferredAcks(t *testing.T) {
	f := &shareFake{topic: "lost", id: [16]byte{2, 7, 1}}
	f.available[0] = 20
	s := f.recordLimitConsumer(t)
	ctx := testCtx(t)
	pollShare(t, s, 20)
	f.mu.Lock()
	tags := f.deferred[0]
	f.sessionLost[0] = true
	f.mu.Unlock()
	if len(tags) == 0 || !tags[len(tags)-1] {
		t.Fatalf("fetches carrying acknowledgements to node 0: tagged %v, want the deferral", tags)
	}
	// The next round's fetch to node 0 finds the session gone.
	for range 3 {
		if _, err := s.Poll(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.CommitSync(ctx); !errors.Is(err, ErrShareAckFailed) {
		t.Fatalf("CommitSync after the session was lost: %v, want ErrShareAckFailed", err)
	}
	if err := s.CommitSync(ctx); err != nil {
		t.Fatalf("a second CommitSync reported it again: %v", err)
	}
}

// pollShare polls s until it has n records (at most 100 Polls) and
// returns them.
func pollShare(t *testing.T, s *ShareConsumer, n int) []*ShareRecord {
	t.Helper()
	ctx := testCtx(t)
	var recs []*ShareRecord
	for polls := 0; len(recs) < n && polls < 100; polls++ {
		got, err := s.Poll(ctx)
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, got...)
	}
	if len(recs) != n {
		t.Fatalf("polled %d of %d records", len(recs), n)
	}
	return recs
}

// TestSharePollDoesNotWaitForOtherLeaders is share case 4's tail: an idle
// consumer long-polls both leaders; records reach node 0 while node 1
// has nothing (held: its fetch waits until records come). Poll returns
// node 0's records at once, node 1's fetch still out (before, a Poll
// waited for every leader's answer, here forever). When records reach
// node 1, its fetch, never sent twice, brings them, and a later Poll
// delivers them; a commit then acknowledges every record once, each
// request with its session's next epoch. record_limit keeps its cap with
// a fetch in flight.
func TestSharePollDoesNotWaitForOtherLeaders(t *testing.T) {
	for _, mode := range []string{"batch_optimized", "record_limit"} {
		t.Run(mode, func(t *testing.T) {
			f := &shareFake{topic: "tail", id: [16]byte{9, 9, 1}, hold: [2]bool{false, true}}
			s := f.recordLimitConsumer(t, "share.acquire.mode", mode)
			t.Cleanup(func() { f.release(1) }) // before the consumer's Close
			// A Poll that waited for node 1 would end with this context.
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			f.arriveOnceBothWait(ctx, 0, 5)
			var recs []*ShareRecord
			for polls := 0; len(recs) == 0 && polls < 20; polls++ {
				got, err := s.Poll(ctx)
				if err != nil {
					t.Fatalf("poll %d: %v (it waited for node 1's fetch)", polls, err)
				}
				recs = got
			}
			f.mu.Lock()
			out1 := f.inflight[1]
			f.mu.Unlock()
			if len(recs) != 5 || recs[0].Partition != 0 || out1 != 1 {
				t.Fatalf("got %d records with %d fetches out to node 1; want node 0's 5 while node 1's fetch waits", len(recs), out1)
			}
			f.arrive(1, 3)
			var late []*ShareRecord
			for polls := 0; len(late) < 3 && polls < 20; polls++ {
				got, err := s.Poll(ctx)
				if err != nil {
					t.Fatal(err)
				}
				for _, r := range got {
					if r.Partition != 1 {
						t.Fatalf("record of partition %d delivered again", r.Partition)
					}
				}
				late = append(late, got...)
			}
			if len(late) != 3 {
				t.Fatalf("node 1's 3 records: delivered %d", len(late))
			}
			f.release(1)
			if err := s.CommitSync(ctx); err != nil {
				t.Fatal(err)
			}
			f.mu.Lock()
			defer f.mu.Unlock()
			for node, want := range []int{5, 3} {
				if len(f.ackCounts[node]) != want {
					t.Errorf("node %d: %d offsets acknowledged, want %d", node, len(f.ackCounts[node]), want)
				}
				for off, n := range f.ackCounts[node] {
					if n != 1 {
						t.Errorf("node %d offset %d acknowledged %d times", node, off, n)
					}
				}
				if f.maxInflight[node] > 1 {
					t.Errorf("node %d had %d requests out at once", node, f.maxInflight[node])
				}
			}
			if len(f.epochErrs) > 0 {
				t.Errorf("session epochs out of sequence: %v", f.epochErrs)
			}
			if mode == "record_limit" && f.maxHeld > 10 {
				t.Errorf("the consumer held %d records, max.poll.records=10", f.maxHeld)
			}
		})
	}
}

// TestShareCloseEndsFetchInFlight: Close with a fetch out that will not be
// answered waits for it until Close's context ends (here at once), then
// cancels it: the
// fetch's goroutine is gone when Close returns, and a Poll after it says
// the consumer is closed.
func TestShareCloseEndsFetchInFlight(t *testing.T) {
	f := &shareFake{topic: "close", id: [16]byte{9, 9, 2}, hold: [2]bool{false, true}}
	s := f.recordLimitConsumer(t)
	ctx := testCtx(t)
	f.arriveOnceBothWait(ctx, 0, 2)
	for polls := 0; polls < 20; polls++ {
		recs, err := s.Poll(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(recs) > 0 {
			break
		}
	}
	f.mu.Lock()
	out1 := f.inflight[1]
	f.mu.Unlock()
	if out1 != 1 {
		t.Fatalf("%d fetches out to node 1, want the waiting one", out1)
	}
	// Close's context has ended: it cannot wait for node 1's answer.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := s.Close(cctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Close: %v, want the cancelled wait for the fetch in flight", err)
	}
	f.mu.Lock()
	out1 = f.inflight[1]
	f.mu.Unlock()
	if out1 != 0 {
		t.Fatalf("node 1 still answering %d requests after Close", out1)
	}
	if _, err := s.Poll(ctx); !errors.Is(err, ErrConsumerClosed) {
		t.Fatalf("Poll after Close: %v", err)
	}
}

// arriveOnceBothWait puts n records on node, on a goroutine of its own,
// once both nodes have a fetch waiting.
func (f *shareFake) arriveOnceBothWait(ctx context.Context, node int32, n int) {
	go func() {
		f.waitFor(ctx, func() bool { return f.waiting[0] > 0 && f.waiting[1] > 0 })
		f.arrive(node, n)
	}()
}

// waitFor returns once cond, called with f.mu held, is true, or ctx ended.
func (f *shareFake) waitFor(ctx context.Context, cond func() bool) {
	for ctx.Err() == nil {
		f.mu.Lock()
		ok := cond()
		f.mu.Unlock()
		if ok {
			return
		}
		time.Sleep(time.Millisecond)
	}
}

// TestShareCommitDoesNotWaitForOtherLeaders: a Poll returned node 0's
// records while node 1's long poll (fetch.max.wait.ms of a minute, held
// until records come) stays in flight, with nothing to acknowledge there.
// CommitSync and CommitAsync send node 0 its ShareAcknowledge at once
// and return, node 1's fetch still out; before, a commit waited for every
// fetch in flight, here until its context ended.
func TestShareCommitDoesNotWaitForOtherLeaders(t *testing.T) {
	for _, mode := range []string{"batch_optimized", "record_limit"} {
		t.Run(mode, func(t *testing.T) {
			f := &shareFake{topic: "commit", id: [16]byte{9, 9, 3}, hold: [2]bool{false, true}}
			s := f.recordLimitConsumer(t, "share.acquire.mode", mode, "fetch.max.wait.ms", "60000")
			t.Cleanup(func() { f.release(1) }) // before the consumer's Close
			// A commit that waited for node 1's fetch would end with this
			// context.
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			f.arriveOnceBothWait(ctx, 0, 5)
			recs := pollRecords(t, ctx, s)
			if len(recs) != 5 || recs[0].Partition != 0 {
				t.Fatalf("got %d records; want node 0's 5", len(recs))
			}
			if err := s.CommitSync(ctx); err != nil {
				t.Fatalf("CommitSync: %v (it waited for node 1's fetch)", err)
			}
			f.arrive(0, 3)
			if recs := pollRecords(t, ctx, s); len(recs) != 3 || recs[0].Partition != 0 {
				t.Fatalf("got %d records; want node 0's 3", len(recs))
			}
			done := make(chan error, 1)
			s.CommitAsync(ctx, func(err error) { done <- err })
			if err := <-done; err != nil {
				t.Fatalf("CommitAsync: %v (it waited for node 1's fetch)", err)
			}
			f.mu.Lock()
			defer f.mu.Unlock()
			if f.inflight[1] != 1 || f.acknowledges[0] != 2 || f.acknowledges[1] != 0 {
				t.Errorf("after the commits: %d fetches out to node 1 (want its long poll), ShareAcknowledge to nodes 0 and 1: %d and %d (want 2 and 0)", f.inflight[1], f.acknowledges[0], f.acknowledges[1])
			}
			if len(f.ackCounts[0]) != 8 {
				t.Errorf("node 0: %d offsets acknowledged, want 8", len(f.ackCounts[0]))
			}
			for off, n := range f.ackCounts[0] {
				if n != 1 {
					t.Errorf("node 0 offset %d acknowledged %d times", off, n)
				}
			}
			if len(f.epochErrs) > 0 || f.maxInflight[0] > 1 || f.maxInflight[1] > 1 {
				t.Errorf("session epochs out of sequence: %v; requests out at once: %v", f.epochErrs, f.maxInflight)
			}
		})
	}
}

// TestShareCommitWaitsForOwedFetch: node 1's last fetch carried a Poll's
// acknowledgements with their durability deferred, and its long poll is
// in flight when a commit comes. The commit asks node 0 at once, and node
// 1 once its fetch is answered (a session takes one request at a time):
// it returns only after a ShareAcknowledge to node 1 confirmed the
// deferred acknowledgements, each request with its session's next epoch.
func TestShareCommitWaitsForOwedFetch(t *testing.T) {
	f := &shareFake{topic: "owed", id: [16]byte{9, 9, 4}, hold: [2]bool{false, true}}
	f.available[1] = 5
	s := f.recordLimitConsumer(t, "fetch.max.wait.ms", "60000")
	t.Cleanup(func() { f.release(1) })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if recs := pollRecords(t, ctx, s); len(recs) != 5 || recs[0].Partition != 1 {
		t.Fatalf("got %d records; want node 1's 5", len(recs))
	}
	f.arriveOnceBothWait(ctx, 0, 5)
	if recs := pollRecords(t, ctx, s); len(recs) != 5 || recs[0].Partition != 0 {
		t.Fatalf("got %d records; want node 0's 5", len(recs))
	}
	f.mu.Lock()
	tags, out1 := f.deferred[1], f.inflight[1]
	f.mu.Unlock()
	if len(tags) != 1 || !tags[0] || out1 != 1 {
		t.Fatalf("node 1: fetches carrying acknowledgements tagged %v, %d out; want one deferred, then its long poll", tags, out1)
	}
	// Node 1's long poll answers once node 0 has been asked.
	go func() {
		f.waitFor(ctx, func() bool { return f.acknowledges[0] > 0 })
		f.release(1)
	}()
	if err := s.CommitSync(ctx); err != nil {
		t.Fatalf("CommitSync: %v", err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.acknowledges[0] != 1 || f.acknowledges[1] != 1 {
		t.Errorf("ShareAcknowledge to nodes 0 and 1: %d and %d, want one each", f.acknowledges[0], f.acknowledges[1])
	}
	for node := range 2 {
		if len(f.ackCounts[node]) != 5 {
			t.Errorf("node %d: %d offsets acknowledged, want 5", node, len(f.ackCounts[node]))
		}
	}
	if len(f.epochErrs) > 0 || f.maxInflight[0] > 1 || f.maxInflight[1] > 1 {
		t.Errorf("session epochs out of sequence: %v; requests out at once: %v", f.epochErrs, f.maxInflight)
	}
}

// pollRecords polls s until a Poll brings records (at most 20 Polls).
func pollRecords(t *testing.T, ctx context.Context, s *ShareConsumer) []*ShareRecord {
	t.Helper()
	for range 20 {
		recs, err := s.Poll(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(recs) > 0 {
			return recs
		}
	}
	t.Fatal("20 Polls brought nothing")
	return nil
}
