package replica

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	wlog "weir/internal/log"
)

// simulation drives three replicas step by step, with no goroutines: each
// step is a produce, one follower fetch round trip, a crash or restart, a
// lag check, or a leader election, chosen by a seeded random source. The
// controller is simulated too (it commits ISR changes whose epochs match
// and elects only from the ISR, as Kafka's does with unclean election
// off). After every step it checks that nothing committed is lost or
// changed and that every ISR member holds the committed prefix.
type simulation struct {
	t   *testing.T
	c   *memCluster
	rnd *rand.Rand

	// The controller's view.
	leader         int32
	leaderEpoch    int32
	partitionEpoch int32
	isr            []int32
	replicas       []int32

	down     map[int32]bool
	fetchers map[int32]*fetcher // one synchronous fetcher per node

	committed []byte // the longest committed prefix seen (leader's bytes below its high watermark)
	lastHW    int64  // leader's high watermark in leaderEpoch
	stats     map[string]int
	trace     []string
}

func (s *simulation) logf(format string, args ...any) {
	s.trace = append(s.trace, fmt.Sprintf(format, args...))
}

func (s *simulation) fatalf(format string, args ...any) {
	s.t.Helper()
	for _, l := range s.trace[max(0, len(s.trace)-40):] {
		s.t.Log(l)
	}
	s.t.Fatalf(format, args...)
}

func TestSimulatedFailures(t *testing.T) {
	total := map[string]int{}
	for seed := range uint64(24) {
		t.Run(fmt.Sprint("seed-", seed), func(t *testing.T) {
			s := newSimulation(t, seed)
			for step := range 600 {
				s.step(step)
				s.check(step)
			}
			s.heal()
			t.Logf("steps: %v; committed %d bytes", s.stats, len(s.committed))
			for k, v := range s.stats {
				total[k] += v
			}
		})
	}
	for _, what := range []string{"elect", "truncations", "shrink", "expand", "not-attempted", "answer-lost", "restart"} {
		if total[what] == 0 {
			t.Errorf("the seeds never exercised %s: %v", what, total)
		}
	}
}

func newSimulation(t *testing.T, seed uint64) *simulation {
	c := newMemCluster(t, 1, 2, 3)
	c.manual = true
	// Small fetches (a few batches each) keep followers part way behind,
	// where the ISR rules matter.
	c.partitionMaxBytes = 300
	for _, n := range c.nodes {
		n.manager = c.newManager(n.id)
	}
	s := &simulation{t: t, c: c, rnd: rand.New(rand.NewPCG(seed, 99)), replicas: []int32{1, 2, 3},
		down: map[int32]bool{}, fetchers: map[int32]*fetcher{}, stats: map[string]int{}}
	for _, id := range s.replicas {
		c.nodes[id].replica.SetMinISR(1)
	}
	s.isr = []int32{1, 2, 3}
	s.elect(1, false)
	return s
}

func (s *simulation) state() PartitionState {
	return PartitionState{Leader: s.leader, LeaderEpoch: s.leaderEpoch, PartitionEpoch: s.partitionEpoch, Replicas: s.replicas, ISR: slices.Clone(s.isr)}
}

// elect makes id leader in a new epoch; with crashed, the old leader went
// down and the controller removes it from the ISR.
func (s *simulation) elect(id int32, crashed bool) {
	old := s.leader
	if crashed {
		s.isr = slices.DeleteFunc(s.isr, func(x int32) bool { return x == old })
		s.down[old] = true
	}
	s.leader = id
	s.leaderEpoch++
	s.partitionEpoch++
	s.lastHW = -1
	st := s.state()
	if err := s.c.nodes[id].replica.BecomeLeader(st); err != nil {
		s.t.Fatal(err)
	}
	delete(s.fetchers, id)
	for _, n := range s.replicas {
		if n != id && !s.down[n] {
			s.follow(n)
		}
	}
}

// follow makes node n follow the current leader with a fresh fetcher.
func (s *simulation) follow(n int32) {
	r := s.c.nodes[n].replica
	if err := r.BecomeFollower(s.state()); err != nil {
		s.t.Fatal(err)
	}
	f := s.c.nodes[n].manager.newFetcher(s.leader)
	f.add([]Follow{{Replica: r, Leader: s.leader, LeaderEpoch: s.leaderEpoch}})
	s.fetchers[n] = f
}

