package group

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// checkGroup verifies the server's invariant (every partition held by at
// most one member) and the clients' view (no partition owned by two
// clients at once).
func checkGroup(t *testing.T, h *harness, groupID string, ms ...*cgMember) {
	t.Helper()
	h.inspect(groupID, func(g *group) { checkNoDoubleHolders(t, g) })
	owner := make(map[tp]string)
	for _, m := range ms {
		for id, ps := range m.owned {
			for _, p := range ps {
				k := tp{id, p}
				if o, ok := owner[k]; ok {
					t.Fatalf("clients %s and %s both own %v/%d", o, m.id, id[0], p)
				}
				owner[k] = m.id
			}
		}
	}
}

// converge heartbeats every member in turn until the group is Stable,
// checking the invariants after every heartbeat.
func converge(t *testing.T, h *harness, group string, ms ...*cgMember) {
	t.Helper()
	for range 20 {
		for _, m := range ms {
			m.mustBeat()
			checkGroup(t, h, group, ms...)
		}
		if cgState(t, h, group) == "Stable" {
			return
		}
	}
	t.Fatalf("group %s did not become Stable", group)
}

func cgDescribe(t *testing.T, h *harness, group string) kmsg.ConsumerGroupDescribeResponseGroup {
	t.Helper()
	r := kmsg.NewPtrConsumerGroupDescribeRequest()
	r.Version = 1
	r.Groups = []string{group}
	resp, err := h.c.ConsumerGroupDescribe(ctxb, r)
	if err != nil {
		t.Fatal(err)
	}
	return resp.Groups[0]
}

func cgState(t *testing.T, h *harness, group string) string {
	t.Helper()
	return cgDescribe(t, h, group).State
}

func partitionsOf(m *cgMember, id [16]byte) []int32 {
	ps := append([]int32(nil), m.owned[id]...)
	sort.Slice(ps, func(i, j int) bool { return ps[i] < ps[j] })
	return ps
}

// twoMembers starts a harness with topic "t" (4 partitions) and a settled
// consumer group "cg" of members m1 and m2.
func twoMembers(t *testing.T) (*harness, *cgMember, *cgMember) {
	t.Helper()
	h := newHarness(t)
	h.addTopic("t", 1, 4)
	m1 := h.newCGMember("cg", "m1", "t")
	m1.mustBeat()
	m2 := h.newCGMember("cg", "m2", "t")
	m2.mustBeat()
	converge(t, h, "cg", m1, m2)
	return h, m1, m2
}

