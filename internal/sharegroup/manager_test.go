package sharegroup

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	wlog "weir/internal/log"
	"weir/internal/replica"
	"weir/internal/share"
	"weir/internal/sharestate"
	"weir/internal/wiretag"
)

// fakeHost is a node with in-memory topics whose partitions are real
// logs, all led here.
type fakeHost struct {
	mu         sync.Mutex
	logs       map[share.StateKey]*wlog.Log // Group unused
	names      map[[16]byte]string
	elsewhere  map[[16]byte]bool
	early      time.Duration
	groupFound map[string]bool
}

func newFakeHost() *fakeHost {
	return &fakeHost{logs: map[share.StateKey]*wlog.Log{}, names: map[[16]byte]string{}, elsewhere: map[[16]byte]bool{}, early: -1, groupFound: map[string]bool{}}
}

// addTopic makes a topic of n partitions, each holding records records.
func (h *fakeHost) addTopic(t *testing.T, name string, n int, records int) [16]byte {
	t.Helper()
	id := [16]byte{byte(len(h.names) + 1)}
	h.names[id] = name
	for p := range n {
		l, err := wlog.Open(t.TempDir(), wlog.DefaultConfig(), wlog.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		var bb wlog.BatchBuilder
		bb.Reset(time.Now().UnixMilli())
		for i := range records {
			bb.Add(time.Now().UnixMilli(), nil, fmt.Appendf(nil, "v%d", i), nil)
		}
		if records > 0 {
			if _, err := l.Append(bb.Build(), wlog.AppendOptions{LeaderEpoch: 1}); err != nil {
				t.Fatal(err)
			}
		}
		h.logs[share.StateKey{TopicID: id, Partition: int32(p)}] = l
	}
	return id
}

func (h *fakeHost) Now() time.Time { return time.Now() }
func (h *fakeHost) TopicName(id [16]byte) (string, bool) {
	n, ok := h.names[id]
	return n, ok
}
func (h *fakeHost) Topics() share.TopicLookup {
	return func(name string) (share.TopicInfo, bool) {
		for id, n := range h.names {
			if n == name {
				count := 0
				for k := range h.logs {
					if k.TopicID == id {
						count++
					}
				}
				return share.TopicInfo{ID: id, Partitions: int32(count)}, true
			}
		}
		return share.TopicInfo{}, false
	}
}
func (h *fakeHost) Partition(id [16]byte, p int32) (Partition, error) {
	if _, ok := h.names[id]; !ok {
		return nil, kerr.UnknownTopicID
	}
	l, ok := h.logs[share.StateKey{TopicID: id, Partition: p}]
	if !ok {
		return nil, kerr.UnknownTopicOrPartition
	}
	return fakePartition{l}, nil
}
func (h *fakeHost) LedElsewhere(id [16]byte) bool                     { return h.elsewhere[id] }
func (h *fakeHost) ElsewhereWait() time.Duration                      { return h.early }
func (h *fakeHost) Coordinates(string) bool                           { return true }
func (h *fakeHost) OtherGroupExists(_ context.Context, g string) bool { return h.groupFound[g] }
func (h *fakeHost) WriteGroupRecord(context.Context, string, bool) error {
	return nil
}
func (h *fakeHost) GroupRecords(context.Context, func(string, bool)) error { return nil }

type fakePartition struct{ l *wlog.Log }

func (p fakePartition) Log() *wlog.Log              { return p.l }
func (p fakePartition) HighWatermark() int64        { return p.l.EndOffset() }
func (p fakePartition) LeaderEpoch() int32          { return 1 }
func (p fakePartition) Park(*replica.Waiter) func() { return func() {} }

// slowState is a state store whose reads of chosen keys block until
// released; writes succeed at once.
type slowState struct {
	mu      sync.Mutex
	hold    map[string]chan struct{}
	reading map[string]chan struct{} // closed when a read of the key starts
}

func newSlowState() *slowState {
	return &slowState{hold: map[string]chan struct{}{}, reading: map[string]chan struct{}{}}
}

// block makes reads of k wait until the returned function is called.
func (s *slowState) block(k share.StateKey) (started <-chan struct{}, release func()) {
	rk, _ := sharestate.RecordKey(k)
	s.mu.Lock()
	defer s.mu.Unlock()
	h, r := make(chan struct{}), make(chan struct{})
	s.hold[string(rk)], s.reading[string(rk)] = h, r
	return r, func() { close(h) }
}

func (s *slowState) Ensure() error { return nil }
func (s *slowState) Write([]byte, []byte, bool, sharestate.Fence) *sharestate.Ticket {
	return nil
}
func (s *slowState) Keys(context.Context, string) []share.StateKey { return nil }
func (s *slowState) Read(ctx context.Context, rkey []byte, _ int32) ([]share.StateRecord, error) {
	s.mu.Lock()
	h, r := s.hold[string(rkey)], s.reading[string(rkey)]
	s.mu.Unlock()
	if h == nil {
		return nil, nil
	}
	close(r)
	select {
	case <-h:
		return nil, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func testManager(t *testing.T, h *fakeHost, st StateStore) *Manager {
	m := New(Config{AutoOffsetReset: "earliest"}, h, st, nil)
	t.Cleanup(m.Close)
	return m
}

func acquireSome(ctx context.Context, m *Manager, group string, id [16]byte, p int32) (acquired, error) {
	m.ensureGroup(group)
	sp, st, _ := m.partFor(group, id, p)
	return sp.acquire(ctx, acquireArgs{member: "m", maxBytes: 1 << 20, maxRecords: 100, batchSize: 100, reset: st.offsetReset})
}

// TestSlowStateReadStallsNoOtherPartition: a share partition whose state
// read hangs (its coordinator on a slow node) holds up only the users of
// that partition, and them without its lock: other partitions of the
// group and other groups acquire at once, the stats and a member's
// release go through, and the stalled acquisition completes when the read
// does.
func TestSlowStateReadStallsNoOtherPartition(t *testing.T) {
	h := newFakeHost()
	id := h.addTopic(t, "q", 2, 5)
	st := newSlowState()
	m := testManager(t, h, st)
	slow := share.StateKey{Group: "g", TopicID: id, Partition: 0}
	started, release := st.block(slow)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	type result struct {
		records int64
		err     error
	}
	first, second := make(chan result, 1), make(chan result, 1)
	go func() {
		a, err := acquireSome(ctx, m, "g", id, 0)
		first <- result{a.records, err}
	}()
	<-started
	go func() {
		a, err := acquireSome(ctx, m, "g", id, 0)
		second <- result{a.records, err}
	}()

	done := make(chan struct{})
	go func() {
		defer close(done)
		for _, c := range []struct {
			group string
			p     int32
		}{{"g", 1}, {"other", 0}, {"other", 1}} {
			a, err := acquireSome(ctx, m, c.group, id, c.p)
			if err != nil || a.records != 5 {
				t.Errorf("%s partition %d: %d records, %v; want 5 while the slow read hangs", c.group, c.p, a.records, err)
			}
		}
		m.Stats()
		sp, _, _ := m.partFor("g", id, 0)
		sp.releaseMember("m", time.Now())
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("other partitions, the stats or a release waited for the slow state read")
	}
	select {
	case r := <-first:
		t.Fatalf("the slow partition's acquisition returned (%+v) before its read did", r)
	case r := <-second:
		t.Fatalf("a second user of the loading partition returned (%+v) before the load", r)
	default:
	}
	release()
	// Both users go on once the state is loaded; one of them gets the
	// partition's five records.
	r1, r2 := <-first, <-second
	if r1.err != nil || r2.err != nil || r1.records+r2.records != 5 {
		t.Fatalf("after the load: %+v and %+v, want 5 records between them", r1, r2)
	}
}

// A user of a loading partition gives up with its context, without
// waiting for the load.
func TestLoadWaitEndsWithContext(t *testing.T) {
	h := newFakeHost()
	id := h.addTopic(t, "q", 1, 1)
	st := newSlowState()
	m := testManager(t, h, st)
	started, release := st.block(share.StateKey{Group: "g", TopicID: id, Partition: 0})
	defer release()
	go func() { _, _ = acquireSome(context.Background(), m, "g", id, 0) }()
	<-started
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := acquireSome(ctx, m, "g", id, 0); err != context.DeadlineExceeded {
		t.Fatalf("waiting on a load past its context: %v", err)
	}
}

// TestMaxWait: an empty ShareFetch parks for its MaxWaitMs unless it is a
// record_limit fetch (v2) of a consumer that asks one broker at a time
// and its topics have partitions led elsewhere: then the node's
// elsewhere wait bounds it, when that is on and shorter.
func TestMaxWait(t *testing.T) {
	h := newFakeHost()
	local := h.addTopic(t, "local", 1, 0)
	spread := h.addTopic(t, "spread", 1, 0)
	h.elsewhere[spread] = true
	m := testManager(t, h, newSlowState())
	for _, tc := range []struct {
		name    string
		topic   [16]byte
		version int16
		mode    share.AcquireMode
		tag     []byte // the all-leaders tag's value, nil for none
		early   time.Duration
		want    time.Duration
	}{
		{"led here only", local, 2, share.RecordLimit, nil, 10 * time.Millisecond, 30 * time.Second},
		{"led elsewhere", spread, 2, share.RecordLimit, nil, 10 * time.Millisecond, 10 * time.Millisecond},
		{"batch_optimized", spread, 2, share.BatchOptimized, nil, 10 * time.Millisecond, 30 * time.Second},
		{"v1 has no acquire mode", spread, 1, share.RecordLimit, nil, 10 * time.Millisecond, 30 * time.Second},
		{"asks every leader at once", spread, 2, share.RecordLimit, []byte{1}, 10 * time.Millisecond, 30 * time.Second},
		{"unknown value of the tag", spread, 2, share.RecordLimit, []byte{2}, 10 * time.Millisecond, 10 * time.Millisecond},
		{"early wait off", spread, 2, share.RecordLimit, nil, -1, 30 * time.Second},
		{"early wait longer than MaxWaitMs", spread, 2, share.RecordLimit, nil, time.Minute, 30 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h.early = tc.early
			r := kmsg.NewPtrShareFetchRequest()
			r.Version, r.ShareAcquireMode, r.MaxWaitMillis = tc.version, int8(tc.mode), 30000
			if tc.tag != nil {
				r.UnknownTags.Set(wiretag.ShareFetchAllLeaders, tc.tag)
			}
			f := &Fetch{m: m, r: r, parts: []sessionPart{{topicID: tc.topic}}}
			if got := f.maxWait(); got != tc.want {
				t.Fatalf("wait %v, want %v", got, tc.want)
			}
		})
	}
}
