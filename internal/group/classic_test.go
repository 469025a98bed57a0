package group

import (
	"bytes"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestClassicTranscript walks one classic group through the life a Kafka
// consumer group goes through: a first member, a second and third joining
// (each forcing a rebalance), heartbeats during the rebalance, syncs
// parked until the leader's assignment arrives, and a clean leave.
func TestClassicTranscript(t *testing.T) {
	h := newHarness(t)
	const g = "orders"
	h.addTopic("t", 1, 4)

	// A lone member joins: v4+ first hands it an id, then the join phase
	// completes at once (no initial delay configured).
	id1, r1 := h.joinNew(g, "t")
	if r1.Generation != 1 || r1.LeaderID != id1 || len(r1.Members) != 1 || *r1.Protocol != "range" {
		t.Fatalf("first generation: gen %d leader %q members %d", r1.Generation, r1.LeaderID, len(r1.Members))
	}
	s1 := h.syncGroup(syncReq(g, id1, 1, map[string][]byte{id1: []byte("a1")}))
	expectCode(t, "leader sync", s1.ErrorCode, 0)
	if string(s1.MemberAssignment) != "a1" || *s1.Protocol != "range" || *s1.ProtocolType != "consumer" {
		t.Fatalf("leader sync: %q %v %v", s1.MemberAssignment, s1.Protocol, s1.ProtocolType)
	}
	if d := h.describe(g); d.State != "Stable" || len(d.Members) != 1 || string(d.Members[0].MemberAssignment) != "a1" {
		t.Fatalf("describe after first generation: %+v", d)
	}
	expectCode(t, "stable heartbeat", h.heartbeat(g, id1, 1), 0)

	// A second member arrives: its join parks while the group prepares a
	// rebalance; the first member learns of it from its heartbeat.
	r := h.join(joinReq(g, "", "t"))
	expectCode(t, "second member first join", r.ErrorCode, kerr.MemberIDRequired.Code)
	id2 := r.MemberID
	j2 := h.joinAsync(joinReq(g, id2, "t"))
	stillWaiting(t, "second member join", j2)
	if d := h.describe(g); d.State != "PreparingRebalance" {
		t.Fatalf("state %s, want PreparingRebalance", d.State)
	}
	expectCode(t, "heartbeat during rebalance", h.heartbeat(g, id1, 1), kerr.RebalanceInProgress.Code)
	expectCode(t, "sync during rebalance", h.syncGroup(syncReq(g, id1, 1, nil)).ErrorCode, kerr.RebalanceInProgress.Code)

	// The first member rejoins: everyone is in, generation 2 starts.
	r1 = h.join(joinReq(g, id1, "t"))
	r2 := recv(t, j2)
	expectCode(t, "rejoin", r1.ErrorCode, 0)
	expectCode(t, "second join", r2.ErrorCode, 0)
	if r1.Generation != 2 || r2.Generation != 2 {
		t.Fatalf("generations %d %d, want 2", r1.Generation, r2.Generation)
	}
	if r1.LeaderID != id1 || r2.LeaderID != id1 || len(r1.Members) != 2 || len(r2.Members) != 0 {
		t.Fatalf("leader %q/%q, members %d/%d", r1.LeaderID, r2.LeaderID, len(r1.Members), len(r2.Members))
	}
	if d := h.describe(g); d.State != "CompletingRebalance" || d.Protocol != "" {
		t.Fatalf("describe while completing: state %s protocol %q", d.State, d.Protocol)
	}
	// Heartbeats are fine between the join answer and the sync.
	expectCode(t, "heartbeat while completing", h.heartbeat(g, id2, 2), 0)
	// A commit is refused until the assignment is in.
	allCodes(t, "commit while completing", commitCodes(h.commit(commitReq(g, id2, 2, "t", map[int32]int64{0: 1}))), kerr.RebalanceInProgress.Code)

	// The follower's sync parks until the leader's arrives.
	s2 := h.syncAsync(syncReq(g, id2, 2, nil))
	stillWaiting(t, "follower sync", s2)
	s1 = h.syncGroup(syncReq(g, id1, 2, map[string][]byte{id1: []byte("x1"), id2: []byte("x2")}))
	if got := recv(t, s2); got.ErrorCode != 0 || string(got.MemberAssignment) != "x2" {
		t.Fatalf("follower sync: code %d assignment %q", got.ErrorCode, got.MemberAssignment)
	}
	if string(s1.MemberAssignment) != "x1" {
		t.Fatalf("leader assignment %q", s1.MemberAssignment)
	}

	// A third member: both existing members must rejoin.
	r = h.join(joinReq(g, "", "t"))
	id3 := r.MemberID
	j3 := h.joinAsync(joinReq(g, id3, "t"))
	expectCode(t, "m1 heartbeat", h.heartbeat(g, id1, 2), kerr.RebalanceInProgress.Code)
	expectCode(t, "m2 heartbeat", h.heartbeat(g, id2, 2), kerr.RebalanceInProgress.Code)
	j1 := h.joinAsync(joinReq(g, id1, "t"))
	stillWaiting(t, "m1 rejoin", j1)
	r2 = h.join(joinReq(g, id2, "t"))
	r1, r3 := recv(t, j1), recv(t, j3)
	for _, x := range []*kmsg.JoinGroupResponse{r1, r2, r3} {
		expectCode(t, "third generation join", x.ErrorCode, 0)
		if x.Generation != 3 {
			t.Fatalf("generation %d, want 3", x.Generation)
		}
	}
	if len(r1.Members) != 3 {
		t.Fatalf("leader sees %d members", len(r1.Members))
	}
	h.syncGroup(syncReq(g, id1, 3, map[string][]byte{id1: {1}, id2: {2}, id3: {3}}))
	if got := h.syncGroup(syncReq(g, id3, 3, nil)); !bytes.Equal(got.MemberAssignment, []byte{3}) {
		t.Fatalf("late sync in stable group: %v", got.MemberAssignment)
	}

	// The leader leaves: the group rebalances around the other two and a
	// new leader is chosen.
	lr := kmsg.NewPtrLeaveGroupRequest()
	lr.Version = 5
	lr.Group = g
	lr.Members = []kmsg.LeaveGroupRequestMember{{MemberID: id1}, {MemberID: "nobody"}}
	lresp, err := h.c.LeaveGroup(ctxb, lr)
	if err != nil {
		t.Fatal(err)
	}
	expectCode(t, "leave top level", lresp.ErrorCode, 0)
	expectCode(t, "leave m1", lresp.Members[0].ErrorCode, 0)
	expectCode(t, "leave unknown", lresp.Members[1].ErrorCode, kerr.UnknownMemberID.Code)
	expectCode(t, "left member heartbeat", h.heartbeat(g, id1, 3), kerr.UnknownMemberID.Code)
	j2 = h.joinAsync(joinReq(g, id2, "t"))
	r3 = h.join(joinReq(g, id3, "t"))
	r2 = recv(t, j2)
	if r2.Generation != 4 || r3.Generation != 4 || r2.LeaderID != r3.LeaderID || r2.LeaderID == id1 {
		t.Fatalf("after leave: gen %d/%d leader %q/%q", r2.Generation, r3.Generation, r2.LeaderID, r3.LeaderID)
	}
	if st := h.c.Stats(); st.ClassicRebalances != 4 {
		t.Fatalf("rebalances %d, want 4", st.ClassicRebalances)
	}
}

// TestClassicSessionExpiry: a member that stops heartbeating is removed
// after its session timeout and the others rebalance without it.
func TestClassicSessionExpiry(t *testing.T) {
	h := newHarness(t)
	const g = "g"
	id1, _ := h.joinNew(g, "t")
	h.syncGroup(syncReq(g, id1, 1, nil))
	r := h.join(joinReq(g, "", "t"))
	id2 := r.MemberID
	j2 := h.joinAsync(joinReq(g, id2, "t"))
	j1 := h.joinAsync(joinReq(g, id1, "t"))
	recv(t, j1)
	recv(t, j2)
	h.syncGroup(syncReq(g, id1, 2, map[string][]byte{id1: {1}, id2: {2}}))
	h.syncGroup(syncReq(g, id2, 2, nil))

	// id1 heartbeats every 4s, id2 never: after 10s id2 is gone.
	for range 2 {
		h.advance(4 * time.Second)
		expectCode(t, "m1 heartbeat", h.heartbeat(g, id1, 2), 0)
	}
	h.advance(4 * time.Second)
	expectCode(t, "m1 heartbeat after m2 expired", h.heartbeat(g, id1, 2), kerr.RebalanceInProgress.Code)
	expectCode(t, "expired member", h.heartbeat(g, id2, 2), kerr.UnknownMemberID.Code)
	r = h.join(joinReq(g, id1, "t"))
	if r.Generation != 3 || len(r.Members) != 1 {
		t.Fatalf("after expiry: gen %d members %d", r.Generation, len(r.Members))
	}
	if h.c.Stats().MembersExpired != 1 {
		t.Fatalf("expired %d, want 1", h.c.Stats().MembersExpired)
	}
}

// TestClassicRebalanceTimeout: a member that does not rejoin within the
// rebalance timeout is dropped and the join phase completes without it;
// one that gets its join answer but never syncs is dropped too.
func TestClassicRebalanceTimeout(t *testing.T) {
	h := newHarness(t)
	const g = "g"
	id1, _ := h.joinNew(g, "t")
	h.syncGroup(syncReq(g, id1, 1, nil))
	r := h.join(joinReq(g, "", "t"))
	id2 := r.MemberID
	j2 := h.joinAsync(joinReq(g, id2, "t"))
	// id1 keeps heartbeating (so its session lives) but never rejoins.
	for range 7 {
		h.advance(4 * time.Second)
		expectCode(t, "heartbeat", h.heartbeat(g, id1, 1), kerr.RebalanceInProgress.Code)
	}
	stillWaiting(t, "join", j2)
	h.advance(3 * time.Second) // 31s > 30s rebalance timeout
	r2 := recv(t, j2)
	if r2.Generation != 2 || r2.LeaderID != id2 || len(r2.Members) != 1 {
		t.Fatalf("gen %d leader %q members %d", r2.Generation, r2.LeaderID, len(r2.Members))
	}
	expectCode(t, "dropped member", h.heartbeat(g, id1, 1), kerr.UnknownMemberID.Code)

	// Now a second member joins but never syncs.
	r = h.join(joinReq(g, "", "t"))
	id3 := r.MemberID
	j3 := h.joinAsync(joinReq(g, id3, "t"))
	h.join(joinReq(g, id2, "t"))
	recv(t, j3)
	h.syncGroup(syncReq(g, id2, 3, nil))
	if d := h.describe(g); d.State != "Stable" {
		t.Fatalf("state %s", d.State)
	}
	for range 7 {
		h.advance(4 * time.Second)
		h.heartbeat(g, id2, 3)
		h.heartbeat(g, id3, 3)
	}
	h.advance(3 * time.Second)
	expectCode(t, "member that never synced", h.heartbeat(g, id3, 3), kerr.UnknownMemberID.Code)
	expectCode(t, "remaining member", h.heartbeat(g, id2, 3), kerr.RebalanceInProgress.Code)
}

// TestClassicStaticMember: a static member that restarts gets a new member
// id without a rebalance; its old id is fenced.
func TestClassicStaticMember(t *testing.T) {
	h := newHarness(t)
	const g = "g"
	inst := kmsg.StringPtr("instance-1")
	req := joinReq(g, "", "t")
	req.InstanceID = inst
	// Static members join directly, without MEMBER_ID_REQUIRED.
	r := h.join(req)
	expectCode(t, "static join", r.ErrorCode, 0)
	old := r.MemberID
	if r.Generation != 1 || r.LeaderID != old {
		t.Fatalf("gen %d leader %q", r.Generation, r.LeaderID)
	}
	h.syncGroup(withInstance(syncReq(g, old, 1, map[string][]byte{old: []byte("a")}), inst))

	// Restart: same instance, no member id.
	r = h.join(req)
	expectCode(t, "static rejoin", r.ErrorCode, 0)
	nu := r.MemberID
	if nu == old || r.Generation != 1 {
		t.Fatalf("new id %q (old %q), generation %d: want a new id and no rebalance", nu, old, r.Generation)
	}
	if !r.SkipAssignment || r.LeaderID != nu {
		t.Fatalf("v9 leader replacement: skip %v leader %q", r.SkipAssignment, r.LeaderID)
	}
	if d := h.describe(g); d.State != "Stable" || len(d.Members) != 1 || d.Members[0].MemberID != nu || string(d.Members[0].MemberAssignment) != "a" {
		t.Fatalf("describe after replacement: %+v", d)
	}
	s := h.syncGroup(withInstance(syncReq(g, nu, 1, nil), inst))
	if string(s.MemberAssignment) != "a" {
		t.Fatalf("replacement kept assignment %q", s.MemberAssignment)
	}
	hb := kmsg.NewPtrHeartbeatRequest()
	hb.Version = 4
	hb.Group, hb.MemberID, hb.Generation, hb.InstanceID = g, old, 1, inst
	resp, _ := h.c.Heartbeat(ctxb, hb)
	expectCode(t, "fenced old id", resp.ErrorCode, kerr.FencedInstanceID.Code)

	// An older client (v8) is shown the old leader id so it does not
	// recompute the assignment.
	req8 := joinReq(g, "", "t")
	req8.Version = 8
	req8.InstanceID = inst
	r = h.join(req8)
	if r.LeaderID != nu || r.MemberID == nu {
		t.Fatalf("v8 replacement: leader %q member %q", r.LeaderID, r.MemberID)
	}

	// Removing the static member by instance id alone (admin leave).
	lr := kmsg.NewPtrLeaveGroupRequest()
	lr.Version = 5
	lr.Group = g
	lr.Members = []kmsg.LeaveGroupRequestMember{{InstanceID: inst}}
	lresp, _ := h.c.LeaveGroup(ctxb, lr)
	expectCode(t, "admin leave", lresp.Members[0].ErrorCode, 0)
	if d := h.describe(g); d.State != "Empty" {
		t.Fatalf("state after admin leave: %s", d.State)
	}
}

func withInstance(r *kmsg.SyncGroupRequest, inst *string) *kmsg.SyncGroupRequest {
	r.InstanceID = inst
	return r
}

// TestClassicInitialRebalanceDelay: the first rebalance of an empty group
// waits group.initial.rebalance.delay.ms, and longer while members keep
// arriving, within the rebalance timeout.
func TestClassicInitialRebalanceDelay(t *testing.T) {
	h := newHarness(t, func(c *Config) {
		c.NoInitialRebalanceDelay = false
		c.InitialRebalanceDelay = 3 * time.Second
	})
	const g = "g"
	old := func(member string) *kmsg.JoinGroupRequest {
		r := joinReq(g, member, "t")
		r.Version = 3 // no MEMBER_ID_REQUIRED round trip
		return r
	}
	j1 := h.joinAsync(old(""))
	h.advance(2 * time.Second)
	stillWaiting(t, "first join", j1)
	j2 := h.joinAsync(old(""))
	h.advance(1 * time.Second) // first delay over, but a member came: extend
	stillWaiting(t, "first join after extension", j1)
	h.advance(2900 * time.Millisecond)
	stillWaiting(t, "first join before the extension ends", j1)
	h.advance(100 * time.Millisecond)
	r1, r2 := recv(t, j1), recv(t, j2)
	if r1.Generation != 1 || r2.Generation != 1 || r1.LeaderID != r2.LeaderID {
		t.Fatalf("gen %d/%d leaders %q/%q", r1.Generation, r2.Generation, r1.LeaderID, r2.LeaderID)
	}
	leader := r1
	if r2.MemberID == r2.LeaderID {
		leader = r2
	}
	if len(leader.Members) != 2 {
		t.Fatalf("leader sees %d members, want both", len(leader.Members))
	}
}

func TestClassicErrors(t *testing.T) {
	h := newHarness(t)
	const g = "g"
	id1, _ := h.joinNew(g, "t")
	h.syncGroup(syncReq(g, id1, 1, nil))

	other := joinReq(g, "", "t")
	other.ProtocolType = "connect"
	badSession := joinReq(g, "", "t")
	badSession.SessionTimeoutMillis = 1000
	noGroup := joinReq("", "", "t")
	unknownInGroupless := joinReq("nope", "ghost", "t")
	noProtocols := joinReq("fresh", "", "t")
	noProtocols.Protocols = nil

	for _, tc := range []struct {
		name string
		req  *kmsg.JoinGroupRequest
		want int16
	}{
		{"empty group id", noGroup, kerr.InvalidGroupID.Code},
		{"session timeout below minimum", badSession, kerr.InvalidSessionTimeout.Code},
		{"other protocol type", other, kerr.InconsistentGroupProtocol.Code},
		{"member id for a group that does not exist", unknownInGroupless, kerr.UnknownMemberID.Code},
		{"no protocols", noProtocols, kerr.InconsistentGroupProtocol.Code},
		{"unknown member", joinReq(g, "ghost", "t"), kerr.UnknownMemberID.Code},
	} {
		t.Run(tc.name, func(t *testing.T) {
			expectCode(t, tc.name, h.join(tc.req).ErrorCode, tc.want)
		})
	}
	expectCode(t, "sync wrong generation", h.syncGroup(syncReq(g, id1, 7, nil)).ErrorCode, kerr.IllegalGeneration.Code)
	badProto := syncReq(g, id1, 1, nil)
	badProto.Protocol = kmsg.StringPtr("roundrobin")
	expectCode(t, "sync other protocol", h.syncGroup(badProto).ErrorCode, kerr.InconsistentGroupProtocol.Code)
	expectCode(t, "sync unknown group", h.syncGroup(syncReq("nope", id1, 1, nil)).ErrorCode, kerr.UnknownMemberID.Code)
	expectCode(t, "heartbeat wrong generation", h.heartbeat(g, id1, 0), kerr.IllegalGeneration.Code)
	expectCode(t, "heartbeat unknown member", h.heartbeat(g, "ghost", 1), kerr.UnknownMemberID.Code)
	expectCode(t, "heartbeat unknown group", h.heartbeat("nope", id1, 1), kerr.UnknownMemberID.Code)
	expectCode(t, "heartbeat empty group id", h.heartbeat("", id1, 1), kerr.InvalidGroupID.Code)

	// LeaveGroup v0-v2 carry one member and a top-level error.
	lr := kmsg.NewPtrLeaveGroupRequest()
	lr.Version = 1
	lr.Group = g
	lr.MemberID = "ghost"
	resp, _ := h.c.LeaveGroup(ctxb, lr)
	expectCode(t, "v1 leave of unknown member", resp.ErrorCode, kerr.UnknownMemberID.Code)
	lr.MemberID = id1
	resp, _ = h.c.LeaveGroup(ctxb, lr)
	expectCode(t, "v1 leave", resp.ErrorCode, 0)
	if d := h.describe(g); d.State != "Empty" || len(d.Members) != 0 {
		t.Fatalf("after the last member left: %s with %d members", d.State, len(d.Members))
	}
	if gen := lastClassicGeneration(t, h, g); gen != 2 {
		t.Fatalf("empty group generation %d, want 2", gen)
	}
}

func lastClassicGeneration(t *testing.T, h *harness, id string) int32 {
	t.Helper()
	var gen int32 = -1
	h.inspect(id, func(g *group) {
		if g != nil && g.classic != nil {
			gen = g.classic.generation
		}
	})
	return gen
}

// TestClassicMaxGroupSize: joins beyond group.max.size are refused.
func TestClassicMaxGroupSize(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.MaxGroupSize = 1 })
	const g = "g"
	id1, _ := h.joinNew(g, "t")
	h.syncGroup(syncReq(g, id1, 1, nil))
	// A full group refuses a new member before handing out an id.
	r := h.join(joinReq(g, "", "t"))
	expectCode(t, "second member", r.ErrorCode, kerr.GroupMaxSizeReached.Code)
	if r.MemberID != "" {
		t.Fatalf("refused member got id %q", r.MemberID)
	}
	// The existing member may still rejoin.
	r = h.join(joinReq(g, id1, "t"))
	expectCode(t, "existing member rejoins", r.ErrorCode, 0)
}