// TestConsumerGroupTranscript: members join and leave a KIP-848 group; a
// partition moves to its new owner only after the old owner revoked it.
func TestConsumerGroupTranscript(t *testing.T) {
	h := newHarness(t)
	h.addTopic("t", 1, 6)
	const g = "cg"
	topic := tid(1)

	m1 := h.newCGMember(g, "member-1", "t")
	r := m1.mustBeat()
	if r.MemberEpoch != 1 || m1.ownedCount() != 6 || r.HeartbeatIntervalMillis != 5000 {
		t.Fatalf("first member: epoch %d owns %d interval %d", r.MemberEpoch, m1.ownedCount(), r.HeartbeatIntervalMillis)
	}
	if st := cgState(t, h, g); st != "Stable" {
		t.Fatalf("state %s", st)
	}
	// A keepalive heartbeat carries no assignment.
	if r = m1.send(keepalive(m1)); r.Assignment != nil || r.MemberEpoch != 1 {
		t.Fatalf("keepalive: %+v", r)
	}

	// m2 joins: the group epoch moves to 2. m2 gets nothing yet: its
	// partitions are still held by m1.
	m2 := h.newCGMember(g, "member-2", "t")
	r = m2.mustBeat()
	if r.MemberEpoch != 2 || m2.ownedCount() != 0 {
		t.Fatalf("second member: epoch %d owns %d", r.MemberEpoch, m2.ownedCount())
	}
	checkGroup(t, h, g, m1, m2)
	if st := cgState(t, h, g); st != "Reconciling" {
		t.Fatalf("state %s, want Reconciling", st)
	}

	// m1 is told to revoke three partitions and stays at epoch 1.
	r = m1.mustBeat()
	if r.MemberEpoch != 1 || m1.ownedCount() != 3 {
		t.Fatalf("m1 revoking: epoch %d owns %d", r.MemberEpoch, m1.ownedCount())
	}
	// m2 still waits: m1 has not confirmed the revocation.
	if r = m2.mustBeat(); m2.ownedCount() != 0 {
		t.Fatalf("m2 got partitions before m1 released them: %v", m2.owned)
	}
	checkGroup(t, h, g, m1, m2)
	// m1 confirms (its owned list no longer has them) and moves to epoch 2.
	if r = m1.mustBeat(); r.MemberEpoch != 2 {
		t.Fatalf("m1 after revocation: epoch %d", r.MemberEpoch)
	}
	// Now m2 gets them.
	m2.mustBeat()
	if got := partitionsOf(m2, topic); fmt.Sprint(got) != "[3 4 5]" {
		t.Fatalf("m2 owns %v", got)
	}
	if got := partitionsOf(m1, topic); fmt.Sprint(got) != "[0 1 2]" {
		t.Fatalf("m1 owns %v", got)
	}
	checkGroup(t, h, g, m1, m2)
	if st := cgState(t, h, g); st != "Stable" {
		t.Fatalf("state %s", st)
	}

	// A third member: two partitions each once things settle.
	m3 := h.newCGMember(g, "member-3", "t")
	m3.mustBeat()
	converge(t, h, g, m1, m2, m3)
	for _, m := range []*cgMember{m1, m2, m3} {
		if m.ownedCount() != 2 || m.epoch != 3 {
			t.Fatalf("%s owns %d at epoch %d", m.id, m.ownedCount(), m.epoch)
		}
	}

	// m1 leaves: the others split its partitions.
	leave := m1.request(-1)
	r = m1.send(leave)
	if r.ErrorCode != 0 || r.MemberEpoch != -1 || *r.MemberID != m1.id {
		t.Fatalf("leave: %+v", r)
	}
	converge(t, h, g, m2, m3)
	if m2.ownedCount()+m3.ownedCount() != 6 || m2.ownedCount() != 3 {
		t.Fatalf("after leave: %d + %d", m2.ownedCount(), m3.ownedCount())
	}
	d := cgDescribe(t, h, g)
	if d.Epoch != 4 || d.AssignmentEpoch != 4 || d.AssignorName != "uniform" || len(d.Members) != 2 {
		t.Fatalf("describe: %+v", d)
	}
	mem := d.Members[0]
	if mem.MemberType != 1 || len(mem.Assignment.TopicPartitions) != 1 || mem.Assignment.TopicPartitions[0].Topic != "t" ||
		fmt.Sprint(mem.SubscribedTopics) != "[t]" || mem.ClientID != "cg-member-2" {
		t.Fatalf("describe member: %+v", mem)
	}
}

func keepalive(m *cgMember) *kmsg.ConsumerGroupHeartbeatRequest {
	r := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	r.Version = m.version
	r.Group = m.group
	r.MemberID = m.id
	r.MemberEpoch = m.epoch
	return r
}

