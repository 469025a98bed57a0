package group

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// harness drives a Coordinator with a ManualClock, a MemStore and
// MemTopics. Requests run on the test goroutine unless they block
// (JoinGroup, SyncGroup), which the *Async helpers run in goroutines.
type harness struct {
	t      testing.TB
	clock  *ManualClock
	store  *MemStore
	topics *MemTopics
	cfg    Config
	c      *Coordinator
}

var testStart = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func testLogger(t testing.TB) *slog.Logger {
	if os.Getenv("GROUP_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.DiscardHandler)
}

func newHarness(t *testing.T, opts ...func(*Config)) *harness {
	t.Helper()
	h := &harness{
		t:      t,
		clock:  NewManualClock(testStart),
		store:  NewMemStore(),
		topics: NewMemTopics(),
	}
	h.cfg = Config{
		Logger:                  testLogger(t),
		Clock:                   h.clock,
		Store:                   h.store,
		Topics:                  h.topics,
		Shards:                  3,
		NoInitialRebalanceDelay: true,
		Random:                  newTestRandom(),
	}
	for _, o := range opts {
		o(&h.cfg)
	}
	h.start()
	return h
}

func (h *harness) start() {
	h.t.Helper()
	c, err := New(h.cfg)
	if err != nil {
		h.t.Fatal(err)
	}
	if err := c.Start(context.Background()); err != nil {
		h.t.Fatal(err)
	}
	h.c = c
	h.t.Cleanup(c.Close)
}

// restart closes the coordinator and starts a new one over the same store.
func (h *harness) restart() {
	h.t.Helper()
	h.c.Close()
	h.start()
}

// newTestRandom returns a deterministic byte source.
func newTestRandom() func([]byte) {
	var n uint64
	return func(b []byte) {
		for i := range b {
			n = n*6364136223846793005 + 1442695040888963407
			b[i] = byte(n >> 56)
		}
	}
}

// sync waits until every shard has processed everything queued so far,
// including ops queued by timers that fired.
func (h *harness) sync() {
	h.t.Helper()
	for _, s := range h.c.shards {
		if _, err := call(context.Background(), s, func(s *shard, reply func(struct{})) { reply(struct{}{}) }); err != nil {
			h.t.Fatal(err)
		}
	}
}

func (h *harness) advance(d time.Duration) {
	h.t.Helper()
	h.clock.Advance(d)
	h.sync()
}

// inspect runs fn on the goroutine owning group id.
func (h *harness) inspect(id string, fn func(g *group)) {
	h.t.Helper()
	s := h.c.shardFor(id)
	if _, err := call(context.Background(), s, func(s *shard, reply func(struct{})) {
		fn(s.groups[id])
		reply(struct{}{})
	}); err != nil {
		h.t.Fatal(err)
	}
}

var ctxb = context.Background()

func expectCode(t testing.TB, what string, got, want int16) {
	t.Helper()
	if got != want {
		t.Fatalf("%s: error code %s (%d), want %s (%d)", what, codeName(got), got, codeName(want), want)
	}
}

func codeName(c int16) string {
	if c == 0 {
		return "NONE"
	}
	if e, ok := kerr.ErrorForCode(c).(*kerr.Error); ok {
		return e.Message
	}
	return fmt.Sprint(c)
}

// --- classic helpers ---

const testClient = "client"

func subscription(topics ...string) []byte {
	m := kmsg.ConsumerMemberMetadata{Version: 0, Topics: topics}
	return m.AppendTo(nil)
}

func joinReq(group, member string, topics ...string) *kmsg.JoinGroupRequest {
	r := kmsg.NewPtrJoinGroupRequest()
	r.Version = 9
	r.Group = group
	r.MemberID = member
	r.SessionTimeoutMillis = 10000
	r.RebalanceTimeoutMillis = 30000
	r.ProtocolType = "consumer"
	p := kmsg.NewJoinGroupRequestProtocol()
	p.Name = "range"
	p.Metadata = subscription(topics...)
	r.Protocols = append(r.Protocols, p)
	return r
}

type result[T any] struct {
	resp T
	err  error
}

func (h *harness) joinAsync(req *kmsg.JoinGroupRequest) <-chan result[*kmsg.JoinGroupResponse] {
	return asyncCall(h, req.Group, func() (*kmsg.JoinGroupResponse, error) {
		return h.c.JoinGroup(ctxb, Client{ID: testClient, Host: "/127.0.0.1"}, req)
	})
}

func (h *harness) syncAsync(req *kmsg.SyncGroupRequest) <-chan result[*kmsg.SyncGroupResponse] {
	return asyncCall(h, req.Group, func() (*kmsg.SyncGroupResponse, error) { return h.c.SyncGroup(ctxb, req) })
}

func asyncCall[T any](h *harness, group string, fn func() (T, error)) <-chan result[T] {
	ch := make(chan result[T], 1)
	h.async(group, func() {
		r, err := fn()
		ch <- result[T]{r, err}
	})
	return ch
}

// recv returns the answer of an async call, failing if none comes.
func recv[T any](t testing.TB, ch <-chan result[T]) T {
	t.Helper()
	select {
	case r := <-ch:
		if r.err != nil {
			t.Fatal(r.err)
		}
		return r.resp
	case <-time.After(5 * time.Second):
		t.Fatal("parked call did not answer")
		var zero T
		return zero
	}
}

// async runs a call that may park in its own goroutine and returns once
// the coordinator has processed it (answered or parked it).
func (h *harness) async(group string, fn func()) {
	h.t.Helper()
	s := h.c.shardFor(group)
	before := s.queued.Load()
	go fn()
	eventually(h.t, 5*time.Second, func() bool { return s.queued.Load() > before })
	h.sync()
}

// eventually polls cond until it holds or timeout passes.
func eventually(t testing.TB, timeout time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met in time")
		}
		time.Sleep(time.Millisecond)
	}
}

