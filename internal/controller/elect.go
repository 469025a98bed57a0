package controller

import (
	"slices"
	"strconv"

	"weir/internal/metadata"
)

// election says how a partition change may pick a leader.
type election uint8

const (
	// electOnline keeps a valid leader, else picks the first replica
	// that is active and in the ISR.
	electOnline election = iota
	// electPreferred picks the first replica if it is active and in the
	// ISR, else keeps a valid leader, else as electOnline.
	electPreferred
	// electUnclean is electOnline, then, when no ISR member can lead, any
	// active replica: its ISR becomes itself and it starts RECOVERING.
	// Records acknowledged by the old ISR may be lost.
	electUnclean
)

// change is a partition change being decided: the targets start as the
// current state and the decision edits them; build turns them into a
// record, or none when nothing changes.
type change struct {
	topic    metadata.TopicID
	p        int32
	cur      metadata.Partition
	isr      []int32
	replicas []int32
	adding   []int32
	removing []int32
	recovery int8
	election election
}

func (t *txn) change(topic metadata.TopicID, p int32) (change, bool) {
	cur, ok := t.b.Partition(topic, p)
	if !ok {
		return change{}, false
	}
	return change{
		topic: topic, p: p, cur: cur,
		isr: cur.ISR(), replicas: cur.Replicas(), adding: cur.Adding(), removing: cur.Removing(),
		recovery: cur.LeaderRecovery(),
	}, true
}

// build decides the change. In order: inactive brokers leave the target
// ISR if an active one remains; a reassignment whose target
// replicas are all in the target ISR completes (the removed replicas
// leave replicas and ISR); a leader is elected if the current one is no
// longer valid (or, preferred, is not the first replica); the leader
// epoch grows if the leader changes or replicas are removed; the
// partition epoch grows with any change. A target ISR that would be empty
// is not applied: the last ISR member stays in it, leaderless if it may
// not lead, so that it can be elected again once it returns and no
// record it acknowledged is lost.
func (t *txn) build(c *change) *metadata.PartitionChangeRecord {
	// Inactive brokers stay in an ISR only while no member is active
	// (fenced together, they all had every acknowledged record). Once one
	// is back, the others leave, or they would hold the high watermark.
	inactive := func(id int32) bool { return !t.active(id) }
	if slices.ContainsFunc(c.isr, inactive) && slices.ContainsFunc(c.isr, t.active) {
		c.isr = without(c.isr, inactive)
	}
	c.completeReassignment()
	cur := &c.cur
	rec := &metadata.PartitionChangeRecord{
		TopicID: c.topic, Partition: c.p, Leader: metadata.NoLeaderChange,
		LeaderRecovery: metadata.NoRecoveryChange, LeaderEpoch: cur.LeaderEpoch(),
	}
	leader, unclean := t.elect(c)
	if leader != cur.Leader() {
		rec.Leader = leader
		if unclean {
			c.isr = []int32{leader}
			c.recovery = metadata.Recovering
		}
	}
	if rec.Leader == metadata.NoLeaderChange && !subset(cur.Replicas(), c.replicas) {
		// Replicas leaving the partition must not be able to act on the
		// old epoch: a new leader epoch fences them.
		rec.Leader = cur.Leader()
	}
	if rec.Leader != metadata.NoLeaderChange {
		rec.LeaderEpoch++
	}
	if len(c.isr) > 0 && !slices.Equal(c.isr, cur.ISR()) {
		// Targets are never the image's own slices when they differ from
		// them, and records are not modified once made: no copy needed.
		rec.ISR = c.isr
	}
	rec.Replicas = changed(c.replicas, cur.Replicas())
	rec.Adding = changed(c.adding, cur.Adding())
	rec.Removing = changed(c.removing, cur.Removing())
	if c.recovery != cur.LeaderRecovery() {
		rec.LeaderRecovery = c.recovery
	}
	if rec.Leader == metadata.NoLeaderChange && rec.ISR == nil && rec.Replicas == nil && rec.Adding == nil &&
		rec.Removing == nil && rec.LeaderRecovery == metadata.NoRecoveryChange {
		return nil
	}
	rec.PartitionEpoch = cur.PartitionEpoch() + 1
	return rec
}

// changed returns a copy of target if it differs from cur (never nil
// then, so that an empty target clears the list), else nil.
func changed(target, cur []int32) []int32 {
	if slices.Equal(target, cur) {
		return nil
	}
	return append(make([]int32, 0, len(target)), target...)
}

func subset(ids, of []int32) bool {
	for _, id := range ids {
		if !slices.Contains(of, id) {
			return false
		}
	}
	return true
}