func TestConsumerHeartbeatValidation(t *testing.T) {
	h := newHarness(t)
	h.addTopic("t", 1, 1)
	base := func(mut func(r *kmsg.ConsumerGroupHeartbeatRequest)) *kmsg.ConsumerGroupHeartbeatRequest {
		r := h.newCGMember("g", "m", "t").request(0)
		mut(r)
		return r
	}
	for _, tc := range []struct {
		name string
		req  *kmsg.ConsumerGroupHeartbeatRequest
		code int16
		msg  string
	}{
		{"v1 needs a member id", base(func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.MemberID = " " }), kerr.InvalidRequest.Code, "MemberId can't be empty."},
		{"empty group", base(func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.Group = "" }), kerr.InvalidRequest.Code, "GroupId can't be empty."},
		{"empty instance id", base(func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.InstanceID = kmsg.StringPtr("") }), kerr.InvalidRequest.Code, "InstanceId can't be empty."},
		{"empty rack", base(func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.RackID = kmsg.StringPtr("") }), kerr.InvalidRequest.Code, "RackId can't be empty."},
		{"join without rebalance timeout", base(func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.RebalanceTimeoutMillis = -1 }), kerr.InvalidRequest.Code, "RebalanceTimeoutMs must be provided in first request."},
		{"join owning partitions", base(func(r *kmsg.ConsumerGroupHeartbeatRequest) {
			r.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{{TopicID: tid(1), Partitions: []int32{0}}}
		}), kerr.InvalidRequest.Code, "TopicPartitions must be empty when (re-)joining."},
		{"join with null owned", base(func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.Topics = nil }), kerr.InvalidRequest.Code, "TopicPartitions must be empty when (re-)joining."},
		{"join without subscription", base(func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.SubscribedTopicNames = nil }), kerr.InvalidRequest.Code,
			"Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when (re-)joining."},
		{"static leave without instance", base(func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.MemberEpoch = -2 }), kerr.InvalidRequest.Code, "InstanceId can't be null."},
		{"bad epoch", base(func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.MemberEpoch = -3 }), kerr.InvalidRequest.Code, "MemberEpoch is invalid."},
		{"unknown assignor", base(func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.ServerAssignor = kmsg.StringPtr("sticky") }), kerr.UnsupportedAssignor.Code, ""},
		{"bad regex", base(func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.SubscribedTopicRegex = kmsg.StringPtr("t(") }), kerr.InvalidRegularExpression.Code, ""},
		{"heartbeat for a group that does not exist", base(func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.MemberEpoch = 3 }), kerr.GroupIDNotFound.Code, ""},
		{"leave a group that does not exist", base(func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.MemberEpoch = -1 }), kerr.GroupIDNotFound.Code, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := h.c.ConsumerGroupHeartbeat(ctxb, Client{}, tc.req)
			if err != nil {
				t.Fatal(err)
			}
			expectCode(t, tc.name, resp.ErrorCode, tc.code)
			if tc.msg != "" && (resp.ErrorMessage == nil || *resp.ErrorMessage != tc.msg) {
				t.Fatalf("message %v, want %q", resp.ErrorMessage, tc.msg)
			}
		})
	}
	if lg := h.listGroups(5, nil, nil); len(lg) != 0 {
		t.Fatalf("refused heartbeats created groups: %+v", lg)
	}
	// v0 clients may join without a member id; the coordinator makes one.
	m := h.newCGMember("g", "", "t")
	m.version = 0
	r := m.mustBeat()
	if r.MemberID == nil || len(*r.MemberID) != 22 {
		t.Fatalf("generated member id %v", r.MemberID)
	}
}

func TestConsumerMemberFencing(t *testing.T) {
	h, m1, m2 := twoMembers(t)
	const g = "cg"
	if m1.epoch != 2 {
		t.Fatalf("m1 epoch %d", m1.epoch)
	}

	ahead := m1.request(m1.epoch + 1)
	expectCode(t, "epoch ahead", m1.send(ahead).ErrorCode, kerr.FencedMemberEpoch.Code)
	// The previous epoch is accepted if what it owns is within its
	// assignment: the answer that moved it on may have been lost.
	prev := m1.request(1)
	expectCode(t, "previous epoch", m1.send(prev).ErrorCode, 0)
	old := m1.request(0)
	old.MemberEpoch = 1
	old.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{{TopicID: tid(1), Partitions: []int32{0, 1, 2, 3}}}
	expectCode(t, "previous epoch owning too much", m1.send(old).ErrorCode, kerr.FencedMemberEpoch.Code)
	ghost := m1.request(2)
	ghost.MemberID = "ghost"
	expectCode(t, "unknown member", m1.send(ghost).ErrorCode, kerr.UnknownMemberID.Code)

	// A fenced member rejoins with epoch 0 and the same id (KIP-1082
	// client-generated ids) and gets its partitions back.
	m1.owned = nil
	m1.epoch = 0
	r := m1.mustBeat()
	if r.MemberEpoch != 2 || m1.ownedCount() != 2 {
		t.Fatalf("rejoin: epoch %d owns %d", r.MemberEpoch, m1.ownedCount())
	}
	checkGroup(t, h, g, m1, m2)
}