func (h *harness) join(req *kmsg.JoinGroupRequest) *kmsg.JoinGroupResponse {
	h.t.Helper()
	r, err := h.c.JoinGroup(ctxb, Client{ID: testClient, Host: "/127.0.0.1"}, req)
	if err != nil {
		h.t.Fatal(err)
	}
	return r
}

// joinNew performs the two-step v4+ join of a new dynamic member and
// returns its id; the second join must complete without blocking.
func (h *harness) joinNew(group string, topics ...string) (string, *kmsg.JoinGroupResponse) {
	h.t.Helper()
	r := h.join(joinReq(group, "", topics...))
	expectCode(h.t, "first join", r.ErrorCode, kerr.MemberIDRequired.Code)
	id := r.MemberID
	r = h.join(joinReq(group, id, topics...))
	expectCode(h.t, "second join", r.ErrorCode, 0)
	return id, r
}

func stillWaiting[T any](t testing.TB, what string, ch <-chan T) {
	t.Helper()
	select {
	case <-ch:
		t.Fatalf("%s answered, want it still parked", what)
	default:
	}
}

func syncReq(group, member string, gen int32, assignments map[string][]byte) *kmsg.SyncGroupRequest {
	r := kmsg.NewPtrSyncGroupRequest()
	r.Version = 5
	r.Group = group
	r.MemberID = member
	r.Generation = gen
	r.ProtocolType = kmsg.StringPtr("consumer")
	r.Protocol = kmsg.StringPtr("range")
	for id, a := range assignments {
		ga := kmsg.NewSyncGroupRequestGroupAssignment()
		ga.MemberID = id
		ga.MemberAssignment = a
		r.GroupAssignment = append(r.GroupAssignment, ga)
	}
	return r
}

func (h *harness) syncGroup(req *kmsg.SyncGroupRequest) *kmsg.SyncGroupResponse {
	h.t.Helper()
	r, err := h.c.SyncGroup(ctxb, req)
	if err != nil {
		h.t.Fatal(err)
	}
	return r
}