func (s *simulation) step(step int) {
	leader := s.c.nodes[s.leader].replica
	switch p := s.rnd.IntN(100); {
	case p < 35:
		s.stats["produce"]++
		s.logf("%d produce to %d (leo %d)", step, s.leader, s.c.nodes[s.leader].log.EndOffset())
		if _, err := leader.Append(batch(fmt.Sprint("s", step), 1+s.rnd.IntN(3)), 1, walOpts()); err != nil {
			s.t.Fatalf("step %d: produce: %v", step, err)
		}
	case p < 85:
		live := s.liveFollowers()
		if len(live) == 0 {
			return
		}
		s.stats["fetch"]++
		s.fetchRound(live[s.rnd.IntN(len(live))])
	case p < 89:
		// A follower crashes; it stays in the ISR until the lag check.
		live := s.liveFollowers()
		if len(live) == 0 {
			return
		}
		s.stats["crash"]++
		n := live[s.rnd.IntN(len(live))]
		s.logf("%d crash %d", step, n)
		s.down[n] = true
		delete(s.fetchers, n)
	case p < 93:
		// A crashed node restarts from its disk and follows.
		var downs []int32
		for _, n := range s.replicas {
			if s.down[n] {
				downs = append(downs, n)
			}
		}
		if len(downs) == 0 {
			return
		}
		s.stats["restart"]++
		n := downs[s.rnd.IntN(len(downs))]
		s.logf("%d restart %d (hw %d leo %d)", step, n, s.c.nodes[n].replica.HighWatermark(), s.c.nodes[n].log.EndOffset())
		s.c.nodes[n].manager.Close()
		hw := s.c.nodes[n].replica.HighWatermark()
		if err := s.c.nodes[n].log.Close(); err != nil {
			s.t.Fatal(err)
		}
		s.c.open(s.c.nodes[n], hw)
		delete(s.down, n)
		s.follow(n)
	case p < 94:
		// The leader learns the controller's state from metadata (a
		// no-op unless an ISR answer was lost on the way).
		s.stats["metadata"]++
		if err := leader.BecomeLeader(s.state()); err != nil {
			s.t.Fatalf("step %d: metadata: %v", step, err)
		}
	case p < 96:
		s.stats["lag-check"]++
		s.logf("%d lag check", step)
		s.c.clock.Advance(DefaultMaxLag/2 + time.Second)
		leader.MaybeShrinkISR()
	default:
		// Leader election among the other ISR members: a crash of the
		// leader, or a clean move.
		var candidates []int32
		for _, n := range s.isr {
			if n != s.leader && !s.down[n] {
				candidates = append(candidates, n)
			}
		}
		if len(candidates) == 0 {
			return
		}
		s.stats["elect"]++
		next, crash := candidates[s.rnd.IntN(len(candidates))], s.rnd.IntN(2) == 0
		s.logf("%d elect %d (crash old %d: %v) epoch %d; isr %v; new leader leo %d hw %d", step, next, s.leader, crash, s.leaderEpoch+1, s.isr, s.c.nodes[next].log.EndOffset(), s.c.nodes[next].replica.HighWatermark())
		s.elect(next, crash)
	}
	// The controller answers queued ISR changes at a random later step,
	// so some answers arrive after the leadership moved.
	if s.rnd.IntN(2) == 0 {
		s.controller()
	}
}

func (s *simulation) liveFollowers() []int32 {
	var out []int32
	for _, n := range s.replicas {
		if n != s.leader && !s.down[n] && s.fetchers[n] != nil {
			out = append(out, n)
		}
	}
	return out
}

// fetchRound is one Fetch from follower n to its leader and the handling
// of the answer, as the fetcher goroutine would do it.
func (s *simulation) fetchRound(n int32) {
	f := s.fetchers[n]
	f.mu.Lock()
	clear(f.delays)
	f.mu.Unlock()
	f.truncateEpochless()
	req, sent, _ := f.buildRequest()
	if req == nil {
		return
	}
	before := s.c.nodes[n].replica.Stats().Truncations
	p := req.Topics[0].Partitions[0]
	resp, _ := s.c.fetchOnce(s.c.nodes[f.leader], req)
	rp := resp.Topics[0].Partitions[0]
	f.handleResponse(context.Background(), sent, resp)
	s.logf("  fetch %d<-%d off %d last %d epoch %d: err %d hw %d div %d/%d bytes %d -> leo %d hw %d; leader hw %d", n, f.leader, p.FetchOffset, p.LastFetchedEpoch, p.CurrentLeaderEpoch, rp.ErrorCode, rp.HighWatermark, rp.DivergingEpoch.Epoch, rp.DivergingEpoch.EndOffset, len(rp.RecordBatches), s.c.nodes[n].log.EndOffset(), s.c.nodes[n].replica.HighWatermark(), s.c.nodes[f.leader].replica.HighWatermark())
	s.stats["truncations"] += int(s.c.nodes[n].replica.Stats().Truncations - before)
}