// TestConsumerSessionAndRevocationTimeouts: a silent member is fenced after
// the session timeout; a member that never revokes is fenced after its
// rebalance timeout.
func TestConsumerSessionAndRevocationTimeouts(t *testing.T) {
	h, m1, m2 := twoMembers(t)
	const g = "cg"

	// m2 goes silent; m1 keeps heartbeating.
	for range 9 {
		h.advance(5 * time.Second)
		m1.mustBeat()
	}
	h.advance(1 * time.Second) // 46s since m2's last heartbeat
	expectCode(t, "expired member", m2.beat().ErrorCode, kerr.UnknownMemberID.Code)
	converge(t, h, g, m1)
	if m1.ownedCount() != 4 {
		t.Fatalf("m1 owns %d after m2 expired", m1.ownedCount())
	}

	// m3 joins with a 20s rebalance timeout; m1 is asked to revoke but
	// keeps reporting the partitions.
	m3 := h.newCGMember(g, "m3", "t")
	m3.mustBeat()
	stubborn := func() *kmsg.ConsumerGroupHeartbeatResponse {
		r := m1.request(m1.epoch)
		r.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{{TopicID: tid(1), Partitions: []int32{0, 1, 2, 3}}}
		return m1.send(r)
	}
	// m1's join set its rebalance timeout to 60s; refresh it to 20s.
	r := stubborn()
	expectCode(t, "asked to revoke", r.ErrorCode, 0)
	setRebalance := m1.request(m1.epoch)
	setRebalance.RebalanceTimeoutMillis = 20000
	setRebalance.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{{TopicID: tid(1), Partitions: []int32{0, 1, 2, 3}}}
	m1.send(setRebalance)
	for range 11 {
		h.advance(5 * time.Second)
		m3.mustBeat()
		stubborn()
	}
	// The revocation timer started with the 60s timeout at the first
	// revocation request; 55s in, m1 is still there.
	h.advance(6 * time.Second)
	m3.mustBeat()
	expectCode(t, "member that never revoked", stubborn().ErrorCode, kerr.UnknownMemberID.Code)
	converge(t, h, g, m3)
	if m3.ownedCount() != 4 {
		t.Fatalf("m3 owns %d", m3.ownedCount())
	}
	if h.c.Stats().MembersExpired != 1 {
		t.Fatalf("expired %d, want 1 (the revocation timeout is not a session expiry)", h.c.Stats().MembersExpired)
	}
}

// TestConsumerStaticMember: a static member leaving with epoch -2 keeps
// its partitions; it comes back under a new member id and gets them again
// without the group epoch moving.
func TestConsumerStaticMember(t *testing.T) {
	h := newHarness(t)
	h.addTopic("t", 1, 4)
	const g = "cg"
	inst := kmsg.StringPtr("i-1")
	s1 := h.newCGMember(g, "s1", "t")
	s1.instance = inst
	s1.mustBeat()
	m2 := h.newCGMember(g, "m2", "t")
	m2.mustBeat()
	converge(t, h, g, s1, m2)
	before := partitionsOf(s1, tid(1))
	epoch := cgDescribe(t, h, g).Epoch

	// Another process with the same instance id is refused while s1 is
	// active.
	dup := h.newCGMember(g, "dup", "t")
	dup.instance = inst
	expectCode(t, "duplicate instance", dup.beat().ErrorCode, kerr.UnreleasedInstanceID.Code)

	// s1 leaves temporarily.
	r := s1.send(s1.request(-2))
	if r.ErrorCode != 0 || r.MemberEpoch != -2 {
		t.Fatalf("static leave: %+v", r)
	}
	s1.owned = nil
	// m2 does not get s1's partitions.
	m2.mustBeat()
	if m2.ownedCount() != 2 || cgDescribe(t, h, g).Epoch != epoch {
		t.Fatalf("after static leave m2 owns %d, epoch %d (was %d)", m2.ownedCount(), cgDescribe(t, h, g).Epoch, epoch)
	}

	// s1 restarts under a new member id.
	back := h.newCGMember(g, "s1-restarted", "t")
	back.instance = inst
	r = back.mustBeat()
	if fmt.Sprint(partitionsOf(back, tid(1))) != fmt.Sprint(before) || r.MemberEpoch != epoch {
		t.Fatalf("back with %v at epoch %d, want %v at %d", partitionsOf(back, tid(1)), r.MemberEpoch, before, epoch)
	}
	checkGroup(t, h, g, back, m2)
	// The old member id is fenced.
	expectCode(t, "old id", s1.send(s1.request(epoch)).ErrorCode, kerr.FencedInstanceID.Code)

	// Leaving again and returning under the same member id works too.
	back.send(back.request(-2))
	back.epoch, back.owned = 0, nil
	if r = back.mustBeat(); r.MemberEpoch != epoch || fmt.Sprint(partitionsOf(back, tid(1))) != fmt.Sprint(before) {
		t.Fatalf("same-id return: epoch %d owns %v", r.MemberEpoch, partitionsOf(back, tid(1)))
	}

	// A static member that leaves and never returns is fenced when its
	// session expires, and its partitions move.
	back.send(back.request(-2))
	for range 10 {
		h.advance(5 * time.Second)
		m2.mustBeat()
	}
	converge(t, h, g, m2)
	if m2.ownedCount() != 4 {
		t.Fatalf("m2 owns %d after the static member expired", m2.ownedCount())
	}
}

