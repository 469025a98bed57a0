package replica

import (
	"slices"
	"time"
)

// UnknownOffset is a follower log end offset the leader has not learnt yet
// (no fetch in the current leader epoch).
const UnknownOffset int64 = -1

// followerState is what the leader knows of one follower, from its
// fetches in the current leader epoch.
type followerState struct {
	leo                int64     // fetch offset of the last fetch; UnknownOffset before one
	lastCaughtUp       time.Time // last time the follower had everything the leader had
	lastFetchLeaderLEO int64     // leader LEO at the previous fetch
	lastFetchTime      time.Time
	brokerEpoch        int64 // ReplicaState.ReplicaEpoch of the last fetch; -1 unknown
}

// caughtUp is Kafka's rule: a follower is in sync when it has the leader's
// whole log, or had it at some point within maxLag.
func (f *followerState) caughtUp(leaderLEO int64, now time.Time, maxLag time.Duration) bool {
	return f.leo == leaderLEO || now.Sub(f.lastCaughtUp) <= maxLag
}

// update records a fetch at fetchOffset while the leader's log ended at
// leaderLEO. A follower that asks for the leader's end is caught up now; a
// follower that asks for at least what the leader had at its previous
// fetch was caught up at that previous fetch.
func (f *followerState) update(fetchOffset, leaderLEO int64, brokerEpoch int64, now time.Time) {
	f.brokerEpoch = brokerEpoch
	switch {
	case fetchOffset >= leaderLEO:
		f.lastCaughtUp = latest(f.lastCaughtUp, now)
	case fetchOffset >= f.lastFetchLeaderLEO && !f.lastFetchTime.IsZero():
		f.lastCaughtUp = latest(f.lastCaughtUp, f.lastFetchTime)
	}
	f.leo = fetchOffset
	f.lastFetchLeaderLEO = max(leaderLEO, f.lastFetchLeaderLEO)
	f.lastFetchTime = now
}

