package group

import (
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/streamsgroup"
)

// sgMember is a minimal Streams client of the streams group protocol: it
// keeps its epoch and reports the active tasks it was given.
type sgMember struct {
	h      *harness
	group  string
	id     string
	epoch  int32
	active []kmsg.TaskIDs
}

func wordCountTopology() *kmsg.StreamsGroupHeartbeatRequestTopology {
	top := kmsg.NewStreamsGroupHeartbeatRequestTopology()
	top.Epoch = 1
	s0 := kmsg.NewStreamsGroupHeartbeatRequestTopologySubtopology()
	s0.SubtopologyID, s0.SourceTopics, s0.RepartitionSinkTopics = "0", []string{"words"}, []string{"wc-repartition"}
	s1 := kmsg.NewStreamsGroupHeartbeatRequestTopologySubtopology()
	s1.SubtopologyID = "1"
	rt := kmsg.NewTopicInfo()
	rt.Topic = "wc-repartition"
	s1.RepartitionSourceTopics = []kmsg.TopicInfo{rt}
	ct := kmsg.NewTopicInfo()
	ct.Topic = "wc-changelog"
	s1.StateChangelogTopics = []kmsg.TopicInfo{ct}
	top.Subtopologies = []kmsg.StreamsGroupHeartbeatRequestTopologySubtopology{s0, s1}
	return &top
}

func (m *sgMember) beat() (*kmsg.StreamsGroupHeartbeatResponse, []streamsgroup.NewTopic) {
	m.h.t.Helper()
	req := kmsg.NewPtrStreamsGroupHeartbeatRequest()
	req.Group, req.MemberID, req.MemberEpoch = m.group, m.id, m.epoch
	req.RebalanceTimeoutMillis = -1
	if m.epoch == 0 {
		req.RebalanceTimeoutMillis = 60000
		req.Topology = wordCountTopology()
		req.ProcessID = kmsg.StringPtr("process-" + m.id)
		req.ActiveTasks, req.StandbyTasks, req.WarmupTasks = []kmsg.TaskIDs{}, []kmsg.TaskIDs{}, []kmsg.TaskIDs{}
	} else {
		req.ActiveTasks, req.StandbyTasks, req.WarmupTasks = append([]kmsg.TaskIDs{}, m.active...), []kmsg.TaskIDs{}, []kmsg.TaskIDs{}
	}
	resp, create, err := m.h.c.StreamsGroupHeartbeat(ctxb, Client{ID: "streams", Host: "/127.0.0.1"}, req)
	if err != nil {
		m.h.t.Fatal(err)
	}
	if resp.ErrorCode == 0 {
		m.epoch = resp.MemberEpoch
		if resp.ActiveTasks != nil {
			m.active = resp.ActiveTasks
		}
	}
	return resp, create
}

func taskCount(ts []kmsg.TaskIDs) int {
	n := 0
	for _, t := range ts {
		n += len(t.Partitions)
	}
	return n
}

