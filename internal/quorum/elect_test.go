package quorum

import (
	"fmt"
	"testing"
	"time"
)

// TestElectionWatch walks the watch through the cases it must tell
// apart: a leader heard from is never probed; an overdue leader whose
// port accepts connections (descheduled, partitioned) is left to raft's
// timeouts; one whose port refuses connections twice is gone, and the
// reachable voters take turns by id while a majority is reachable; a
// node that has heard no leader since it opened waits out the grace
// period first; a non-voter and the leader itself do nothing.
func TestElectionWatch(t *testing.T) {
	tm := watchTiming{tick: 50 * time.Millisecond, overdue: 300 * time.Millisecond, refusals: 2,
		grace: 700 * time.Millisecond, stagger: 250 * time.Millisecond}
	t0 := time.Unix(1_700_000_000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	leader3 := Peer{ID: 3, Addr: "l3"}
	none := Peer{ID: -1}
	voters := []int32{1, 2, 3}

	type step struct {
		ms        int  // time of the look
		leader    Peer // named leader
		contactMs int  // last contact
		leading   bool
		nonVoter  bool
		term      uint64  // raft term
		refused   bool    // outcome of a probe, if one is asked for
		reachable []int32 // other voters accepting connections
		// what the watch must do
		probe string
		elect bool
	}
	for _, tc := range []struct {
		name  string
		self  int32
		steps []step
	}{
		{"heard leader is not probed", 1, []step{
			{ms: 100, leader: leader3, contactMs: 50},
			{ms: 390, leader: leader3, contactMs: 100},
		}},
		{"overdue leader that accepts connections keeps its term", 1, []step{
			{ms: 0, leader: leader3, contactMs: 0},
			{ms: 400, leader: leader3, contactMs: 0, probe: "l3", reachable: []int32{2}},
			{ms: 450, leader: leader3, contactMs: 0, probe: "l3", reachable: []int32{2}},
			{ms: 3000, leader: none, contactMs: 0, probe: "l3", reachable: []int32{2}},
		}},
		{"gone leader: the lowest reachable voter elects at once", 1, []step{
			{ms: 0, leader: leader3, contactMs: 0},
			{ms: 350, leader: leader3, contactMs: 0, probe: "l3", refused: true, reachable: []int32{2}},
			{ms: 400, leader: leader3, contactMs: 0, probe: "l3", refused: true, reachable: []int32{2}, elect: true},
			// no second turn before every voter had one
			{ms: 450, leader: leader3, contactMs: 0, reachable: []int32{2}},
			{ms: 1100, leader: leader3, contactMs: 0, reachable: []int32{2}},
			// it did not win (a longer log elsewhere): its next turn
			{ms: 1200, leader: leader3, contactMs: 0, reachable: []int32{2}, elect: true},
		}},
		{"gone leader: the second voter waits one stagger", 2, []step{
			{ms: 0, leader: leader3, contactMs: 0},
			{ms: 350, leader: leader3, contactMs: 0, probe: "l3", refused: true, reachable: []int32{1}},
			{ms: 400, leader: leader3, contactMs: 0, probe: "l3", refused: true, reachable: []int32{1}},
			{ms: 600, leader: leader3, contactMs: 0, reachable: []int32{1}},
			{ms: 650, leader: leader3, contactMs: 0, reachable: []int32{1}, elect: true},
		}},
		{"gone leader, alone: no majority, no election", 2, []step{
			{ms: 0, leader: leader3, contactMs: 0},
			{ms: 350, leader: leader3, contactMs: 0, probe: "l3", refused: true},
			{ms: 400, leader: leader3, contactMs: 0, probe: "l3", refused: true},
			{ms: 2000, leader: leader3, contactMs: 0},
			// voter 1 reachable again, and its turn long past
			{ms: 2050, leader: leader3, contactMs: 0, reachable: []int32{1}, elect: true},
		}},
		{"another voter's election holds the turn back", 2, []step{
			{ms: 0, leader: leader3, contactMs: 0, term: 2},
			{ms: 350, leader: leader3, contactMs: 0, term: 2, probe: "l3", refused: true, reachable: []int32{1}},
			{ms: 400, leader: leader3, contactMs: 0, term: 2, probe: "l3", refused: true, reachable: []int32{1}},
			// voter 1 asked for this node's vote: the term moved
			{ms: 600, leader: leader3, contactMs: 0, term: 3, reachable: []int32{1}},
			{ms: 1050, leader: leader3, contactMs: 0, term: 3, reachable: []int32{1}},
			// voter 1 did not win: this node's turn, two staggers on
			{ms: 1100, leader: leader3, contactMs: 0, term: 3, reachable: []int32{1}, elect: true},
		}},
		{"a new leader ends it", 2, []step{
			{ms: 0, leader: leader3, contactMs: 0},
			{ms: 350, leader: leader3, contactMs: 0, probe: "l3", refused: true, reachable: []int32{1}},
			{ms: 400, leader: leader3, contactMs: 0, probe: "l3", refused: true, reachable: []int32{1}},
			{ms: 500, leader: Peer{ID: 1, Addr: "l1"}, contactMs: 490, reachable: []int32{1}},
			{ms: 700, leader: Peer{ID: 1, Addr: "l1"}, contactMs: 690, reachable: []int32{1}},
		}},
		{"the gone leader back and heard from ends it", 2, []step{
			{ms: 0, leader: leader3, contactMs: 0},
			{ms: 350, leader: leader3, contactMs: 0, probe: "l3", refused: true, reachable: []int32{1}},
			{ms: 400, leader: leader3, contactMs: 0, probe: "l3", refused: true, reachable: []int32{1}},
			{ms: 500, leader: leader3, contactMs: 480, reachable: []int32{1}},
			{ms: 800, leader: leader3, contactMs: 780, reachable: []int32{1}},
		}},
		{"no leader since opening: grace, then turns", 1, []step{
			{ms: 100, leader: none, reachable: []int32{2, 3}},
			{ms: 650, leader: none, reachable: []int32{2, 3}},
			{ms: 700, leader: none, reachable: []int32{2, 3}, elect: true},
		}},
		{"no leader since opening, not first", 3, []step{
			{ms: 700, leader: none, reachable: []int32{1, 2}},
			{ms: 1150, leader: none, reachable: []int32{1, 2}},
			{ms: 1200, leader: none, reachable: []int32{1, 2}, elect: true},
		}},
		{"no leader since opening and no majority", 1, []step{
			{ms: 2000, leader: none},
		}},
		{"a non-voter never acts", 4, []step{
			{ms: 0, leader: leader3, contactMs: 0, nonVoter: true},
			{ms: 5000, leader: leader3, contactMs: 0, nonVoter: true, reachable: []int32{1, 2}},
			{ms: 9000, leader: none, nonVoter: true, reachable: []int32{1, 2}},
		}},
		{"a leader that stepped down heard a leader: no grace election", 1, []step{
			{ms: 100, leader: Peer{ID: 1, Addr: "l1"}, leading: true, reachable: []int32{2, 3}},
			// descheduled, it lost its quorum and stepped down; the
			// others elected a leader it has not heard from yet
			{ms: 9000, leader: none, reachable: []int32{2, 3}},
			{ms: 9500, leader: none, reachable: []int32{2, 3}},
		}},
		{"the leader never acts", 3, []step{
			{ms: 2000, leader: leader3, contactMs: 0, leading: true, reachable: []int32{1, 2}},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newElectionWatch(tc.self, tm, t0)
			for i, st := range tc.steps {
				l := look{now: at(st.ms), leading: st.leading, voter: !st.nonVoter, leader: st.leader, contact: at(st.contactMs), term: st.term}
				probe := w.probeLeader(l)
				if probe != st.probe {
					t.Fatalf("step %d (%d ms): probe %q, want %q", i, st.ms, probe, st.probe)
				}
				if probe != "" {
					w.probed(l.now, st.refused)
				}
				elect := false
				if since, ok := w.leaderless(l); ok {
					elect = w.turn(l.now, since, voters, st.reachable)
				}
				if elect != st.elect {
					t.Fatalf("step %d (%d ms): elect %v, want %v", i, st.ms, elect, st.elect)
				}
			}
		})
	}
}

// TestFailoverDoesNotWaitForTimeouts: with raft's 2 s timeouts, a
// three-voter quorum elects its first leader well within them, replaces a
// leader that crashed (its port refuses connections) within a second,
// and a leader that closes hands over at once.
func TestFailoverDoesNotWaitForTimeouts(t *testing.T) {
	start := time.Now()
	c := startCluster(t, 3)
	l := c.leader(t)
	t.Logf("first leader node %d after %v", l+1, time.Since(start))
	if took := time.Since(start); took > 2*time.Second {
		t.Fatalf("first leader after %v: the election waited for the 2 s timeouts", took)
	}
	propose(t, c.nodes[l], "before")

	start = time.Now()
	c.nodes[l].CloseAbruptly()
	c.nodes[l] = nil
	l2 := c.leader(t)
	took := time.Since(start)
	t.Logf("after a crash, node %d leads after %v", l2+1, took)
	if took > 1500*time.Millisecond {
		t.Fatalf("a crashed leader was replaced after %v", took)
	}
	propose(t, c.nodes[l2], "after crash")

	// The crashed node comes back; then the leader closes.
	fsm := &listFSM{}
	n, err := Open(c.cfgs[l], fsm)
	if err != nil {
		t.Fatal(err)
	}
	c.nodes[l], c.fsms[l] = n, fsm
	eventually(t, 10*time.Second, "the restarted node catches up", func() bool { return len(fsm.list()) == 2 })
	start = time.Now()
	c.nodes[l2].Close()
	c.nodes[l2] = nil
	l3 := c.leader(t)
	took = time.Since(start)
	t.Logf("after a close, node %d leads after %v", l3+1, took)
	if took > time.Second {
		t.Fatalf("a closing leader was replaced after %v", took)
	}
	propose(t, c.nodes[l3], fmt.Sprint("after close"))
}
