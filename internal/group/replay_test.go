package group

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// groupsSnapshot renders what clients can observe of every group: list,
// describe, consumer describe and offsets.
func groupsSnapshot(t *testing.T, h *harness) string {
	t.Helper()
	out := ""
	for _, lg := range h.listGroups(5, nil, nil) {
		out += fmt.Sprintf("%s %s %s %s\n", lg.Group, lg.GroupType, lg.GroupState, lg.ProtocolType)
		if lg.GroupType == "classic" {
			d := h.describe(lg.Group)
			out += fmt.Sprintf("  protocol %q members:", d.Protocol)
			for _, m := range d.Members {
				out += fmt.Sprintf(" %s/%q/%x", m.MemberID, m.ClientID, m.MemberAssignment)
			}
			out += fmt.Sprintf(" generation %d\n", lastClassicGeneration(t, h, lg.Group))
		} else {
			d := cgDescribe(t, h, lg.Group)
			out += fmt.Sprintf("  epoch %d/%d assignor %s\n", d.Epoch, d.AssignmentEpoch, d.AssignorName)
			for _, m := range d.Members {
				out += fmt.Sprintf("  %s epoch %d assigned %v target %v\n", m.MemberID, m.MemberEpoch, m.Assignment.TopicPartitions, m.TargetAssignment.TopicPartitions)
			}
		}
		out += fmt.Sprintf("  offsets %v\n", h.fetch(lg.Group, ""))
	}
	return out
}

// TestRestartRestoresState: after a restart the coordinator rebuilds every
// group and offset from the store, and members carry on where they were,
// also when the store was compacted in between.
func TestRestartRestoresState(t *testing.T) {
	for _, compact := range []bool{false, true} {
		t.Run(fmt.Sprint("compacted=", compact), func(t *testing.T) {
			h := newHarness(t)
			h.addTopic("t", 1, 4)

			// A simple group with offsets.
			h.commit(commitReq("simple", "", -1, "t", map[int32]int64{0: 10, 3: 13}))
			// A stable classic group of two, with a static member.
			inst := kmsg.StringPtr("i1")
			sj := joinReq("classic", "", "t")
			sj.InstanceID = inst
			id1 := h.join(sj).MemberID
			h.syncGroup(withInstance(syncReq("classic", id1, 1, map[string][]byte{id1: {1}}), inst))
			r := h.join(joinReq("classic", "", "t"))
			id2 := r.MemberID
			j2 := h.joinAsync(joinReq("classic", id2, "t"))
			sj.MemberID = id1
			h.join(sj)
			recv(t, j2)
			h.syncGroup(withInstance(syncReq("classic", id1, 2, map[string][]byte{id1: {1}, id2: {2}}), inst))
			h.syncGroup(syncReq("classic", id2, 2, nil))
			h.commit(commitReq("classic", id2, 2, "t", map[int32]int64{1: 21}))
			// A consumer-protocol group of two.
			m1 := h.newCGMember("cg", "m1", "t")
			m1.mustBeat()
			m2 := h.newCGMember("cg", "m2", "t")
			m2.mustBeat()
			converge(t, h, "cg", m1, m2)
			h.commit(cgCommit("cg", m1, 2, 31))
			// A group deleted before the restart stays deleted.
			h.commit(commitReq("doomed", "", -1, "t", map[int32]int64{0: 1}))
			dr := kmsg.NewPtrDeleteGroupsRequest()
			dr.Groups = []string{"doomed"}
			h.c.DeleteGroups(ctxb, dr)

			before := groupsSnapshot(t, h)
			if compact {
				n := h.store.Len()
				h.store.Compact()
				if h.store.Len() >= n {
					t.Fatalf("compaction kept %d of %d records", h.store.Len(), n)
				}
			}
			h.restart()
			after := groupsSnapshot(t, h)
			if before != after {
				t.Fatalf("state changed across restart\nbefore:\n%s\nafter:\n%s", before, after)
			}

			// Members carry on: classic heartbeats in the same generation,
			// consumer heartbeats at the same epoch without a rebalance.
			expectCode(t, "classic heartbeat after restart", h.heartbeat("classic", id2, 2), 0)
			epoch := m1.epoch
			m1.mustBeat()
			m2.mustBeat()
			if m1.epoch != epoch || cgState(t, h, "cg") != "Stable" {
				t.Fatalf("consumer group after restart: epoch %d (was %d), state %s", m1.epoch, epoch, cgState(t, h, "cg"))
			}
			checkGroup(t, h, "cg", m1, m2)

			// Sessions restarted at load: a member that never comes back
			// after the restart is removed once its session times out.
			h.advance(11 * time.Second)
			expectCode(t, "silent classic member", h.heartbeat("classic", id2, 2), kerr.UnknownMemberID.Code)
		})
	}
}