// TestStreamsGroupLifecycle drives a streams group through the
// coordinator: internal topics requested, tasks assigned once they exist,
// commits checked by member epoch, the group kept across a restart,
// listed, refused by the other protocols while it has members, expired by
// session timeout, and deleted once empty.
func TestStreamsGroupLifecycle(t *testing.T) {
	h := newHarness(t)
	h.addTopic("words", 1, 4)
	a := &sgMember{h: h, group: "wc", id: "a"}
	resp, create := a.beat()
	expectCode(t, "join", resp.ErrorCode, 0)
	if len(resp.Status) != 1 || resp.Status[0].StatusCode != streamsgroup.StatusMissingInternalTopics {
		t.Fatalf("status %+v, want MISSING_INTERNAL_TOPICS", resp.Status)
	}
	names := []string{}
	for _, nt := range create {
		names = append(names, nt.Name)
		if nt.Partitions != 4 {
			t.Fatalf("%s with %d partitions, want 4", nt.Name, nt.Partitions)
		}
	}
	if !slices.Equal(names, []string{"wc-changelog", "wc-repartition"}) {
		t.Fatalf("create %v", names)
	}
	// The broker creates them and says so.
	h.addTopic("wc-repartition", 2, 4)
	h.addTopic("wc-changelog", 3, 4)
	h.c.TopicsChanged()
	h.sync()
	resp, create = a.beat()
	expectCode(t, "heartbeat", resp.ErrorCode, 0)
	if len(create) != 0 || len(resp.Status) != 0 || taskCount(resp.ActiveTasks) != 8 {
		t.Fatalf("after creation: status %+v create %v active %v", resp.Status, create, resp.ActiveTasks)
	}

	// Commits: the member at its epoch, not a stale one nor a stranger.
	commit := commitReq("wc", "a", a.epoch, "words", map[int32]int64{0: 10})
	allCodes(t, "commit", commitCodes(h.commit(commit)), 0)
	allCodes(t, "stale commit", commitCodes(h.commit(commitReq("wc", "a", a.epoch-1, "words", map[int32]int64{0: 11}))), kerr.StaleMemberEpoch.Code)
	allCodes(t, "stranger commit", commitCodes(h.commit(commitReq("wc", "x", a.epoch, "words", map[int32]int64{0: 11}))), kerr.UnknownMemberID.Code)
	old := commitReq("wc", "a", a.epoch, "words", map[int32]int64{0: 11})
	old.Version = 8
	allCodes(t, "commit v8", commitCodes(h.commit(old)), kerr.UnsupportedVersion.Code)
	if got := h.fetch("wc", "words", 0); got[0] != 10 {
		t.Fatalf("fetched %v", got)
	}

	// The coordinator moves (restart over the same log): the group, its
	// members and their epochs survive, and a heartbeat carries on.
	epoch := a.epoch
	h.restart()
	d := h.streamsDescribe("wc")
	expectCode(t, "describe after restart", d.ErrorCode, 0)
	if d.State != streamsgroup.StateStable || len(d.Members) != 1 || d.Members[0].MemberEpoch != epoch ||
		taskCount(d.Members[0].Assignment.ActiveTasks) != 8 {
		t.Fatalf("after restart: %+v", d)
	}
	resp, _ = a.beat()
	expectCode(t, "heartbeat after restart", resp.ErrorCode, 0)
	if resp.MemberEpoch != epoch {
		t.Fatalf("epoch %d after restart, want %d", resp.MemberEpoch, epoch)
	}

	// A second member: the tasks are split after a revokes.
	b := &sgMember{h: h, group: "wc", id: "b"}
	b.beat()
	for range 4 {
		a.beat()
		b.beat()
	}
	if taskCount(a.active) != 4 || taskCount(b.active) != 4 {
		t.Fatalf("split %v / %v", a.active, b.active)
	}

	// The group is listed as a streams group; the other protocols and
	// DeleteGroups leave it alone while it has members.
	lg := kmsg.NewPtrListGroupsRequest()
	lg.Version = 5
	lresp, err := h.c.ListGroups(ctxb, lg)
	if err != nil {
		t.Fatal(err)
	}
	if len(lresp.Groups) != 1 || lresp.Groups[0].GroupType != "streams" || lresp.Groups[0].ProtocolType != "streams" ||
		lresp.Groups[0].GroupState != streamsgroup.StateStable {
		t.Fatalf("listed %+v", lresp.Groups)
	}
	if dg := h.describe("wc"); dg.ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("DescribeGroups of a streams group: %s", codeName(dg.ErrorCode))
	}
	cg := h.newCGMember("wc", "c1", "words")
	if r := cg.send(cg.request(0)); r.ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("consumer heartbeat to a streams group: %s", codeName(r.ErrorCode))
	}
	if r := h.join(joinReq("wc", "", "words")); r.ErrorCode != kerr.InconsistentGroupProtocol.Code {
		t.Fatalf("JoinGroup to a streams group: %s", codeName(r.ErrorCode))
	}
	if code := h.deleteGroup("wc"); code != kerr.NonEmptyGroup.Code {
		t.Fatalf("delete of a live group: %s", codeName(code))
	}

	// b leaves; a's session expires: the group is empty, keeps its
	// offsets, and can then be deleted.
	b.epoch = streamsgroup.LeaveEpoch
	resp, _ = b.beat()
	expectCode(t, "leave", resp.ErrorCode, 0)
	h.advance(h.c.cfg.Streams.SessionTimeout + time.Second)
	if d := h.streamsDescribe("wc"); d.State != streamsgroup.StateEmpty || len(d.Members) != 0 {
		t.Fatalf("after expiry: %+v", d)
	}
	resp, _ = a.beat()
	expectCode(t, "heartbeat of an expired member", resp.ErrorCode, kerr.UnknownMemberID.Code)
	if got := h.fetch("wc", "words", 0); got[0] != 10 {
		t.Fatalf("offsets after expiry %v", got)
	}
	expectCode(t, "delete", h.deleteGroup("wc"), 0)
	if d := h.streamsDescribe("wc"); d.ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("describe after delete: %s", codeName(d.ErrorCode))
	}
	h.restart()
	if d := h.streamsDescribe("wc"); d.ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("deleted group back after restart: %s", codeName(d.ErrorCode))
	}
}

