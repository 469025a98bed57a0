package alterpartition

import (
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	wlog "weir/internal/log"
	"weir/internal/replica"
)

// leader opens a real replica leading partition t/0 at leader epoch 5,
// partition epoch 7, ISR {1, 2}, whose proposals go to m, and has it
// propose dropping follower 2 (it never fetched within MaxLag).
func leader(t *testing.T, m *Manager) *replica.Replica {
	t.Helper()
	l, err := wlog.Open(t.TempDir(), wlog.DefaultConfig(), wlog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	clk := newManual()
	env := replica.NewEnv(replica.Env{
		LocalID: 1, MaxLag: time.Second, Now: clk.Now,
		OnISRChange: func(r *replica.Replica, ch replica.ISRChange) { m.Submit(r, ch) },
	})
	r, err := replica.Open(l, 0, replica.Config{Env: env, Topic: "t", TopicID: [16]byte{1}, MinISR: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.BecomeLeader(replica.PartitionState{Leader: 1, LeaderEpoch: 5, PartitionEpoch: 7, Replicas: []int32{1, 2}, ISR: []int32{1, 2}}); err != nil {
		t.Fatal(err)
	}
	clk.Advance(2 * time.Second)
	r.MaybeShrinkISR()
	return r
}

// TestReplicaAnswers: a real replica's shrink goes out as AlterPartition,
// and what it does with each answer is its own rule: a definite answer
// commits, a stale one (an older partition epoch) or FENCED_LEADER_EPOCH
// keeps the change in flight without a resend until metadata arrives,
// and NOT_CONTROLLER is sent again after the back-off.
func TestReplicaAnswers(t *testing.T) {
	for _, tc := range []struct {
		name      string
		answer    func(req *kmsg.AlterPartitionRequest) *kmsg.AlterPartitionResponse
		resent    bool
		committed []int32
		pending   []int32
	}{
		{"accepted", accept, false, []int32{1}, nil},
		{"stale partition epoch", func(req *kmsg.AlterPartitionRequest) *kmsg.AlterPartitionResponse {
			resp := accept(req)
			resp.Topics[0].Partitions[0].PartitionEpoch = 6
			return resp
		}, false, []int32{1, 2}, []int32{1}},
		{"fenced leader epoch", func(req *kmsg.AlterPartitionRequest) *kmsg.AlterPartitionResponse {
			resp := accept(req)
			resp.Topics[0].Partitions[0].ErrorCode = kerr.FencedLeaderEpoch.Code
			return resp
		}, false, []int32{1, 2}, []int32{1}},
		{"not controller", func(*kmsg.AlterPartitionRequest) *kmsg.AlterPartitionResponse {
			resp := kmsg.NewPtrAlterPartitionResponse()
			resp.ErrorCode = kerr.NotController.Code
			return resp
		}, true, []int32{1}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newFakeHost()
			m, clk, _ := running(t, Config{Host: h})
			r := leader(t, m)
			c := h.next(t)
			if got := names(c.req); !slices.Equal(got, []string{"t/0 [1]"}) {
				t.Fatalf("sent %v, want the shrink to {1}", got)
			}
			if tp := c.req.Topics[0].Partitions[0]; tp.LeaderEpoch != 5 || tp.PartitionEpoch != 7 {
				t.Fatalf("sent epochs %d/%d, want 5/7", tp.LeaderEpoch, tp.PartitionEpoch)
			}
			c.answer(tc.answer(c.req), nil)
			if tc.resent {
				eventually(t, "the back-off timer", func() bool { return clk.Pending() == 1 })
				clk.Advance(DefaultMinBackoff)
				again := h.next(t)
				again.answer(accept(again.req), nil)
			} else {
				// Run handles one batch at a time: once a later proposal
				// goes out alone, the answer was taken without a resend
				// (one would wait for the back-off, which never ends here).
				sentinel := &fakePartition{topic: "u", id: [16]byte{2}}
				m.Submit(sentinel, replica.ISRChange{NewISR: []int32{1}})
				c := h.next(t)
				if got := names(c.req); !slices.Equal(got, []string{"u/0 [1]"}) {
					t.Fatalf("sent %v, want only the later proposal", got)
				}
				c.answer(accept(c.req), nil)
			}
			eventually(t, "the outcome", func() bool {
				committed, pending := r.ISR()
				return slices.Equal(committed, tc.committed) && slices.Equal(pending, tc.pending)
			})
			if tc.pending != nil {
				// In flight, the change blocks new proposals.
				r.MaybeShrinkISR()
				h.none(t)
			}
		})
	}
}