func TestConsumerTopicsChanged(t *testing.T) {
	h := newHarness(t)
	h.addTopic("t", 1, 2)
	const g = "cg"
	m1 := h.newCGMember(g, "m1", "t", "later")
	m1.mustBeat()
	m2 := h.newCGMember(g, "m2", "t", "later")
	m2.mustBeat()
	converge(t, h, g, m1, m2)
	epoch := m1.epoch

	h.addTopic("t", 1, 6)
	h.addTopic("later", 2, 2)
	h.c.TopicsChanged()
	h.sync()
	converge(t, h, g, m1, m2)
	if m1.epoch != epoch+1 || m1.ownedCount() != 4 || m2.ownedCount() != 4 {
		t.Fatalf("after growth: epoch %d (was %d), owned %d + %d", m1.epoch, epoch, m1.ownedCount(), m2.ownedCount())
	}
	// A deleted topic's partitions are revoked.
	h.topics.Delete("later")
	h.c.TopicsChanged()
	h.sync()
	converge(t, h, g, m1, m2)
	if m1.ownedCount()+m2.ownedCount() != 6 || len(m1.owned[tid(2)])+len(m2.owned[tid(2)]) != 0 {
		t.Fatalf("after delete: %v / %v", m1.owned, m2.owned)
	}
}

func TestConsumerRegexSubscription(t *testing.T) {
	h := newHarness(t)
	h.addTopic("orders-eu", 1, 2)
	h.addTopic("orders-us", 2, 2)
	h.addTopic("refunds", 3, 2)
	h.topics.Set(TopicInfo{Name: "orders-internal", ID: tid(4), Partitions: 2, Internal: true})
	m := h.newCGMember("cg", "m")
	m.regex = kmsg.StringPtr("orders-.*")
	m.mustBeat()
	if m.ownedCount() != 4 || len(m.owned[tid(3)]) != 0 || len(m.owned[tid(4)]) != 0 {
		t.Fatalf("regex owned %v", m.owned)
	}
	// The regex must match the whole name.
	h.addTopic("xorders-eu", 5, 1)
	h.addTopic("orders-apac", 6, 1)
	h.c.TopicsChanged()
	h.sync()
	converge(t, h, "cg", m)
	if m.ownedCount() != 5 || len(m.owned[tid(5)]) != 0 {
		t.Fatalf("after new topics: %v", m.owned)
	}
	if d := cgDescribe(t, h, "cg"); d.Members[0].SubscribedTopicRegex == nil || *d.Members[0].SubscribedTopicRegex != "orders-.*" {
		t.Fatalf("describe regex: %+v", d.Members[0])
	}
}

func TestConsumerRangeAssignor(t *testing.T) {
	h := newHarness(t)
	h.addTopic("a", 1, 5)
	h.addTopic("b", 2, 3)
	ms := []*cgMember{h.newCGMember("cg", "m1", "a", "b"), h.newCGMember("cg", "m2", "a", "b")}
	for _, m := range ms {
		req := m.request(0)
		req.ServerAssignor = kmsg.StringPtr("range")
		m.apply(m.send(req))
	}
	converge(t, h, "cg", ms...)
	got := fmt.Sprint(partitionsOf(ms[0], tid(1)), partitionsOf(ms[0], tid(2)), partitionsOf(ms[1], tid(1)), partitionsOf(ms[1], tid(2)))
	if got != "[0 1 2] [0 1] [3 4] [2]" {
		t.Fatalf("range assignment %s", got)
	}
	if d := cgDescribe(t, h, "cg"); d.AssignorName != "range" {
		t.Fatalf("assignor %q", d.AssignorName)
	}
}

