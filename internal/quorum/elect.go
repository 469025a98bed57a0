package quorum

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/hashicorp/raft"

	"weir/internal/probe"
)

// Fast elections with long timeouts.
//
// raft's timeouts are long (2 s by default, Kafka's fetch timeout), so a
// loaded machine whose processes are descheduled for hundreds of
// milliseconds keeps its leader: a follower that misses heartbeats asks
// the others first (pre-vote) and is refused while they hear the leader,
// and a leader steps down only when no follower answered for the whole
// lease (check-quorum). Long timeouts alone would make every failover
// wait them out, so each voter watches for the two cases where waiting
// is pointless, and starts an election at once:
//
//   - the leader's process is gone: its raft port refuses connections
//     (probed only while its heartbeats are overdue). A descheduled or
//     partitioned leader does not refuse connections, so it keeps its
//     term until the timeouts say otherwise.
//   - no leader has been heard since this node opened (a cluster
//     starting, all of it restarting) for a grace period longer than the
//     leader's heartbeat interval. A node that led has heard one: when
//     it steps down (descheduled past its lease) the others' new leader
//     keeps its term.
//
// Then the reachable voters (their raft ports accept connections) take
// turns in id order, one every stagger, so that two survivors do not
// split the vote; a turn is only taken while a majority of the voters is
// reachable, and never within two staggers of the node seeing its raft
// term move (another voter's election under way: its winner's first
// heartbeat is on its way). A turn is a TimeoutNow this node sends itself, raft's own
// leadership-transfer step: the node becomes a candidate at once, and
// the others grant it their vote even if they still name the dead leader
// (they would refuse a pre-vote until their own timeouts). Raft's safety
// does not depend on who starts an election or when; only disruption
// does, and this never starts one while the leader's process is alive
// and known.

// watchTiming is the watch's pace.
type watchTiming struct {
	// tick is how often the watch looks.
	tick time.Duration
	// overdue is how long without a heartbeat before the leader's port
	// is probed: above raft's heartbeat interval (HeartbeatTimeout/10,
	// randomised up to twice that).
	overdue time.Duration
	// refusals is how many refused probes in a row make the leader gone.
	refusals int
	// grace is how long a node that has heard no leader since it opened
	// waits before it takes a turn.
	grace time.Duration
	// stagger is the time between two voters' turns.
	stagger time.Duration
}

func timingFor(heartbeat time.Duration) watchTiming {
	return watchTiming{
		tick:     50 * time.Millisecond,
		overdue:  max(3*heartbeat/20, 100*time.Millisecond),
		refusals: 2,
		grace:    max(heartbeat/4, 3*heartbeat/10+100*time.Millisecond),
		stagger:  max(heartbeat/8, 100*time.Millisecond),
	}
}

// look is what the watch sees of the node at one tick.
type look struct {
	now     time.Time
	leading bool // this node leads (or is shutting down)
	voter   bool // this node votes in the latest configuration
	leader  Peer // the leader it names; ID -1 for none
	// contact is the last time it heard from a leader.
	contact time.Time
	term    uint64 // its raft term
}

// electionWatch is the watch's state: a pure state machine fed looks and
// probe results by the node's watch goroutine.
type electionWatch struct {
	self   int32
	timing watchTiming
	opened time.Time

	heard    bool // a leader has been named since the node opened
	last     Peer // the last leader named
	refused  int  // refused probes of last in a row
	goneAt   time.Time
	injected time.Time // this node's last turn
	term     uint64    // the raft term last seen
	termAt   time.Time // when it last moved
}

func newElectionWatch(self int32, t watchTiming, opened time.Time) *electionWatch {
	return &electionWatch{self: self, timing: t, opened: opened, last: Peer{ID: -1}}
}

// probeLeader says which address to probe now to learn whether the
// leader's process is gone ("" for none), after taking in l.
func (w *electionWatch) probeLeader(l look) string {
	if l.term != w.term {
		w.term, w.termAt = l.term, l.now
	}
	if l.leading {
		// Having led is having heard a leader: once it steps down (its
		// process descheduled, its quorum lost) the node is not one
		// that "heard none since it opened", and it must not force an
		// election past the others' pre-vote.
		w.heard = true
	}
	if l.leading || !l.voter {
		w.refused, w.goneAt = 0, time.Time{}
		return ""
	}
	if l.leader.ID >= 0 && l.leader.ID != w.self {
		w.heard = true
		if l.leader != w.last {
			w.last, w.refused, w.goneAt = l.leader, 0, time.Time{}
		}
	}
	if l.leader.ID >= 0 && l.now.Sub(l.contact) < w.timing.overdue {
		// A leader is named and heard from: whatever was gone came
		// back, or was never gone.
		w.refused, w.goneAt = 0, time.Time{}
		return ""
	}
	if w.last.ID < 0 || !w.goneAt.IsZero() {
		return ""
	}
	return w.last.Addr
}