func latest(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// leaderState is the pure part of leadership: follower progress, the ISR,
// the high watermark and ISR change decisions. It does no I/O and reads no
// clock; Replica feeds it the leader's log end offset and the time. Not
// safe for concurrent use (Replica.mu guards it).
type leaderState struct {
	self           int32
	leaderEpoch    int32
	partitionEpoch int32
	epochStart     int64 // offset the current leader epoch started at
	leo            int64 // the leader's log end offset, as last noted (noteLEO)
	replicas       []int32
	isr            []int32 // committed ISR, as the metadata says
	pending        *ISRChange
	followers      map[int32]*followerState
	hw             int64
	maxLag         time.Duration
	// eligible says whether a broker, at the broker epoch its fetches
	// carry, may join the ISR (KIP-841, KIP-903); nil means every replica
	// may.
	eligible func(id int32, brokerEpoch int64) bool
	// minISR and holdUnderMinISR implement the KIP-966 rule (the high
	// watermark does not advance while the ISR is under
	// min.insync.replicas) when holdUnderMinISR is set.
	minISR          int
	holdUnderMinISR bool
}

// newLeaderState starts leadership: followers in the ISR count as caught
// up now (they get replica.lag.time.max.ms to show up), the others as
// never; no follower log end offset is known yet.
func newLeaderState(self int32, st PartitionState, epochStart, hw int64, now time.Time, maxLag time.Duration) *leaderState {
	s := &leaderState{
		self:           self,
		leaderEpoch:    st.LeaderEpoch,
		partitionEpoch: st.PartitionEpoch,
		epochStart:     epochStart,
		leo:            epochStart,
		followers:      map[int32]*followerState{},
		hw:             hw,
		maxLag:         maxLag,
	}
	s.setAssignment(st, now)
	return s
}

// setAssignment applies replicas and committed ISR from metadata, keeping
// the progress of followers that stay and clearing any ISR change in
// flight (the metadata now says what the controller decided).
func (s *leaderState) setAssignment(st PartitionState, now time.Time) {
	s.partitionEpoch = st.PartitionEpoch
	s.replicas = slices.Clone(st.Replicas)
	s.isr = slices.Clone(st.ISR)
	s.pending = nil
	for id := range s.followers {
		if !slices.Contains(s.replicas, id) {
			delete(s.followers, id)
		}
	}
	for _, id := range s.replicas {
		if id == s.self || s.followers[id] != nil {
			continue
		}
		f := &followerState{leo: UnknownOffset, lastFetchLeaderLEO: UnknownOffset, brokerEpoch: -1}
		if slices.Contains(s.isr, id) {
			f.lastCaughtUp = now
		}
		s.followers[id] = f
	}
}

// noteLEO records that the leader's log grew to leo. A follower whose
// last fetch of the partition asked for the previous log end had
// everything until this append, and still did at its last fetch from
// this broker (lastFetch; zero when unknown): a fetch in a session that
// holds the partition and does not name it says the follower is where
// it last was, without the partition being read. Without this, a
// follower of a partition idle for longer than replica.lag.time.max.ms
// would look out of sync between the next append and its next fetch.
func (s *leaderState) noteLEO(leo int64, lastFetch func(id int32) time.Time) {
	if leo <= s.leo {
		return
	}
	if lastFetch != nil {
		for id, f := range s.followers {
			if f.leo == s.leo {
				f.lastCaughtUp = latest(f.lastCaughtUp, lastFetch(id))
			}
		}
	}
	s.leo = leo
}

// maximalISR is the ISR the high watermark must respect: the committed
// ISR plus, while a change is in flight, the proposed one (an expansion
// counts at once, a shrink only once committed).
func (s *leaderState) inMaximalISR(id int32) bool {
	if slices.Contains(s.isr, id) {
		return true
	}
	return s.pending != nil && slices.Contains(s.pending.NewISR, id)
}

func (s *leaderState) isEligible(id int32) bool {
	f := s.followers[id]
	return f != nil && slices.Contains(s.replicas, id) && (s.eligible == nil || s.eligible(id, f.brokerEpoch))
}

// advanceHW raises the high watermark to the smallest log end offset of
// the maximal ISR and of followers about to join it (caught up and
// eligible), capped by the leader's own end. It never lowers it. It
// reports whether it moved.
func (s *leaderState) advanceHW(leaderLEO int64, now time.Time) bool {
	if s.holdUnderMinISR && len(s.isr) < s.minISR {
		return false
	}
	hw := leaderLEO
	for id, f := range s.followers {
		if f.leo >= hw {
			continue
		}
		if s.inMaximalISR(id) || (f.caughtUp(leaderLEO, now, s.maxLag) && s.isEligible(id)) {
			hw = f.leo
		}
	}
	if hw > s.hw {
		s.hw = hw
		return true
	}
	return false
}

// maybeExpand proposes adding follower id to the ISR when it is out of it,
// eligible, has reached the high watermark and has every offset of the
// current leader epoch's start (so it has truncated any divergent
// suffix). Nothing is proposed while another change is in flight.
func (s *leaderState) maybeExpand(id int32) *ISRChange {
	f := s.followers[id]
	if s.pending != nil || f == nil || slices.Contains(s.isr, id) || !s.isEligible(id) {
		return nil
	}
	if f.leo < s.hw || f.leo < s.epochStart {
		return nil
	}
	isr := append(slices.Clone(s.isr), id)
	slices.Sort(isr)
	return s.propose(isr)
}

// maybeShrink proposes removing every ISR follower that has not been
// caught up within maxLag.
func (s *leaderState) maybeShrink(leaderLEO int64, now time.Time) *ISRChange {
	if s.pending != nil {
		return nil
	}
	var out []int32
	for _, id := range s.isr {
		if f := s.followers[id]; id != s.self && f != nil && !f.caughtUp(leaderLEO, now, s.maxLag) {
			out = append(out, id)
		}
	}
	if len(out) == 0 {
		return nil
	}
	isr := slices.DeleteFunc(slices.Clone(s.isr), func(id int32) bool { return slices.Contains(out, id) })
	return s.propose(isr)
}

func (s *leaderState) propose(isr []int32) *ISRChange {
	epochs := make([]int64, len(isr))
	for i, id := range isr {
		epochs[i] = -1
		if f := s.followers[id]; f != nil {
			epochs[i] = f.brokerEpoch
		}
	}
	s.pending = &ISRChange{
		LeaderEpoch:    s.leaderEpoch,
		PartitionEpoch: s.partitionEpoch,
		NewISR:         isr,
		BrokerEpochs:   epochs,
	}
	c := *s.pending
	c.NewISR, c.BrokerEpochs = slices.Clone(isr), slices.Clone(epochs)
	return &c
}