func (h *harness) heartbeat(group, member string, gen int32) int16 {
	h.t.Helper()
	r := kmsg.NewPtrHeartbeatRequest()
	r.Version = 4
	r.Group = group
	r.MemberID = member
	r.Generation = gen
	resp, err := h.c.Heartbeat(ctxb, r)
	if err != nil {
		h.t.Fatal(err)
	}
	return resp.ErrorCode
}

func (h *harness) describe(group string) kmsg.DescribeGroupsResponseGroup {
	h.t.Helper()
	r := kmsg.NewPtrDescribeGroupsRequest()
	r.Version = 6
	r.Groups = []string{group}
	resp, err := h.c.DescribeGroups(ctxb, r)
	if err != nil {
		h.t.Fatal(err)
	}
	return resp.Groups[0]
}

// --- offset helpers ---

func commitReq(group, member string, gen int32, topic string, offsets map[int32]int64) *kmsg.OffsetCommitRequest {
	r := kmsg.NewPtrOffsetCommitRequest()
	r.Version = 9
	r.Group = group
	r.MemberID = member
	r.Generation = gen
	t := kmsg.NewOffsetCommitRequestTopic()
	t.Topic = topic
	for p := int32(0); p < 64; p++ {
		o, ok := offsets[p]
		if !ok {
			continue
		}
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Partition = p
		rp.Offset = o
		rp.LeaderEpoch = 7
		rp.Metadata = kmsg.StringPtr(fmt.Sprintf("md-%d", p))
		t.Partitions = append(t.Partitions, rp)
	}
	r.Topics = append(r.Topics, t)
	return r
}

func (h *harness) commit(req *kmsg.OffsetCommitRequest) *kmsg.OffsetCommitResponse {
	h.t.Helper()
	resp, err := h.c.OffsetCommit(ctxb, req)
	if err != nil {
		h.t.Fatal(err)
	}
	return resp
}

func commitCodes(resp *kmsg.OffsetCommitResponse) []int16 {
	var out []int16
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			out = append(out, p.ErrorCode)
		}
	}
	return out
}

func allCodes(t testing.TB, what string, codes []int16, want int16) {
	t.Helper()
	if len(codes) == 0 {
		t.Fatalf("%s: no partitions in response", what)
	}
	for _, c := range codes {
		expectCode(t, what, c, want)
	}
}

// fetch returns the committed offset per partition of topic (v8 request).
func (h *harness) fetch(group, topic string, partitions ...int32) map[int32]int64 {
	h.t.Helper()
	r := kmsg.NewPtrOffsetFetchRequest()
	r.Version = 8
	rg := kmsg.NewOffsetFetchRequestGroup()
	rg.Group = group
	if topic != "" {
		rt := kmsg.NewOffsetFetchRequestGroupTopic()
		rt.Topic = topic
		rt.Partitions = partitions
		rg.Topics = append(rg.Topics, rt)
	}
	r.Groups = append(r.Groups, rg)
	resp, err := h.c.OffsetFetch(ctxb, r)
	if err != nil {
		h.t.Fatal(err)
	}
	g := resp.Groups[0]
	expectCode(h.t, "offset fetch", g.ErrorCode, 0)
	out := make(map[int32]int64)
	for _, t := range g.Topics {
		for _, p := range t.Partitions {
			expectCode(h.t, "offset fetch partition", p.ErrorCode, 0)
			out[p.Partition] = p.Offset
		}
	}
	return out
}

// --- consumer protocol helpers ---

func tid(b byte) [16]byte {
	var id [16]byte
	id[0] = b
	id[15] = b
	return id
}

func (h *harness) addTopic(name string, id byte, partitions int32) {
	h.topics.Set(TopicInfo{Name: name, ID: tid(id), Partitions: partitions})
}

// cgMember is a minimal KIP-848 client: it remembers its epoch and owned
// partitions and revokes what the coordinator no longer assigns.
type cgMember struct {
	h        *harness
	group    string
	id       string
	instance *string
	topics   []string
	regex    *string
	epoch    int32
	owned    map[[16]byte][]int32
	version  int16
	// describable is the DESCRIBE filter of the member's principal
	// (Client.Describable); nil: no authorizer.
	describable func([]string) []string
}