// TestClassicCloseAnswersParkedCalls: closing the coordinator answers a
// parked JoinGroup with NOT_COORDINATOR instead of leaving it hanging.
func TestClassicCloseAnswersParkedCalls(t *testing.T) {
	h := newHarness(t)
	const g = "g"
	id1, _ := h.joinNew(g, "t")
	h.syncGroup(syncReq(g, id1, 1, nil))
	r := h.join(joinReq(g, "", "t"))
	j2 := h.joinAsync(joinReq(g, r.MemberID, "t"))
	stillWaiting(t, "join", j2)
	h.c.Close()
	expectCode(t, "parked join at close", recv(t, j2).ErrorCode, kerr.NotCoordinator.Code)
	expectCode(t, "join after close", h.join(joinReq(g, "", "t")).ErrorCode, kerr.NotCoordinator.Code)
}

// FuzzParseSubscription: the consumer-protocol metadata a client sends is
// parsed without panicking, and what kmsg encodes parses back to its
// topics.
func FuzzParseSubscription(f *testing.F) {
	f.Add(subscription("a", "b"))
	f.Add(subscription())
	m := kmsg.ConsumerMemberMetadata{Version: 3, Topics: []string{"x"}, UserData: []byte{1}, Rack: kmsg.StringPtr("r")}
	f.Add(m.AppendTo(nil))
	f.Add([]byte{0, 0, 0x7f, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		topics, ok := parseSubscriptionTopics(b)
		if !ok {
			return
		}
		var m kmsg.ConsumerMemberMetadata
		if err := m.ReadFrom(b); err == nil && len(m.Topics) != len(topics) {
			t.Fatalf("parsed %v, kmsg reads %v", topics, m.Topics)
		}
	})
}