// probed takes in the outcome of a probe of the leader's address.
func (w *electionWatch) probed(now time.Time, refused bool) {
	if !refused {
		w.refused = 0
		return
	}
	w.refused++
	if w.refused >= w.timing.refusals && w.goneAt.IsZero() {
		w.goneAt = now
	}
}

// leaderless reports whether the node should look for an election to
// start: its leader's process is gone, or it has heard none since it
// opened for longer than the grace period; since is when that began.
func (w *electionWatch) leaderless(l look) (since time.Time, ok bool) {
	if l.leading || !l.voter {
		return time.Time{}, false
	}
	if !w.goneAt.IsZero() {
		return w.goneAt, true
	}
	if !w.heard && l.leader.ID < 0 && l.now.Sub(w.opened) >= w.timing.grace {
		return w.opened.Add(w.timing.grace), true
	}
	return time.Time{}, false
}

// turn reports whether this node should start an election now, given the
// voters (itself included) and those of the others whose raft ports
// accept connections, while leaderless since since.
func (w *electionWatch) turn(now, since time.Time, voters []int32, reachable []int32) bool {
	live := []int32{w.self}
	for _, id := range reachable {
		if id != w.self && id != w.last.ID && slices.Contains(voters, id) {
			live = append(live, id)
		}
	}
	if len(live) <= len(voters)/2 {
		return false // no majority to elect anyone
	}
	slices.Sort(live)
	rank := slices.Index(live, w.self)
	if now.Before(since.Add(time.Duration(rank) * w.timing.stagger)) {
		return false
	}
	if w.termAt.After(since) && now.Before(w.termAt.Add(2*w.timing.stagger)) {
		return false
	}
	if !w.injected.IsZero() && now.Before(w.injected.Add(time.Duration(len(voters))*w.timing.stagger)) {
		return false
	}
	w.injected = now
	return true
}

// watchLeader runs the election watch until ctx ends (multi-node
// voters and non-voters alike; a non-voter's watch does nothing).
func (n *Node) watchLeader(ctx context.Context, t watchTiming) {
	w := newElectionWatch(n.cfg.ID, t, time.Now())
	tick := time.NewTicker(t.tick)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		l := n.look()
		if addr := w.probeLeader(l); addr != "" {
			w.probed(time.Now(), probe.Dial(ctx, addr, t.tick) == probe.Refused)
		}
		since, ok := w.leaderless(l)
		if !ok {
			continue
		}
		voters, reachable := n.reachableVoters(ctx, w.last.ID, t.tick)
		if !w.turn(time.Now(), since, voters, reachable) {
			continue
		}
		n.cfg.Logger.Info("starting a raft election at once", "last_leader", w.last.ID,
			"leader_gone", !w.goneAt.IsZero(), "leaderless_for", time.Since(since).Round(time.Millisecond))
		if err := n.electSelf(); err != nil {
			n.cfg.Logger.Warn("could not start a raft election", "err", err)
		}
	}
}

// look reads the node's raft state.
func (n *Node) look() look {
	l := look{now: time.Now(), leader: Peer{ID: -1}, contact: n.r.LastContact(), term: n.r.CurrentTerm()}
	st := n.r.State()
	l.leading = st == raft.Leader || st == raft.Shutdown
	cfg := n.r.GetConfiguration().Configuration()
	for _, s := range cfg.Servers {
		if s.ID == serverID(n.cfg.ID) {
			l.voter = s.Suffrage == raft.Voter
		}
	}
	if id, addr := n.Leader(); id >= 0 {
		l.leader = Peer{ID: id, Addr: addr}
	}
	return l
}

// reachableVoters lists the voters of the latest configuration and those
// of them, other than this node and skip, that accept connections.
func (n *Node) reachableVoters(ctx context.Context, skip int32, timeout time.Duration) (voters, reachable []int32) {
	for _, s := range n.r.GetConfiguration().Configuration().Servers {
		if s.Suffrage != raft.Voter {
			continue
		}
		id, ok := parseServerID(s.ID)
		if !ok {
			continue
		}
		voters = append(voters, id)
		if id == n.cfg.ID || id == skip {
			continue
		}
		if probe.Dial(ctx, string(s.Address), timeout) == probe.Accepted {
			reachable = append(reachable, id)
		}
	}
	return voters, reachable
}

// electSelf has this node's raft start an election now: a TimeoutNow,
// the leadership-transfer step, sent to itself through its transport.
func (n *Node) electSelf() error {
	if n.tcp == nil {
		return errors.New("quorum: no transport to elect through")
	}
	id, addr := serverID(n.cfg.ID), raft.ServerAddress(n.cfg.Addr)
	req := &raft.TimeoutNowRequest{RPCHeader: raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax, ID: []byte(id), Addr: n.tcp.EncodePeer(id, addr)}}
	return n.tcp.TimeoutNow(id, addr, req, &raft.TimeoutNowResponse{})
}
