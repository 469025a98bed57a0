package replica

import (
	"slices"
	"time"
	"unsafe"
)

// UnknownOffset is a follower log end offset the leader has not learnt yet
// (no fetch in the current leader epoch).
const UnknownOffset int64 = -1

// followerState is what the leader knows of one follower, from its
// fetches in the current leader epoch. Times are Unix nanoseconds (0:
// never), to keep a led partition small.
type followerState struct {
	id                 int32
	leo                int64 // fetch offset of the last fetch; UnknownOffset before one
	lastCaughtUp       int64 // last time the follower had everything the leader had
	lastFetchLeaderLEO int64 // leader LEO at the previous fetch
	lastFetchTime      int64
	brokerEpoch        int64 // ReplicaState.ReplicaEpoch of the last fetch; -1 unknown
}

// caughtUp is Kafka's rule: a follower is in sync when it has the leader's
// whole log, or had it at some point within maxLag.
func (f *followerState) caughtUp(leaderLEO int64, now time.Time, maxLag time.Duration) bool {
	return f.leo == leaderLEO || now.UnixNano()-f.lastCaughtUp <= int64(maxLag)
}

// update records a fetch at fetchOffset while the leader's log ended at
// leaderLEO. A follower that asks for the leader's end is caught up now; a
// follower that asks for at least what the leader had at its previous
// fetch was caught up at that previous fetch.
func (f *followerState) update(fetchOffset, leaderLEO int64, brokerEpoch int64, now time.Time) {
	f.brokerEpoch = brokerEpoch
	switch {
	case fetchOffset >= leaderLEO:
		f.lastCaughtUp = max(f.lastCaughtUp, now.UnixNano())
	case fetchOffset >= f.lastFetchLeaderLEO && f.lastFetchTime != 0:
		f.lastCaughtUp = max(f.lastCaughtUp, f.lastFetchTime)
	}
	f.leo = fetchOffset
	f.lastFetchLeaderLEO = max(leaderLEO, f.lastFetchLeaderLEO)
	f.lastFetchTime = now.UnixNano()
}

