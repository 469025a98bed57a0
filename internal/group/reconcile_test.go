package group

import (
	"fmt"
	"sort"
	"strings"
	"testing"
)

// set builds partitions of topic 1 with the given assignment epoch.
func set(epoch int32, ps ...int32) tps {
	out := make(tps)
	for _, p := range ps {
		out.add(tid(1), p, epoch)
	}
	return out
}

func (t tps) String() string {
	var parts []string
	for _, id := range sortedTopicIDs(t) {
		for _, p := range sortedKeys(t[id]) {
			parts = append(parts, fmt.Sprintf("%d@%d", p, t[id][p]))
		}
	}
	sort.Strings(parts)
	return "{" + strings.Join(parts, " ") + "}"
}

func TestReconcile(t *testing.T) {
	held := map[int32]string{}
	holder := func(_ topicID, p int32) string { return held[p] }
	all := func(topicID) bool { return true }
	none := func(topicID) bool { return false }
	for _, tc := range []struct {
		name       string
		cur        assignState
		target     tps
		epoch      int32
		subscribed func(topicID) bool
		heldBy     map[int32]string
		owned      tps
		want       string
	}{
		{
			name:   "reconciled member is left alone",
			cur:    assignState{epoch: 3, state: memberStable, assigned: set(2, 0, 1), pending: tps{}},
			target: set(0, 0, 1), epoch: 3, owned: set(0, 0, 1),
			want: "STABLE e3 p0 assigned {0@2 1@2} pending {}",
		},
		{
			name:   "new member takes free partitions at the target epoch",
			cur:    assignState{assigned: tps{}, pending: tps{}},
			target: set(0, 0, 1), epoch: 4, owned: tps{},
			want: "STABLE e4 p0 assigned {0@4 1@4} pending {}",
		},
		{
			name:   "partitions held by others wait",
			cur:    assignState{assigned: tps{}, pending: tps{}},
			target: set(0, 0, 1), epoch: 4, heldBy: map[int32]string{1: "other"}, owned: tps{},
			want: "UNRELEASED_PARTITIONS e4 p0 assigned {0@4} pending {}",
		},
		{
			name:   "only held partitions: wait at the target epoch",
			cur:    assignState{assigned: tps{}, pending: tps{}},
			target: set(0, 1), epoch: 4, heldBy: map[int32]string{1: "other"}, owned: tps{},
			want: "UNRELEASED_PARTITIONS e4 p0 assigned {} pending {}",
		},
		{
			name:   "revocation first, epoch kept",
			cur:    assignState{epoch: 2, prevEpoch: 1, state: memberStable, assigned: set(1, 0, 1, 2), pending: tps{}},
			target: set(0, 0, 3), epoch: 3, owned: set(0, 0, 1, 2),
			want: "UNREVOKED_PARTITIONS e2 p2 assigned {0@1} pending {1@1 2@1}",
		},
		{
			name:   "still owning a revoked partition: no progress",
			cur:    assignState{epoch: 2, prevEpoch: 2, state: memberUnrevoked, assigned: set(1, 0), pending: set(1, 1, 2)},
			target: set(0, 0, 3), epoch: 3, owned: set(0, 0, 2),
			want: "UNREVOKED_PARTITIONS e2 p2 assigned {0@1} pending {1@1 2@1}",
		},
		{
			name:   "a keepalive says nothing about revocation: no progress",
			cur:    assignState{epoch: 2, prevEpoch: 2, state: memberUnrevoked, assigned: set(1, 0), pending: set(1, 1, 2)},
			target: set(0, 0, 3), epoch: 3, owned: nil,
			want: "UNREVOKED_PARTITIONS e2 p2 assigned {0@1} pending {1@1 2@1}",
		},
		{
			name:   "revoked: move on and take the free partitions",
			cur:    assignState{epoch: 2, prevEpoch: 2, state: memberUnrevoked, assigned: set(1, 0), pending: set(1, 1, 2)},
			target: set(0, 0, 3), epoch: 3, owned: set(0, 0),
			want: "STABLE e3 p2 assigned {0@1 3@3} pending {}",
		},
		{
			name:   "revoking a partition that comes back: it is ours to keep",
			cur:    assignState{epoch: 2, prevEpoch: 2, state: memberUnrevoked, assigned: set(1, 0), pending: set(1, 1)},
			target: set(0, 0, 1), epoch: 4, heldBy: map[int32]string{1: "self"}, owned: set(0, 0),
			want: "STABLE e4 p2 assigned {0@1 1@4} pending {}",
		},
		{
			name:   "unsubscribed topic is revoked whatever the target",
			cur:    assignState{epoch: 2, state: memberStable, assigned: set(1, 0, 1), pending: tps{}},
			target: set(0, 0, 1), epoch: 3, subscribed: none, owned: set(0, 0, 1),
			want: "UNREVOKED_PARTITIONS e2 p2 assigned {} pending {0@1 1@1}",
		},
		{
			name:   "unreleased member picks up what was freed",
			cur:    assignState{epoch: 4, state: memberUnreleased, assigned: set(4, 0), pending: tps{}},
			target: set(0, 0, 1), epoch: 4, owned: set(0, 0),
			want: "STABLE e4 p4 assigned {0@4 1@4} pending {}",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			held = tc.heldBy
			if held == nil {
				held = map[int32]string{}
			}
			sub := tc.subscribed
			if sub == nil {
				sub = all
			}
			next := reconcile(tc.cur, reconcileInput{
				memberID: "self", target: tc.target, targetEpoch: tc.epoch,
				subscribed: sub, holder: holder, owned: tc.owned,
			})
			got := fmt.Sprintf("%s e%d p%d assigned %s pending %s", next.state, next.epoch, next.prevEpoch, next.assigned, next.pending)
			if got != tc.want {
				t.Fatalf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
}