// controller answers queued ISR changes as the real controller does: a
// change computed from the current epochs commits and bumps the partition
// epoch; a stale one is refused.
func (s *simulation) controller() {
	s.c.mu.Lock()
	queued := s.c.queued
	s.c.queued = nil
	s.c.mu.Unlock()
	var requeue []isrChangeMsg
	defer func() {
		s.c.mu.Lock()
		s.c.queued = append(s.c.queued, requeue...)
		s.c.mu.Unlock()
	}()
	for _, m := range queued {
		switch {
		case m.c.LeaderEpoch != s.leaderEpoch || m.r != s.c.nodes[s.leader].replica:
			m.r.CompleteISRChange(m.c, ISRChangeResult{Err: kerr.FencedLeaderEpoch})
		case m.c.PartitionEpoch != s.partitionEpoch:
			m.r.CompleteISRChange(m.c, ISRChangeResult{Err: kerr.InvalidUpdateVersion})
		case s.rnd.IntN(10) == 0:
			// Refused before anything was committed: the leader proposes
			// again later.
			s.stats["not-attempted"]++
			m.r.CompleteISRChange(m.c, ISRChangeResult{Err: kerr.OperationNotAttempted})
		case s.rnd.IntN(10) == 0:
			// Committed, but the answer is lost: the broker resends the
			// same change, which now meets a newer partition epoch.
			s.stats["answer-lost"]++
			s.commit(m.c)
			if !m.r.CompleteISRChange(m.c, ISRChangeResult{Err: errors.New("connection reset")}) {
				s.t.Fatal("an unknown outcome must be resent")
			}
			requeue = append(requeue, m)
		default:
			s.commit(m.c)
			m.r.CompleteISRChange(m.c, ISRChangeResult{LeaderEpoch: s.leaderEpoch, PartitionEpoch: s.partitionEpoch, ISR: s.isr})
		}
	}
}

func (s *simulation) commit(c ISRChange) {
	if len(c.NewISR) < len(s.isr) {
		s.stats["shrink"]++
	} else {
		s.stats["expand"]++
	}
	s.partitionEpoch++
	s.isr = slices.Clone(c.NewISR)
	s.logf("  isr -> %v", s.isr)
}

// check asserts the invariants after a step.
func (s *simulation) check(step int) {
	ln := s.c.nodes[s.leader]
	hw, leo := ln.replica.HighWatermark(), ln.log.EndOffset()
	if hw > leo {
		s.t.Fatalf("step %d: leader high watermark %d above its log end %d", step, hw, leo)
	}
	if hw < s.lastHW {
		s.t.Fatalf("step %d: leader high watermark went back from %d to %d in epoch %d", step, s.lastHW, hw, s.leaderEpoch)
	}
	s.lastHW = hw
	// Nothing committed is ever lost or changed: the leader's log starts
	// with every byte ever committed.
	all := s.read(ln, leo)
	if !bytes.HasPrefix(all, s.committed) {
		s.fatalf("step %d: leader %d lost committed data (%d committed bytes, log of %d)", step, s.leader, len(s.committed), len(all))
	}
	cur := s.read(ln, hw)
	if len(cur) > len(s.committed) {
		s.committed = cur
	}
	// Every ISR member holds what the leader has committed.
	for _, n := range s.isr {
		if got := s.read(s.c.nodes[n], s.c.nodes[n].log.EndOffset()); !bytes.HasPrefix(got, cur) {
			i := 0
			for i < min(len(got), len(cur)) && got[i] == cur[i] {
				i++
			}
			s.logf("member %d: %d bytes, committed %d, first difference at %d", n, len(got), len(cur), i)
			s.logf("member %d: %s", n, headersOf(s.c.nodes[n]))
			s.logf("leader %d: %s", s.leader, headersOf(ln))
			s.fatalf("step %d: ISR member %d lacks the committed prefix below %d (isr %v, leader %d)", step, n, hw, s.isr, s.leader)
		}
	}
}

func (s *simulation) read(n *memNode, end int64) []byte {
	b, err := readRange(n.log, 0, end)
	if err != nil {
		s.t.Fatal(err)
	}
	return b
}

// heal restarts everyone, lets the followers fetch until they have the
// leader's log, and checks that all logs are then identical.
func (s *simulation) heal() {
	for _, n := range s.replicas {
		if s.down[n] {
			s.c.open(s.c.nodes[n], 0)
			delete(s.down, n)
			s.follow(n)
		}
	}
	if _, err := s.c.nodes[s.leader].replica.Append(batch("final", 1), 1, walOpts()); err != nil {
		s.t.Fatal(err)
	}
	want := s.c.nodes[s.leader].log.EndOffset()
	for round := 0; ; round++ {
		// Metadata reaches the leader (it settles changes left waiting
		// for it).
		if err := s.c.nodes[s.leader].replica.BecomeLeader(s.state()); err != nil {
			s.t.Fatal(err)
		}
		done := true
		for _, n := range s.liveFollowers() {
			s.fetchRound(n)
			s.controller()
			done = done && s.c.nodes[n].log.EndOffset() == want
		}
		if done && len(s.isr) == 3 {
			break
		}
		if round > 200 {
			s.t.Fatalf("followers did not converge: isr %v", s.isr)
		}
	}
	lead := s.read(s.c.nodes[s.leader], want)
	for _, n := range s.replicas {
		if got := s.read(s.c.nodes[n], want); !bytes.Equal(got, lead) {
			s.t.Fatalf("node %d differs from leader %d after healing", n, s.leader)
		}
	}
}

func headersOf(n *memNode) string {
	var b bytes.Buffer
	_ = n.log.ScanHeaders(0, func(h wlog.BatchHeader) bool {
		fmt.Fprintf(&b, "%d@%d/%d ", h.BaseOffset, h.LeaderEpoch, h.CRC%1000)
		return true
	})
	return b.String()
}
