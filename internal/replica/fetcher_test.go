package replica

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// scriptTransport answers with a function of the request and records
// every Fetch partition it saw.
type scriptTransport struct {
	mu      sync.Mutex
	fetches []kmsg.FetchRequestTopicPartition
	answer  func(req kmsg.Request) (kmsg.Response, error)
}

func (s *scriptTransport) Send(ctx context.Context, _ int32, req kmsg.Request) (kmsg.Response, error) {
	if f, ok := req.(*kmsg.FetchRequest); ok {
		s.mu.Lock()
		for _, t := range f.Topics {
			s.fetches = append(s.fetches, t.Partitions...)
		}
		s.mu.Unlock()
		// Pace the loop as a leader's MaxWait would.
		select {
		case <-time.After(time.Millisecond):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return s.answer(req)
}

func (s *scriptTransport) seen() []kmsg.FetchRequestTopicPartition {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]kmsg.FetchRequestTopicPartition(nil), s.fetches...)
}

// answerFetch builds a Fetch response with one answer per requested
// partition.
func answerFetch(req kmsg.Request, answer func(topicID [16]byte, p *kmsg.FetchRequestTopicPartition) kmsg.FetchResponseTopicPartition) *kmsg.FetchResponse {
	f := req.(*kmsg.FetchRequest)
	resp := f.ResponseKind().(*kmsg.FetchResponse)
	for _, t := range f.Topics {
		rt := kmsg.NewFetchResponseTopic()
		rt.TopicID = t.TopicID
		for i := range t.Partitions {
			rt.Partitions = append(rt.Partitions, answer(t.TopicID, &t.Partitions[i]))
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// fetchAnswer answers every partition of a Fetch with errCode.
func fetchAnswer(req kmsg.Request, errCode int16) kmsg.Response {
	return answerFetch(req, func(_ [16]byte, p *kmsg.FetchRequestTopicPartition) kmsg.FetchResponseTopicPartition {
		rp := kmsg.NewFetchResponseTopicPartition()
		rp.Partition = p.Partition
		rp.ErrorCode = errCode
		return rp
	})
}

// followerOf opens a replica following broker 1 in epoch with the given
// batches already in its log.
func followerOf(t *testing.T, epoch int32, batches ...[]byte) *Replica {
	t.Helper()
	return followerAt(t, 3, epoch, batches...)
}

// followerAt is followerOf for partition p of the same topic.
func followerAt(t *testing.T, p, epoch int32, batches ...[]byte) *Replica {
	t.Helper()
	l := openLog(t, t.TempDir())
	t.Cleanup(func() { _ = l.Close() })
	r, err := Open(l, 0, Config{Env: NewEnv(Env{LocalID: 2}), Topic: "t", TopicID: [16]byte{9}, Partition: p})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.BecomeFollower(PartitionState{Leader: 1, LeaderEpoch: epoch, Replicas: []int32{1, 2}, ISR: []int32{1, 2}}); err != nil {
		t.Fatal(err)
	}
	for _, b := range batches {
		if err := r.appendFromLeader(epoch, b, 0, 0); err != nil {
			t.Fatal(err)
		}
	}
	return r
}

func TestFetcherStopsWhenFencedUntilNewerEpoch(t *testing.T) {
	r := followerOf(t, 4)
	tr := &scriptTransport{answer: func(req kmsg.Request) (kmsg.Response, error) {
		return fetchAnswer(req, kerr.FencedLeaderEpoch.Code), nil
	}}
	m := NewManager(ManagerConfig{LocalID: 2, Transport: tr, Backoff: time.Millisecond})
	defer m.Close()
	m.AddPartitions([]Follow{{Replica: r, Leader: 1, LeaderEpoch: 4}})
	ft := func() *fetcher { m.mu.Lock(); defer m.mu.Unlock(); return m.fetchers[1] }()
	eventually(t, waitLong, "the partition to be fenced", func() bool {
		req, _, _ := ft.buildRequest()
		return req == nil
	})
	got := tr.seen()
	if len(got) == 0 || got[0].CurrentLeaderEpoch != 4 || got[0].FetchOffset != 0 || got[0].LastFetchedEpoch != -1 || got[0].Partition != 3 {
		t.Fatalf("first fetch %+v", got)
	}

	// Newer metadata resumes it with the new epoch.
	if err := r.BecomeFollower(PartitionState{Leader: 1, LeaderEpoch: 5, Replicas: []int32{1, 2}, ISR: []int32{1, 2}}); err != nil {
		t.Fatal(err)
	}
	m.AddPartitions([]Follow{{Replica: r, Leader: 1, LeaderEpoch: 5}})
	eventually(t, waitLong, "a fetch in epoch 5", func() bool {
		s := tr.seen()
		return s[len(s)-1].CurrentLeaderEpoch == 5
	})
}

func TestFetcherOffsetOutOfRangeTruncatesToLeaderEnd(t *testing.T) {
	r := followerOf(t, 1, stamped("a", 2, 0, 1), stamped("b", 2, 2, 1), stamped("c", 2, 4, 1), stamped("d", 2, 6, 1))
	if r.Log().EndOffset() != 8 {
		t.Fatalf("setup: end %d", r.Log().EndOffset())
	}
	var mu sync.Mutex
	var listed []int64
	tr := &scriptTransport{answer: func(req kmsg.Request) (kmsg.Response, error) {
		switch q := req.(type) {
		case *kmsg.ListOffsetsRequest:
			mu.Lock()
			listed = append(listed, q.Topics[0].Partitions[0].Timestamp)
			mu.Unlock()
			if q.ReplicaID != 2 || q.Topics[0].Partitions[0].CurrentLeaderEpoch != 1 {
				t.Errorf("ListOffsets %+v", q)
			}
			resp := q.ResponseKind().(*kmsg.ListOffsetsResponse)
			rt := kmsg.NewListOffsetsResponseTopic()
			rp := kmsg.NewListOffsetsResponseTopicPartition()
			rp.Offset = 4 // the leader's log ends at 4
			rt.Partitions = append(rt.Partitions, rp)
			resp.Topics = append(resp.Topics, rt)
			return resp, nil
		default:
			if q.(*kmsg.FetchRequest).Topics[0].Partitions[0].FetchOffset == 4 {
				return fetchAnswer(req, 0), nil
			}
			return fetchAnswer(req, kerr.OffsetOutOfRange.Code), nil
		}
	}}
	m := NewManager(ManagerConfig{LocalID: 2, Transport: tr, Backoff: time.Millisecond})
	defer m.Close()
	m.AddPartitions([]Follow{{Replica: r, Leader: 1, LeaderEpoch: 1}})
	eventually(t, waitLong, "a fetch from 4", func() bool {
		for _, f := range tr.seen() {
			if f.FetchOffset == 4 {
				return true
			}
		}
		return false
	})
	if end := r.Log().EndOffset(); end != 4 {
		t.Fatalf("log ends at %d, want the leader's 4", end)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(listed) == 0 || listed[0] != -1 {
		t.Fatalf("ListOffsets timestamps %v, want latest (-1) first", listed)
	}
}

func TestManagerMovesPartitionsBetweenLeaders(t *testing.T) {
	r := followerOf(t, 1)
	tr := &scriptTransport{answer: func(req kmsg.Request) (kmsg.Response, error) { return fetchAnswer(req, 0), nil }}
	m := NewManager(ManagerConfig{LocalID: 2, Transport: tr})
	defer m.Close()
	m.AddPartitions([]Follow{{Replica: r, Leader: 1, LeaderEpoch: 1}})
	if got := m.Leaders(); len(got) != 1 || got[1] != 1 {
		t.Fatalf("leaders %v", got)
	}
	m.AddPartitions([]Follow{{Replica: r, Leader: 3, LeaderEpoch: 2}})
	if got := m.Leaders(); len(got) != 1 || got[3] != 1 {
		t.Fatalf("after the move: leaders %v", got)
	}
	m.mu.Lock()
	_, old := m.fetchers[1]
	m.mu.Unlock()
	if old {
		t.Fatal("the idle fetcher of broker 1 still runs")
	}
	m.RemovePartitions([]*Replica{r})
	if got := m.Leaders(); len(got) != 0 {
		t.Fatalf("after removal: leaders %v", got)
	}
}

func TestTruncationOffset(t *testing.T) {
	// Follower log: epoch 1 at [0,4), epoch 3 at [4,8), epoch 5 at [8,10);
	// high watermark 6.
	r := followerOf(t, 5,
		stamped("a", 2, 0, 1), stamped("b", 2, 2, 1),
		stamped("c", 2, 4, 3), stamped("d", 2, 6, 3),
		stamped("e", 2, 8, 5))
	if _, err := r.appendFromLeaderLocked(5, nil, 6, 0); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		leader EpochEntryEnd
		offset int64
		done   bool
	}{
		{"leader knows no end offset: high watermark", EpochEntryEnd{-1, -1}, 6, true},
		{"leader knows no epoch: its end offset", EpochEntryEnd{-1, 7}, 7, true},
		{"same epoch, leader shorter", EpochEntryEnd{5, 9}, 9, true},
		{"same epoch, follower's epoch ends first", EpochEntryEnd{3, 12}, 8, true},
		{"follower's floor epoch is older: cut and ask again", EpochEntryEnd{4, 6}, 6, false},
		{"older than every follower epoch", EpochEntryEnd{0, 3}, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			off, done := r.truncationOffset(tt.leader)
			if off != tt.offset || done != tt.done {
				t.Fatalf("truncationOffset(%+v) = (%d, %v), want (%d, %v)", tt.leader, off, done, tt.offset, tt.done)
			}
		})
	}
}

func TestFetcherTruncatesEpochlessLogToHighWatermark(t *testing.T) {
	// Batches without a leader epoch (-1): the cache stays empty.
	r := followerOf(t, 2, stamped("a", 2, 0, -1), stamped("b", 2, 2, -1), stamped("c", 2, 4, -1))
	if _, err := r.appendFromLeaderLocked(2, nil, 2, 0); err != nil {
		t.Fatal(err)
	}
	if _, ok := r.EpochCache().Latest(); ok || r.Log().EndOffset() != 6 || r.HighWatermark() != 2 {
		t.Fatalf("setup: cache %v end %d hw %d", r.EpochCache().Entries(), r.Log().EndOffset(), r.HighWatermark())
	}
	tr := &scriptTransport{answer: func(req kmsg.Request) (kmsg.Response, error) { return fetchAnswer(req, 0), nil }}
	m := NewManager(ManagerConfig{LocalID: 2, Transport: tr})
	defer m.Close()
	m.AddPartitions([]Follow{{Replica: r, Leader: 1, LeaderEpoch: 2}})
	eventually(t, waitLong, "a first fetch", func() bool { return len(tr.seen()) > 0 })
	if first := tr.seen()[0]; first.FetchOffset != 2 || first.LastFetchedEpoch != -1 {
		t.Fatalf("first fetch %+v, want offset 2 without a last epoch", first)
	}
}

// TestFetchRequestOnTheWire encodes the fetcher's request as the broker's
// Transport would send it and decodes it as a broker would read it: the
// replica id travels in ReplicaState (v15+), the topic by id (v13+), the
// last fetched epoch (v12+).
func TestFetchRequestOnTheWire(t *testing.T) {
	r := followerOf(t, 4, stamped("a", 2, 0, 4))
	m := NewManager(ManagerConfig{LocalID: 2, BrokerEpoch: 77, Transport: &scriptTransport{answer: func(req kmsg.Request) (kmsg.Response, error) {
		return fetchAnswer(req, kerr.FencedLeaderEpoch.Code), nil
	}}})
	defer m.Close()
	ft := m.newFetcher(1)
	ft.add([]Follow{{Replica: r, Leader: 1, LeaderEpoch: 4}})
	req, _, _ := ft.buildRequest()
	if req == nil {
		t.Fatal("no request")
	}
	wire := req.AppendTo(nil)
	got := kmsg.NewPtrFetchRequest()
	got.Version = FetchVersion
	if err := got.ReadFrom(wire); err != nil {
		t.Fatal(err)
	}
	// The first request is full and asks for a fetch session (epoch 0).
	if got.ReplicaState.ID != 2 || got.ReplicaState.Epoch != 77 || got.SessionEpoch != 0 || got.SessionID != 0 {
		t.Fatalf("header fields: replica state %+v session %d/%d", got.ReplicaState, got.SessionID, got.SessionEpoch)
	}
	if len(got.Topics) != 1 || got.Topics[0].TopicID != [16]byte{9} || len(got.Topics[0].Partitions) != 1 {
		t.Fatalf("topics %+v", got.Topics)
	}
	p := got.Topics[0].Partitions[0]
	if p.Partition != 3 || p.FetchOffset != 2 || p.CurrentLeaderEpoch != 4 || p.LastFetchedEpoch != 4 || p.LogStartOffset != 0 {
		t.Fatalf("partition %+v", p)
	}
}

// TestFetcherAsksAgainAtOnceOnUnknownLeaderEpoch: a leader that has not
// applied its promotion yet answers UNKNOWN_LEADER_EPOCH; the fetcher asks
// again without backing off (the back-off here is an hour: one would
// leave the test waiting for its deadline).
func TestFetcherAsksAgainAtOnceOnUnknownLeaderEpoch(t *testing.T) {
	r := followerOf(t, 4)
	var mu sync.Mutex
	answered := 0
	tr := &scriptTransport{answer: func(req kmsg.Request) (kmsg.Response, error) {
		mu.Lock()
		defer mu.Unlock()
		answered++
		if answered == 1 {
			return fetchAnswer(req, kerr.UnknownLeaderEpoch.Code), nil
		}
		return fetchAnswer(req, 0), nil
	}}
	m := NewManager(ManagerConfig{LocalID: 2, Transport: tr, Backoff: time.Hour})
	defer m.Close()
	m.AddPartitions([]Follow{{Replica: r, Leader: 1, LeaderEpoch: 4}})
	eventually(t, waitLong, "a second fetch", func() bool { return len(tr.seen()) >= 2 })
}

// fetchLog records the partitions, and their leader epochs, of each
// Fetch a transport is sent.
type fetchLog struct {
	mu       sync.Mutex
	requests [][]int32
	epochs   []map[int32]int32 // each request's partitions' leader epochs
}

func (l *fetchLog) record(req *kmsg.FetchRequest) []int32 {
	var parts []int32
	epochs := map[int32]int32{}
	for _, t := range req.Topics {
		for _, rp := range t.Partitions {
			parts = append(parts, rp.Partition)
			epochs[rp.Partition] = rp.CurrentLeaderEpoch
		}
	}
	l.mu.Lock()
	l.requests = append(l.requests, parts)
	l.epochs = append(l.epochs, epochs)
	l.mu.Unlock()
	return parts
}

// sent reports whether a request named partition.
func (l *fetchLog) sent(partition int32) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, parts := range l.requests {
		if slices.Contains(parts, partition) {
			return true
		}
	}
	return false
}

// parkingTransport holds every Fetch, as a leader holds a follower's
// fetch with nothing to read, until ctx ends, and records the partitions
// of each request.
type parkingTransport struct{ fetchLog }

func (p *parkingTransport) Send(ctx context.Context, _ int32, req kmsg.Request) (kmsg.Response, error) {
	p.record(req.(*kmsg.FetchRequest))
	<-ctx.Done()
	return nil, ctx.Err()
}

// TestFetcherInterruptsHeldFetchForNewPartition: a partition with
// records (a leadership move) added to a fetcher whose request the
// leader holds (nothing to read on the partitions it names) is fetched
// at once, not when that request comes back; so is a partition the
// session holds taking a new leader epoch. The transport here holds
// requests forever.
func TestFetcherInterruptsHeldFetchForNewPartition(t *testing.T) {
	first := followerOf(t, 1)
	second := followerAt(t, 4, 1, stamped("a", 2, 0, 1))
	tr := &parkingTransport{}
	m := NewManager(ManagerConfig{LocalID: 2, Transport: tr, Backoff: time.Hour})
	defer m.Close()
	m.AddPartitions([]Follow{{Replica: first, Leader: 1, LeaderEpoch: 1}})
	eventually(t, waitLong, "a fetch of partition 3", func() bool { return tr.sent(3) })
	m.AddPartitions([]Follow{{Replica: second, Leader: 1, LeaderEpoch: 1}})
	eventually(t, waitLong, "a fetch of partition 4", func() bool { return tr.sent(4) })
	// The same partitions again are no change: the request in flight
	// stays.
	ft := func() *fetcher { m.mu.Lock(); defer m.mu.Unlock(); return m.fetchers[1] }()
	ft.mu.Lock()
	before := ft.changes
	ft.mu.Unlock()
	m.AddPartitions([]Follow{{Replica: first, Leader: 1, LeaderEpoch: 1}, {Replica: second, Leader: 1, LeaderEpoch: 1}})
	ft.mu.Lock()
	if ft.changes != before {
		t.Fatalf("re-adding known partitions counted as %d changes", ft.changes-before)
	}
	ft.mu.Unlock()
	// A new leader epoch of a partition in the session: the request in
	// flight asked for the old one.
	if err := first.BecomeFollower(PartitionState{Leader: 1, LeaderEpoch: 2, Replicas: []int32{1, 2}, ISR: []int32{1, 2}}); err != nil {
		t.Fatal(err)
	}
	m.AddPartitions([]Follow{{Replica: first, Leader: 1, LeaderEpoch: 2}})
	eventually(t, waitLong, "a fetch of partition 3 in epoch 2", func() bool {
		tr.mu.Lock()
		defer tr.mu.Unlock()
		return len(tr.epochs) > 0 && tr.epochs[len(tr.epochs)-1][3] == 2
	})
}

// sessionTransport is a leader's fetch sessions as a follower sees
// them: a full request opens session 1, every named partition is
// answered with nothing new, and a request naming nothing is held as a
// leader holds an idle follower's (up to a short MaxWait). It counts
// full requests and records the partitions each request names.
type sessionTransport struct {
	fetchLog
	full int // guarded by mu
}

func (s *sessionTransport) Send(ctx context.Context, _ int32, req kmsg.Request) (kmsg.Response, error) {
	f := req.(*kmsg.FetchRequest)
	parts := s.record(f)
	s.mu.Lock()
	if f.SessionEpoch == 0 {
		s.full++
	}
	s.mu.Unlock()
	if len(parts) == 0 {
		select {
		case <-time.After(20 * time.Millisecond):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	resp := fetchAnswer(req, 0).(*kmsg.FetchResponse)
	resp.SessionID = 1
	return resp, nil
}

// TestFetcherAddsNeverWrittenPartitionsIncrementally: never-written
// partitions added to a fetcher one at a time, while its requests are
// held and answered, each join the next incremental request: the only
// full request is the first (each add used to interrupt the request in
// flight, and the next request, full, named every partition so far).
func TestFetcherAddsNeverWrittenPartitionsIncrementally(t *testing.T) {
	tr := &sessionTransport{}
	m := NewManager(ManagerConfig{LocalID: 2, Transport: tr, Backoff: time.Hour})
	defer m.Close()
	const n = 40
	for p := range int32(n) {
		r := followerAt(t, p, 0)
		m.AddPartitions([]Follow{{Replica: r, Leader: 1, LeaderEpoch: 0}})
		eventually(t, waitLong, "a fetch naming the new partition", func() bool { return tr.sent(p) })
	}
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if tr.full != 1 {
		t.Fatalf("%d full requests for %d partitions added one by one, want 1", tr.full, n)
	}
	for i, parts := range tr.requests[1:] {
		if len(parts) > 1 {
			t.Fatalf("incremental request %d names %v: more than the partition just added", i+1, parts)
		}
	}
}

// handTransport hands each Fetch to the test and returns the answer the
// test gives.
type handTransport struct {
	reqs  chan *kmsg.FetchRequest
	resps chan kmsg.Response
}

func (h *handTransport) Send(ctx context.Context, _ int32, req kmsg.Request) (kmsg.Response, error) {
	select {
	case h.reqs <- req.(*kmsg.FetchRequest):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	select {
	case r := <-h.resps:
		return r, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (h *handTransport) next(t *testing.T) *kmsg.FetchRequest {
	t.Helper()
	select {
	case r := <-h.reqs:
		return r
	case <-time.After(waitLong):
		t.Fatal("no fetch request")
		return nil
	}
}

// TestFetcherDropsAnswerForPartitionAddedBack: a partition removed and
// added back while a request is in flight joins without interrupting it
// (it has no records), but the answer, which carries the partition as
// it was (here FENCED_LEADER_EPOCH), is not applied to it: the
// partition is not fenced, and the next request is full and names it.
func TestFetcherDropsAnswerForPartitionAddedBack(t *testing.T) {
	keep, back := followerAt(t, 1, 3), followerAt(t, 2, 3)
	tr := &handTransport{reqs: make(chan *kmsg.FetchRequest), resps: make(chan kmsg.Response)}
	m := NewManager(ManagerConfig{LocalID: 2, Transport: tr, Backoff: time.Hour})
	defer m.Close()
	m.AddPartitions([]Follow{{Replica: keep, Leader: 1, LeaderEpoch: 3}, {Replica: back, Leader: 1, LeaderEpoch: 3}})
	first := tr.next(t)
	if first.SessionEpoch != 0 {
		t.Fatalf("first request at epoch %d", first.SessionEpoch)
	}
	ok := fetchAnswer(first, 0).(*kmsg.FetchResponse)
	ok.SessionID = 1
	tr.resps <- ok
	held := tr.next(t)
	if held.SessionEpoch != 1 || len(held.Topics) != 0 {
		t.Fatalf("second request: epoch %d, %d topics", held.SessionEpoch, len(held.Topics))
	}
	m.RemovePartitions([]*Replica{back})
	m.AddPartitions([]Follow{{Replica: back, Leader: 1, LeaderEpoch: 3}})
	fenced := kmsg.NewPtrFetchResponse()
	fenced.SessionID = 1
	rt := kmsg.NewFetchResponseTopic()
	rt.TopicID = [16]byte{9}
	rp := kmsg.NewFetchResponseTopicPartition()
	rp.Partition, rp.ErrorCode = 2, kerr.FencedLeaderEpoch.Code
	rt.Partitions = append(rt.Partitions, rp)
	fenced.Topics = append(fenced.Topics, rt)
	tr.resps <- fenced
	third := tr.next(t)
	var names []int32
	for _, t := range third.Topics {
		for _, p := range t.Partitions {
			names = append(names, p.Partition)
		}
	}
	slices.Sort(names)
	if third.SessionEpoch != 0 || !slices.Equal(names, []int32{1, 2}) {
		t.Fatalf("request after the stale answer: epoch %d naming %v, want a full one naming [1 2]", third.SessionEpoch, names)
	}
	tr.resps <- ok
}

// TestFetcherRestartsLogAtLeaderStart: a follower whose log ends (at 4)
// below the leader's log start (11, inside the leader's batch 10-11)
// drops its log and starts it at the leader's start; the leader's first
// batch then starts below that, so the log starts at its base (10), and
// the follower appends from there and catches up.
func TestFetcherRestartsLogAtLeaderStart(t *testing.T) {
	r := followerOf(t, 1, stamped("a", 2, 0, 1), stamped("b", 2, 2, 1))
	leaderBatches := append(stamped("k", 2, 10, 1), stamped("m", 2, 12, 1)...)
	tr := &scriptTransport{answer: func(req kmsg.Request) (kmsg.Response, error) {
		switch q := req.(type) {
		case *kmsg.ListOffsetsRequest:
			resp := q.ResponseKind().(*kmsg.ListOffsetsResponse)
			rt := kmsg.NewListOffsetsResponseTopic()
			rp := kmsg.NewListOffsetsResponseTopicPartition()
			rp.Offset = 14 // latest: the leader's log end
			if q.Topics[0].Partitions[0].Timestamp == -2 {
				rp.Offset = 11 // earliest: the leader's log start
			}
			rt.Partitions = append(rt.Partitions, rp)
			resp.Topics = append(resp.Topics, rt)
			return resp, nil
		default:
			return answerFetch(req, func(_ [16]byte, p *kmsg.FetchRequestTopicPartition) kmsg.FetchResponseTopicPartition {
				rp := kmsg.NewFetchResponseTopicPartition()
				rp.Partition = p.Partition
				rp.HighWatermark, rp.LogStartOffset = 14, 11
				switch {
				case p.FetchOffset < 11:
					rp.ErrorCode = kerr.OffsetOutOfRange.Code
				case p.FetchOffset < 14:
					rp.RecordBatches = leaderBatches
				}
				return rp
			}), nil
		}
	}}
	m := NewManager(ManagerConfig{LocalID: 2, Transport: tr, Backoff: time.Millisecond})
	defer m.Close()
	m.AddPartitions([]Follow{{Replica: r, Leader: 1, LeaderEpoch: 1}})
	eventually(t, waitLong, "the follower to reach the leader's end", func() bool { return r.Log().EndOffset() == 14 })
	if start := r.Log().StartOffset(); start != 11 {
		t.Errorf("log start %d, want the leader's 11", start)
	}
	if hw := r.HighWatermark(); hw != 14 {
		t.Errorf("high watermark %d, want 14", hw)
	}
	got, err := r.Log().ReadBytes(11, 1<<20, 14)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, leaderBatches) {
		t.Errorf("follower's log from 11 differs from the leader's batches")
	}
	var restarted bool
	for _, f := range tr.seen() {
		if f.FetchOffset == 11 && f.LastFetchedEpoch == -1 {
			restarted = true
		}
	}
	if !restarted {
		t.Errorf("no fetch from 11 with an empty epoch cache: %+v", tr.seen())
	}
}