func without(ids []int32, drop func(int32) bool) []int32 {
	out := make([]int32, 0, len(ids))
	for _, id := range ids {
		if !drop(id) {
			out = append(out, id)
		}
	}
	return out
}

// completeReassignment ends a reassignment once every target replica is
// in the target ISR.
func (c *change) completeReassignment() {
	if len(c.adding) == 0 && len(c.removing) == 0 {
		return
	}
	removing := func(id int32) bool { return slices.Contains(c.removing, id) }
	isr, replicas := without(c.isr, removing), without(c.replicas, removing)
	if len(isr) == 0 || len(replicas) == 0 || !subset(replicas, isr) {
		return
	}
	c.isr, c.replicas, c.adding, c.removing = isr, replicas, []int32{}, []int32{}
}

// elect returns the leader the change's election picks, and whether the
// pick is unclean.
func (t *txn) elect(c *change) (int32, bool) {
	valid := func(id int32) bool { return slices.Contains(c.isr, id) && t.active(id) }
	cur := c.cur.Leader()
	if c.election == electPreferred && len(c.replicas) > 0 && valid(c.replicas[0]) {
		return c.replicas[0], false
	}
	if cur != metadata.NoLeader && valid(cur) {
		return cur, false
	}
	for _, id := range c.replicas {
		if valid(id) {
			return id, false
		}
	}
	if c.election == electUnclean {
		for _, id := range c.replicas {
			if t.active(id) {
				return id, true
			}
		}
	}
	return metadata.NoLeader, false
}

// uncleanAllowed reports unclean.leader.election.enable for a topic: its
// own config, else the cluster-wide dynamic broker config, else the
// controller's.
func uncleanAllowed(img *metadata.Image, topic string, dflt bool) bool {
	const key = "unclean.leader.election.enable"
	v, ok := img.Config(metadata.ConfigResource{Type: metadata.ResourceTopic, Name: topic}, key)
	if !ok {
		v, ok = img.Config(metadata.ConfigResource{Type: metadata.ResourceBroker, Name: ""}, key)
	}
	if !ok {
		return dflt
	}
	b, err := strconv.ParseBool(v)
	return err == nil && b
}

// onlineElection is the election of a topic whose leader must be
// replaced: unclean where the topic allows it.
func (t *txn) onlineElection(topic string) election {
	if uncleanAllowed(t.base, topic, t.c.cfg.UncleanLeaderElection) {
		return electUnclean
	}
	return electOnline
}

// moveAway takes brokers out of every ISR and leadership, as fencing,
// controlled shutdown and unregistration need, and reports whether any of
// them led a partition. The brokers are excluded for the rest of the
// decision. Every change is decided against the state before the
// decision and added in one pass: one scan of the partitions, however
// many brokers leave.
func (t *txn) moveAway(brokers ...int32) (ledAny bool) {
	if t.excluded == nil {
		t.excluded = make(map[int32]bool, len(brokers))
	}
	for _, id := range brokers {
		t.excluded[id] = true
	}
	leaving := func(id int32) bool { return t.excluded[id] }
	var recs []metadata.Record
	t.base.EachTopic(func(tp *metadata.Topic) bool {
		el := electOnline
		elDecided := false
		tp.EachPartition(func(p int32, s metadata.Partition) bool {
			if !slices.ContainsFunc(s.ISR(), leaving) && !leaving(s.Leader()) {
				return true
			}
			if leaving(s.Leader()) {
				ledAny = true
			}
			if !elDecided {
				el, elDecided = t.onlineElection(tp.Name()), true
			}
			c, _ := t.change(tp.ID(), p)
			c.isr = without(c.isr, leaving)
			c.election = el
			if rec := t.build(&c); rec != nil {
				recs = append(recs, rec)
			}
			return true
		})
		return true
	})
	for _, r := range recs {
		t.add(r)
	}
	return ledAny
}

// electLeaderless elects a leader, where one now can be, for every
// leaderless partition of the topics el accepts, with the election el
// returns for the topic, and returns how many it elected.
func (t *txn) electLeaderless(el func(topic string) (election, bool)) int {
	if t.base.OfflinePartitions() == 0 {
		return 0
	}
	n := 0
	t.base.EachTopic(func(tp *metadata.Topic) bool {
		kind, ok := el(tp.Name())
		if !ok {
			return true
		}
		tp.EachPartition(func(p int32, s metadata.Partition) bool {
			if s.Leader() != metadata.NoLeader {
				return true
			}
			c, _ := t.change(tp.ID(), p)
			c.election = kind
			if rec := t.build(&c); rec != nil && rec.Leader != metadata.NoLeaderChange {
				t.add(rec)
				n++
			}
			return true
		})
		return true
	})
	return n
}