func cgCommit(group string, m *cgMember, p int32, offset int64) *kmsg.OffsetCommitRequest {
	r := commitReq(group, m.id, m.epoch, "t", map[int32]int64{p: offset})
	r.Version = 9
	return r
}

// TestRestartWithChangedTopics: topics that changed while the coordinator
// was down make the consumer group rebalance once it is loaded.
func TestRestartWithChangedTopics(t *testing.T) {
	h := newHarness(t)
	h.addTopic("t", 1, 2)
	m1 := h.newCGMember("cg", "m1", "t")
	m1.mustBeat()
	epoch := m1.epoch
	h.addTopic("t", 1, 5)
	h.restart()
	converge(t, h, "cg", m1)
	if m1.epoch != epoch+1 || m1.ownedCount() != 5 {
		t.Fatalf("after restart: epoch %d (was %d) owns %d", m1.epoch, epoch, m1.ownedCount())
	}
}

func TestReplayRefusesUnknownRecords(t *testing.T) {
	store := NewMemStore()
	var k encoder
	k.i16(77)
	k.str("g")
	if err := store.Append(context.Background(), "g", []Record{{Key: k.b, Value: []byte{0, 0}}}); err != nil {
		t.Fatal(err)
	}
	c, err := New(Config{Store: store})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Start(context.Background()); !errors.Is(err, ErrUnknownRecord) {
		t.Fatalf("Start: %v, want ErrUnknownRecord", err)
	}
	// Not started: requests are refused, not hung.
	r := kmsg.NewPtrHeartbeatRequest()
	r.Group = "g"
	resp, err := c.Heartbeat(context.Background(), r)
	if err != nil || resp.ErrorCode != kerr.CoordinatorNotAvailable.Code {
		t.Fatalf("heartbeat before start: %v %v", resp, err)
	}
}

// TestAppendFailures: when the store refuses a write the client gets the
// error Kafka would map it to, and nothing is applied.
func TestAppendFailures(t *testing.T) {
	h := newHarness(t)
	h.addTopic("t", 1, 2)
	h.commit(commitReq("g", "", -1, "t", map[int32]int64{0: 1}))

	h.store.FailAppends(kerr.NotEnoughReplicas)
	allCodes(t, "commit", commitCodes(h.commit(commitReq("g", "", -1, "t", map[int32]int64{0: 2}))), kerr.CoordinatorNotAvailable.Code)
	h.store.FailAppends(fmt.Errorf("wrapped: %w", kerr.NotLeaderForPartition))
	allCodes(t, "commit", commitCodes(h.commit(commitReq("g", "", -1, "t", map[int32]int64{0: 3}))), kerr.NotCoordinator.Code)
	h.store.FailAppends(nil)
	if got := h.fetch("g", "t", 0); got[0] != 1 {
		t.Fatalf("failed commits were applied: %v", got)
	}

	// A leader sync whose assignment cannot be stored fails every parked
	// member and restarts the rebalance.
	id1, _ := h.joinNew("c", "t")
	h.store.FailAppends(kerr.RequestTimedOut)
	s := h.syncGroup(syncReq("c", id1, 1, map[string][]byte{id1: {1}}))
	expectCode(t, "leader sync", s.ErrorCode, kerr.CoordinatorNotAvailable.Code)
	h.store.FailAppends(nil)
	r := h.join(joinReq("c", id1, "t"))
	if r.Generation != 2 {
		t.Fatalf("generation %d after the failed sync, want 2", r.Generation)
	}
	if s = h.syncGroup(syncReq("c", id1, 2, map[string][]byte{id1: {7}})); s.ErrorCode != 0 || s.MemberAssignment[0] != 7 {
		t.Fatalf("sync after recovery: %+v", s)
	}
	if h.c.Stats().AppendErrors != 3 {
		t.Fatalf("append errors %d, want 3", h.c.Stats().AppendErrors)
	}
}