func (h *harness) newCGMember(group, id string, topics ...string) *cgMember {
	return &cgMember{h: h, group: group, id: id, topics: topics, version: 1}
}

func (m *cgMember) request(epoch int32) *kmsg.ConsumerGroupHeartbeatRequest {
	r := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	r.Version = m.version
	r.Group = m.group
	r.MemberID = m.id
	r.MemberEpoch = epoch
	r.InstanceID = m.instance
	if epoch == 0 {
		r.RebalanceTimeoutMillis = 60000
		r.SubscribedTopicNames = m.topics
		if m.topics == nil {
			r.SubscribedTopicNames = []string{}
		}
		r.SubscribedTopicRegex = m.regex
		r.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	} else {
		r.Topics = m.ownedTopics()
	}
	return r
}

func (m *cgMember) ownedTopics() []kmsg.ConsumerGroupHeartbeatRequestTopic {
	out := []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	for _, id := range sortedTopicIDs(m.owned) {
		t := kmsg.NewConsumerGroupHeartbeatRequestTopic()
		t.TopicID = id
		t.Partitions = append([]int32(nil), m.owned[id]...)
		out = append(out, t)
	}
	return out
}

func (m *cgMember) send(req *kmsg.ConsumerGroupHeartbeatRequest) *kmsg.ConsumerGroupHeartbeatResponse {
	m.h.t.Helper()
	resp, err := m.h.c.ConsumerGroupHeartbeat(ctxb, Client{ID: "cg-" + m.id, Host: "/127.0.0.1", Describable: m.describable}, req)
	if err != nil {
		m.h.t.Fatal(err)
	}
	return resp
}

// beat sends a heartbeat with the member's epoch (0 to join) and applies
// the answer like a client: an assignment replaces what it owns.
func (m *cgMember) beat() *kmsg.ConsumerGroupHeartbeatResponse {
	m.h.t.Helper()
	resp := m.send(m.request(m.epoch))
	m.apply(resp)
	return resp
}

func (m *cgMember) apply(resp *kmsg.ConsumerGroupHeartbeatResponse) {
	if resp.ErrorCode != 0 {
		return
	}
	if resp.MemberID != nil {
		m.id = *resp.MemberID
	}
	m.epoch = resp.MemberEpoch
	if resp.Assignment != nil {
		m.owned = make(map[[16]byte][]int32)
		for _, t := range resp.Assignment.Topics {
			m.owned[t.TopicID] = append([]int32(nil), t.Partitions...)
		}
	}
}

func (m *cgMember) ownedCount() int {
	n := 0
	for _, ps := range m.owned {
		n += len(ps)
	}
	return n
}

func (m *cgMember) mustBeat() *kmsg.ConsumerGroupHeartbeatResponse {
	m.h.t.Helper()
	resp := m.beat()
	expectCode(m.h.t, "heartbeat of "+m.id, resp.ErrorCode, 0)
	return resp
}

// checkNoDoubleHolders verifies the holders map against the members: every
// held partition has exactly one holder, and it is the member that has it.
func checkNoDoubleHolders(t testing.TB, g *group) {
	t.Helper()
	if g == nil || g.consumer == nil {
		return
	}
	c := g.consumer
	seen := make(map[tp]string)
	for id, m := range c.members {
		for _, set := range []tps{m.assigned, m.pending} {
			for topic, ps := range set {
				for p := range ps {
					k := tp{topic, p}
					if other, dup := seen[k]; dup {
						t.Fatalf("partition %v/%d held by %s and %s", topic[0], p, other, id)
					}
					seen[k] = id
					if c.holders[topic][p] != id {
						t.Fatalf("holders says %q for %v/%d, member %s has it", c.holders[topic][p], topic[0], p, id)
					}
				}
			}
		}
	}
	n := 0
	for _, ps := range c.holders {
		n += len(ps)
	}
	if n != len(seen) {
		t.Fatalf("holders has %d partitions, members hold %d", n, len(seen))
	}
}