// TestStreamsHeartbeatErrors checks the answers to heartbeats that can not
// be applied.
func TestStreamsHeartbeatErrors(t *testing.T) {
	h := newHarness(t)
	h.addTopic("words", 1, 2)
	m := &sgMember{h: h, group: "wc", id: "a", epoch: 3}
	resp, _ := m.beat()
	expectCode(t, "heartbeat to no group", resp.ErrorCode, kerr.GroupIDNotFound.Code)

	// A consumer group of the same id with members.
	cg := h.newCGMember("busy", "c1", "words")
	cg.mustBeat()
	other := &sgMember{h: h, group: "busy", id: "s"}
	resp, _ = other.beat()
	expectCode(t, "join of a consumer group", resp.ErrorCode, kerr.GroupIDNotFound.Code)

	req := kmsg.NewPtrStreamsGroupHeartbeatRequest()
	req.Group, req.MemberID, req.RebalanceTimeoutMillis = "wc", "a", 1000
	resp, _, err := h.c.StreamsGroupHeartbeat(ctxb, Client{}, req)
	if err != nil {
		t.Fatal(err)
	}
	expectCode(t, "join without topology", resp.ErrorCode, kerr.InvalidRequest.Code)

	// An empty classic group (offsets only) becomes a streams group and
	// keeps its offsets.
	allCodes(t, "simple commit", commitCodes(h.commit(commitReq("simple", "", -1, "words", map[int32]int64{1: 5}))), 0)
	s := &sgMember{h: h, group: "simple", id: "s"}
	resp, _ = s.beat()
	expectCode(t, "join of an offsets-only group", resp.ErrorCode, 0)
	if got := h.fetch("simple", "words", 1); got[1] != 5 {
		t.Fatalf("offsets %v", got)
	}
}

// TestStreamsTxnCommit checks TxnOffsetCommit's member checks for a
// streams group: ILLEGAL_GENERATION for a stale epoch.
func TestStreamsTxnCommit(t *testing.T) {
	h := newHarness(t)
	a := wordCountGroup(h)
	for _, tc := range []struct {
		epoch int32
		want  int16
	}{{a.epoch, 0}, {a.epoch + 1, kerr.IllegalGeneration.Code}} {
		r := kmsg.NewPtrTxnOffsetCommitRequest()
		r.Version = 4
		r.TransactionalID, r.ProducerID, r.ProducerEpoch = "tx", 7, 0
		r.Group, r.MemberID, r.Generation = "wc", "a", tc.epoch
		rt := kmsg.NewTxnOffsetCommitRequestTopic()
		rt.Topic = "words"
		rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
		rp.Offset = 3
		rt.Partitions = append(rt.Partitions, rp)
		r.Topics = append(r.Topics, rt)
		resp, err := h.c.TxnOffsetCommit(ctxb, r)
		if err != nil {
			t.Fatal(err)
		}
		expectCode(t, "txn commit", resp.Topics[0].Partitions[0].ErrorCode, tc.want)
	}
}