// TestConsumerOffsets: commits and fetches from members of a consumer
// group are checked against their member epoch.
func TestConsumerOffsets(t *testing.T) {
	h, m1, m2 := twoMembers(t)
	const g = "cg"
	p1 := partitionsOf(m1, tid(1))

	commit := func(m *cgMember, epoch int32, version int16, p int32) int16 {
		r := commitReq(g, m.id, epoch, "t", map[int32]int64{p: 100})
		r.Version = version
		return h.commit(r).Topics[0].Partitions[0].ErrorCode
	}
	expectCode(t, "current epoch", commit(m1, m1.epoch, 9, p1[0]), 0)
	expectCode(t, "epoch ahead", commit(m1, m1.epoch+1, 9, p1[0]), kerr.StaleMemberEpoch.Code)
	expectCode(t, "v8 from a consumer-protocol member", commit(m1, m1.epoch, 8, p1[0]), kerr.UnsupportedVersion.Code)
	expectCode(t, "unknown member", commit(&cgMember{id: "ghost"}, 1, 9, p1[0]), kerr.UnknownMemberID.Code)
	// An admin commit to a non-empty group is refused.
	expectCode(t, "admin commit to live group", commit(&cgMember{id: ""}, -1, 9, p1[0]), kerr.UnknownMemberID.Code)

	// m3 joins; the epoch moves on. m1 still holds p1[0] since before: its
	// commit with the old epoch is fine (KIP-1251). m3's partitions were
	// assigned at the new epoch only.
	old := m1.epoch
	m3 := h.newCGMember(g, "m3", "t")
	m3.mustBeat()
	converge(t, h, g, m1, m2, m3)
	kept := partitionsOf(m1, tid(1))
	expectCode(t, "old epoch, partition held since then", commit(m1, old, 9, kept[0]), 0)
	got := partitionsOf(m3, tid(1))
	expectCode(t, "old epoch, partition assigned later", commit(m3, old, 9, got[0]), kerr.StaleMemberEpoch.Code)

	fetch := func(memberID *string, epoch int32) int16 {
		r := kmsg.NewPtrOffsetFetchRequest()
		r.Version = 9
		rg := kmsg.NewOffsetFetchRequestGroup()
		rg.Group = g
		rg.MemberID = memberID
		rg.MemberEpoch = epoch
		r.Groups = []kmsg.OffsetFetchRequestGroup{rg}
		resp, err := h.c.OffsetFetch(ctxb, r)
		if err != nil {
			t.Fatal(err)
		}
		return resp.Groups[0].ErrorCode
	}
	expectCode(t, "fetch current epoch", fetch(&m1.id, m1.epoch), 0)
	expectCode(t, "fetch stale epoch", fetch(&m1.id, old), kerr.StaleMemberEpoch.Code)
	expectCode(t, "fetch unknown member", fetch(kmsg.StringPtr("ghost"), 3), kerr.UnknownMemberID.Code)
	expectCode(t, "admin fetch", fetch(nil, -1), 0)
}

// TestProtocolSwitching: an empty group may switch protocol; a live one
// may not be joined by the other protocol.
func TestProtocolSwitching(t *testing.T) {
	h := newHarness(t)
	h.addTopic("t", 1, 2)
	h.commit(commitReq("g", "", -1, "t", map[int32]int64{0: 5}))
	id1, _ := h.joinNew("g", "t")
	h.syncGroup(syncReq("g", id1, 1, nil))

	m := h.newCGMember("g", "m", "t")
	expectCode(t, "consumer heartbeat to live classic group", m.beat().ErrorCode, kerr.GroupIDNotFound.Code)
	if d := cgDescribe(t, h, "g"); d.ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("ConsumerGroupDescribe of a classic group: %d", d.ErrorCode)
	}

	lr := kmsg.NewPtrLeaveGroupRequest()
	lr.Version = 5
	lr.Group = "g"
	lr.Members = []kmsg.LeaveGroupRequestMember{{MemberID: id1}}
	h.c.LeaveGroup(ctxb, lr)
	m.mustBeat()
	if got := h.fetch("g", "t", 0); got[0] != 5 {
		t.Fatalf("offsets lost in the switch: %v", got)
	}
	if d := h.describe("g"); d.ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("DescribeGroups of a consumer group: %+v", d)
	}
	expectCode(t, "classic join to live consumer group", h.join(joinReq("g", "", "t")).ErrorCode, kerr.InconsistentGroupProtocol.Code)

	// Deleting needs it empty.
	dr := kmsg.NewPtrDeleteGroupsRequest()
	dr.Groups = []string{"g"}
	resp, _ := h.c.DeleteGroups(ctxb, dr)
	expectCode(t, "delete live consumer group", resp.Groups[0].ErrorCode, kerr.NonEmptyGroup.Code)
	m.send(m.request(-1))
	id2, _ := h.joinNew("g", "t")
	if id2 == "" || h.describe("g").State != "CompletingRebalance" {
		t.Fatal("empty consumer group did not become classic")
	}
}