// nanos is t in Unix nanoseconds, 0 for the zero time.
func nanos(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

// leaderState is the pure part of leadership: follower progress, the ISR,
// the high watermark and ISR change decisions. It does no I/O and reads no
// clock; Replica feeds it the leader's log end offset and the time. Not
// safe for concurrent use (Replica.mu guards it).
type leaderState struct {
	leaderEpoch    int32
	partitionEpoch int32
	leo            int64 // the leader's log end offset, as last noted (noteLEO)
	// lists is the first of the replicas, then the committed ISR, as the
	// metadata says, nLists of them (replicas and isr read them;
	// nReplicas splits them): one array, the image's own when StateOf
	// made the assignment. A pointer and a length rather than a slice
	// header (8 B less, which keeps a led partition's state in the
	// 64-byte size class); nil when there are none.
	lists *int32
	hw    int64
	// since is when the leadership started (Unix nanoseconds).
	since int64
	// minISR is min.insync.replicas, for the KIP-966 rule (rules).
	minISR int16
	// atLEO marks, by index in replicas, the ISR followers that fetched
	// at the log end while the leadership is compact.
	atLEO     uint8
	nReplicas uint16
	nLists    uint16
	// busy is nil while the leadership is compact (see expand).
	*busy
}

// busy is what a leadership adds once written or changed: the
// followers' states, the ISR change in flight and the waiters' channel.
type busy struct {
	followers []followerState // one per replica but the leader
	// epochStart is the offset the leader epoch started at: the log end
	// while the leadership was compact.
	epochStart int64
	pending    *ISRChange
	// hwCh is closed on high watermark, ISR or role changes; nil until
	// an acks=all waiter needs it (Replica.waitChLocked).
	hwCh chan struct{}
}

// leading is a leaderState with the rules it follows, which the
// leaderStates of a broker share (Env.rules) rather than point to each.
type leading struct {
	*leaderState
	rules *leaderRules
}

// leaderRules are what the leaderStates of a broker share (Env.rules):
// its id and the settings leadership follows.
type leaderRules struct {
	self   int32
	maxLag time.Duration
	// eligible says whether a broker, at the broker epoch its fetches
	// carry, may join the ISR (KIP-841, KIP-903); nil means every replica
	// may.
	eligible func(id int32, brokerEpoch int64) bool
	// holdUnderMinISR applies the KIP-966 rule: the high watermark does
	// not advance while the ISR is under min.insync.replicas.
	holdUnderMinISR bool
}

// newLeaderState starts leadership: followers in the ISR count as caught
// up now (they get replica.lag.time.max.ms to show up), the others as
// never; no follower log end offset is known yet.
//
// A leadership of at most maxCompactReplicas replicas starts compact: no
// followerState is made until something needs one (expand). Until then
// a follower is either not heard from, or an ISR member that fetched at
// the log end (atLEO), and nothing was appended: all a never-written
// partition whose followers idle in their fetch sessions ever needs.
func newLeaderState(rules *leaderRules, st PartitionState, epochStart, hw int64, now time.Time) *leaderState {
	s := &leaderState{
		leaderEpoch:    st.LeaderEpoch,
		partitionEpoch: st.PartitionEpoch,
		leo:            epochStart,
		hw:             hw,
		since:          now.UnixNano(),
	}
	if len(st.Replicas) > maxCompactReplicas {
		leading{s, rules}.setAssignment(st, now)
		return s
	}
	s.setLists(st)
	return s
}

// replicas are the partition's replicas; isr is the committed ISR.
func (s *leaderState) replicas() []int32 { return s.all()[:s.nReplicas:s.nReplicas] }
func (s *leaderState) isr() []int32      { return s.all()[s.nReplicas:] }

// all are the lists, replicas then ISR.
func (s *leaderState) all() []int32 { return unsafe.Slice(s.lists, s.nLists) }

// setLists takes replicas and ISR from st. Kept as given, never written
// to: StateOf's lists are the metadata image's, shared by every replica
// of the partition on this node; others are joined into one copy.
func (s *leaderState) setLists(st PartitionState) {
	if len(st.lists) == len(st.Replicas)+len(st.ISR) {
		s.keepLists(st.lists, len(st.Replicas))
		return
	}
	s.keepLists(slices.Concat(st.Replicas, st.ISR), len(st.Replicas))
}

// keepLists holds lists, whose first nReplicas are the replicas and the
// rest the ISR; never written to after. Both fit a uint16: a
// replication factor is at most 32,767 (an int16 in CreateTopics).
func (s *leaderState) keepLists(lists []int32, nReplicas int) {
	s.lists, s.nLists, s.nReplicas = unsafe.SliceData(lists), uint16(len(lists)), uint16(nReplicas)
	if len(lists) == 0 {
		s.lists = nil
	}
}

// setISR replaces the committed ISR (a copy of isr).
func (s *leaderState) setISR(isr []int32) {
	s.keepLists(slices.Concat(s.replicas(), isr), int(s.nReplicas))
}

// maxCompactReplicas is the most replicas atLEO has bits for.
const maxCompactReplicas = 8

// compact reports whether the followers' states are not made yet.
func (s *leaderState) compact() bool { return s.busy == nil }

// inFlight is the ISR change in flight, nil when none.
func (s *leaderState) inFlight() *ISRChange {
	if s.busy == nil {
		return nil
	}
	return s.pending
}

// expand makes the followers' states of a compact leadership, as
// setAssignment would have made them at its start and the fetches at
// the log end (atLEO) updated them, but with the leadership's start as
// the time of those fetches and their broker epochs unknown until the
// next fetch names the partition (an AlterPartition fills in the
// registered epoch). An idle follower's time is raised by noteLEO from
// its fetch session anyway.
func (s leading) expand() {
	if !s.compact() {
		return
	}
	s.busy = &busy{epochStart: s.leo}
	for i, id := range s.replicas() {
		if id == s.rules.self {
			continue
		}
		f := followerState{id: id, leo: UnknownOffset, lastFetchLeaderLEO: UnknownOffset, brokerEpoch: -1}
		if slices.Contains(s.isr(), id) {
			f.lastCaughtUp = s.since
		}
		if s.atLEO&(1<<i) != 0 {
			f.leo, f.lastFetchLeaderLEO, f.lastFetchTime = s.leo, s.leo, s.since
		}
		s.followers = append(s.followers, f)
	}
	s.atLEO = 0
}

// isFollower reports whether id is a replica other than the leader.
func (s leading) isFollower(id int32) bool {
	return id != s.rules.self && slices.Contains(s.replicas(), id)
}

// fetched records a fetch of follower id at fetchOffset while the
// leader's log ended at leaderLEO, and proposes adding it to the ISR
// when it qualifies (maybeExpand). A compact leadership stays compact
// when an ISR member fetches at the log end.
func (s leading) fetched(id int32, fetchOffset, leaderLEO, brokerEpoch int64, now time.Time) *ISRChange {
	if s.compact() && fetchOffset == s.leo && leaderLEO == s.leo && slices.Contains(s.isr(), id) {
		if i := slices.Index(s.replicas(), id); i >= 0 && id != s.rules.self {
			s.atLEO |= 1 << i
			return nil
		}
	}
	s.expand()
	f := s.follower(id)
	if f == nil {
		return nil
	}
	f.update(fetchOffset, leaderLEO, brokerEpoch, now)
	return s.maybeExpand(id)
}

// compactAt reports whether the leadership is compact and its log still
// ends at leaderLEO, so that atLEO tells every follower's offset.
func (s leading) compactAt(leaderLEO int64) bool {
	return s.compact() && leaderLEO == s.leo
}

// unheard reports whether an ISR follower of a compact leadership has
// not fetched at the log end: its offset is unknown.
func (s leading) unheard() bool {
	for i, id := range s.replicas() {
		if id != s.rules.self && s.atLEO&(1<<i) == 0 && slices.Contains(s.isr(), id) {
			return true
		}
	}
	return false
}

// setAssignment applies replicas and committed ISR from metadata, keeping
// the progress of followers that stay and clearing any ISR change in
// flight (the metadata now says what the controller decided).
func (s leading) setAssignment(st PartitionState, now time.Time) {
	s.expand()
	s.partitionEpoch = st.PartitionEpoch
	s.setLists(st)
	s.pending = nil
	s.followers = slices.DeleteFunc(s.followers, func(f followerState) bool { return !slices.Contains(s.replicas(), f.id) })
	for _, id := range s.replicas() {
		if id == s.rules.self || s.follower(id) != nil {
			continue
		}
		f := followerState{id: id, leo: UnknownOffset, lastFetchLeaderLEO: UnknownOffset, brokerEpoch: -1}
		if slices.Contains(s.isr(), id) {
			f.lastCaughtUp = now.UnixNano()
		}
		s.followers = append(s.followers, f)
	}
}

// follower is id's state, or nil when id is not a follower.
func (s leading) follower(id int32) *followerState {
	if s.busy == nil {
		return nil
	}
	for i := range s.followers {
		if s.followers[i].id == id {
			return &s.followers[i]
		}
	}
	return nil
}

// noteLEO records that the leader's log grew to leo. A follower whose
// last fetch of the partition asked for the previous log end had
// everything until this append, and still did at its last fetch from
// this broker (lastFetch; zero when unknown): a fetch in a session that
// holds the partition and does not name it says the follower is where
// it last was, without the partition being read. Without this, a
// follower of a partition idle for longer than replica.lag.time.max.ms
// would look out of sync between the next append and its next fetch.
func (s leading) noteLEO(leo int64, lastFetch func(id int32) time.Time) {
	if leo <= s.leo {
		return
	}
	s.expand()
	if lastFetch != nil {
		for i := range s.followers {
			if f := &s.followers[i]; f.leo == s.leo {
				f.lastCaughtUp = max(f.lastCaughtUp, nanos(lastFetch(f.id)))
			}
		}
	}
	s.leo = leo
}

// maximalISR is the ISR the high watermark must respect: the committed
// ISR plus, while a change is in flight, the proposed one (an expansion
// counts at once, a shrink only once committed).
func (s leading) inMaximalISR(id int32) bool {
	if slices.Contains(s.isr(), id) {
		return true
	}
	p := s.inFlight()
	return p != nil && slices.Contains(p.NewISR, id)
}

func (s leading) isEligible(id int32) bool {
	f := s.follower(id)
	return f != nil && slices.Contains(s.replicas(), id) && (s.rules.eligible == nil || s.rules.eligible(id, f.brokerEpoch))
}

// advanceHW raises the high watermark to the smallest log end offset of
// the maximal ISR and of followers about to join it (caught up and
// eligible), capped by the leader's own end. It never lowers it. It
// reports whether it moved.
func (s leading) advanceHW(leaderLEO int64, now time.Time) bool {
	if s.rules.holdUnderMinISR && len(s.isr()) < int(s.minISR) {
		return false
	}
	hw := leaderLEO
	if s.compactAt(leaderLEO) {
		// An ISR follower not heard from holds it back.
		if hw <= s.hw || s.unheard() {
			return false
		}
		s.hw = hw
		return true
	}
	s.expand()
	for i := range s.followers {
		f := &s.followers[i]
		if f.leo >= hw {
			continue
		}
		if s.inMaximalISR(f.id) || (f.caughtUp(leaderLEO, now, s.rules.maxLag) && s.isEligible(f.id)) {
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
func (s leading) maybeExpand(id int32) *ISRChange {
	f := s.follower(id)
	if s.inFlight() != nil || f == nil || slices.Contains(s.isr(), id) || !s.isEligible(id) {
		return nil
	}
	if f.leo < s.hw || f.leo < s.busy.epochStart {
		return nil
	}
	isr := append(slices.Clone(s.isr()), id)
	slices.Sort(isr)
	return s.propose(isr)
}

// maybeShrink proposes removing every ISR follower that has not been
// caught up within maxLag.
func (s leading) maybeShrink(leaderLEO int64, now time.Time) *ISRChange {
	if s.inFlight() != nil {
		return nil
	}
	if s.compactAt(leaderLEO) && (now.UnixNano()-s.since <= int64(s.rules.maxLag) || !s.unheard()) {
		// Every ISR follower is at the log end or still within the lag
		// allowed since the leadership started.
		return nil
	}
	s.expand()
	var out []int32
	for _, id := range s.isr() {
		if f := s.follower(id); id != s.rules.self && f != nil && !f.caughtUp(leaderLEO, now, s.rules.maxLag) {
			out = append(out, id)
		}
	}
	if len(out) == 0 {
		return nil
	}
	isr := slices.DeleteFunc(slices.Clone(s.isr()), func(id int32) bool { return slices.Contains(out, id) })
	return s.propose(isr)
}

func (s leading) propose(isr []int32) *ISRChange {
	epochs := make([]int64, len(isr))
	for i, id := range isr {
		epochs[i] = -1
		if f := s.follower(id); f != nil {
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