func (h *harness) streamsDescribe(group string) kmsg.StreamsGroupDescribeResponseGroup {
	h.t.Helper()
	r := kmsg.NewPtrStreamsGroupDescribeRequest()
	r.Groups = []string{group}
	resp, err := h.c.StreamsGroupDescribe(ctxb, r)
	if err != nil {
		h.t.Fatal(err)
	}
	return resp.Groups[0]
}

func (h *harness) deleteGroup(group string) int16 {
	h.t.Helper()
	r := kmsg.NewPtrDeleteGroupsRequest()
	r.Version = 2
	r.Groups = []string{group}
	resp, err := h.c.DeleteGroups(ctxb, r)
	if err != nil {
		h.t.Fatal(err)
	}
	return resp.Groups[0].ErrorCode
}

// TestStreamsRevocationTimeout: a member that keeps reporting tasks it
// was told to give up is removed after its rebalance timeout, and the
// waiting member gets them.
func TestStreamsRevocationTimeout(t *testing.T) {
	h := newHarness(t)
	a := wordCountGroup(h)
	if taskCount(a.active) != 4 {
		t.Fatalf("a holds %v", a.active)
	}
	all := a.active
	b := &sgMember{h: h, group: "wc", id: "b"}
	b.beat()
	stubborn := func() {
		a.active = all // keeps reporting everything
		resp, _ := a.beat()
		expectCode(t, "stubborn heartbeat", resp.ErrorCode, 0)
		a.active = all
	}
	stubborn()
	h.inspect("wc", func(g *group) {
		if st := g.streams.Members["a"].State; st != streamsgroup.UnrevokedTasks {
			t.Fatalf("a is %v, want UNREVOKED_TASKS", st)
		}
	})
	// Heartbeats keep a's session alive; the rebalance timeout (60s)
	// still ends it.
	for range 3 {
		h.advance(25 * time.Second)
		b.beat()
		if h.streamsDescribe("wc").Members[0].MemberID != "a" {
			break
		}
		stubborn()
	}
	d := h.streamsDescribe("wc")
	if len(d.Members) != 1 || d.Members[0].MemberID != "b" {
		t.Fatalf("members after the rebalance timeout: %+v", d.Members)
	}
	b.beat()
	if taskCount(b.active) != 4 {
		t.Fatalf("b holds %v after a was removed", b.active)
	}
	resp, _ := a.beat()
	expectCode(t, "heartbeat of the removed member", resp.ErrorCode, kerr.UnknownMemberID.Code)
	// Epochs 1 (a joined), 2 (b joined), 3 (a removed).
	if n := h.c.Stats().StreamsEpochBumps; n != 3 {
		t.Fatalf("%d streams epoch bumps counted, want 3", n)
	}
}

// wordCountGroup makes the word count's topics (two partitions, the
// internal topics included) and a member that joined and holds every
// task.
func wordCountGroup(h *harness) *sgMember {
	h.t.Helper()
	h.addTopic("words", 1, 2)
	h.addTopic("wc-repartition", 2, 2)
	h.addTopic("wc-changelog", 3, 2)
	a := &sgMember{h: h, group: "wc", id: "a"}
	if resp, _ := a.beat(); resp.ErrorCode != 0 || taskCount(a.active) != 4 {
		h.t.Fatalf("join: %s, tasks %v", codeName(resp.ErrorCode), a.active)
	}
	return a
}

func TestServes(t *testing.T) {
	for _, tc := range []struct {
		partitions []int32
		p          int32
		want       bool
	}{
		{nil, 7, true},
		{[]int32{}, 0, false},
		{[]int32{1, 3}, 3, true},
		{[]int32{1, 3}, 2, false},
	} {
		c, err := New(Config{Store: NewMemStore(), Partitions: tc.partitions})
		if err != nil {
			t.Fatal(err)
		}
		if got := c.Serves(tc.p); got != tc.want {
			t.Errorf("Partitions %v: Serves(%d) = %v", tc.partitions, tc.p, got)
		}
	}
}