// TestConsumerGroupSimulation drives a consumer group through random
// joins, leaves, static departures, silences, topic growth and heartbeats
// with well-behaved clients, checking after every step that no partition is
// ever held by two members, and at the end that the group settles with
// every partition assigned exactly once and evenly.
func TestConsumerGroupSimulation(t *testing.T) {
	for seed := range uint64(8) {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) { simulate(t, seed) })
	}
}

func simulate(t *testing.T, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 99))
	h := newHarness(t, func(c *Config) { c.ConsumerSessionTimeout = 20 * time.Second })
	h.addTopic("a", 1, 7)
	h.addTopic("b", 2, 5)
	const g = "sim"
	var live []*cgMember
	next := 0
	parts := map[[16]byte]int32{tid(1): 7, tid(2): 5}
	for step := range 400 {
		switch op := rng.IntN(100); {
		case op < 10 && len(live) < 8:
			next++
			m := h.newCGMember(g, fmt.Sprintf("m%d", next), "a", "b")
			if rng.IntN(3) == 0 {
				m.instance = kmsg.StringPtr(fmt.Sprintf("inst-%d", next))
			}
			m.mustBeat()
			live = append(live, m)
		case op < 15 && len(live) > 0:
			i := rng.IntN(len(live))
			m := live[i]
			m.send(m.request(-1))
			live = append(live[:i], live[i+1:]...)
		case op < 18 && len(live) > 0:
			// Silence: the member stops and its session will expire.
			i := rng.IntN(len(live))
			live = append(live[:i], live[i+1:]...)
		case op < 21 && len(live) > 0:
			// A static member restarts: it leaves with -2 and comes back
			// under a new member id, unless its session ran out.
			i := rng.IntN(len(live))
			m := live[i]
			if m.instance == nil {
				break
			}
			m.send(m.request(-2))
			live = append(live[:i], live[i+1:]...)
			checkGroup(t, h, g, live...)
			next++
			back := h.newCGMember(g, fmt.Sprintf("m%d", next), "a", "b")
			back.instance = m.instance
			back.mustBeat()
			live = append(live, back)
		case op < 23:
			id := tid(byte(1 + rng.IntN(2)))
			parts[id]++
			name := map[[16]byte]string{tid(1): "a", tid(2): "b"}[id]
			h.topics.Set(TopicInfo{Name: name, ID: id, Partitions: parts[id]})
			h.c.TopicsChanged()
			h.sync()
		case op < 33:
			// Live clients heartbeat at least every 5s, as real ones do.
			for _, m := range live {
				m.mustBeat()
			}
			h.advance(time.Duration(1+rng.IntN(4)) * time.Second)
		default:
			if len(live) > 0 {
				m := live[rng.IntN(len(live))]
				if r := m.beat(); r.ErrorCode != 0 {
					t.Fatalf("step %d: %s heartbeat: %s", step, m.id, codeName(r.ErrorCode))
				}
			}
		}
		checkGroup(t, h, g, live...)
		// Live members heartbeat often enough to stay.
		for _, m := range live {
			if rng.IntN(4) == 0 {
				m.mustBeat()
			}
		}
	}
	// Let the silent members expire, then settle.
	for range 6 {
		h.advance(5 * time.Second)
		for _, m := range live {
			m.mustBeat()
		}
	}
	if len(live) == 0 {
		return
	}
	converge(t, h, g, live...)
	total := int(parts[tid(1)] + parts[tid(2)])
	sum, lo, hi := 0, total, 0
	for _, m := range live {
		n := m.ownedCount()
		sum += n
		lo, hi = min(lo, n), max(hi, n)
	}
	if sum != total || hi-lo > 1 {
		t.Fatalf("settled with %d of %d partitions, spread %d..%d over %d members", sum, total, lo, hi, len(live))
	}
}
