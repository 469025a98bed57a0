package controller

import (
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/metadata"
)

// Tick does the controller's timed work and returns the records it
// decided, as one batch (or none):
//
//   - brokers whose session expired (no heartbeat for SessionTimeout) are
//     fenced, all of them in this one batch;
//   - every LeaderImbalanceCheckInterval, unless auto leader rebalance is
//     off, partitions go back to their preferred leader on brokers whose
//     share of such partitions led by others exceeds
//     LeaderImbalancePercentage, and leaderless partitions of topics that
//     allow unclean election get a leader.
func (c *Controller) Tick() []metadata.Record {
	now := c.now()
	var stale []*metadata.Broker
	for _, b := range c.img.Brokers() {
		if s := c.sessions[b.ID]; !b.Fenced && (s == nil || now.Sub(s.lastContact) > c.cfg.SessionTimeout) {
			stale = append(stale, b)
		}
	}
	balance := !now.Before(c.nextRebalance)
	if balance {
		c.nextRebalance = now.Add(c.cfg.LeaderImbalanceCheckInterval)
	}
	if len(stale) == 0 && !balance {
		return nil
	}
	t := c.begin()
	if len(stale) > 0 {
		ids := make([]int32, len(stale))
		for i, b := range stale {
			ids[i] = b.ID
			t.add(&metadata.FenceBrokerRecord{ID: b.ID, Epoch: b.Epoch})
		}
		t.moveAway(ids...)
		c.log.Info("brokers fenced", "nodes", ids, "reason", "session timed out")
	}
	if balance {
		moved := 0
		if !c.cfg.DisableAutoLeaderRebalance {
			moved = t.rebalance(c.cfg.LeaderImbalancePercentage)
		}
		elected := t.electUnclean()
		if moved > 0 || elected > 0 {
			c.log.Info("leader balance check", "preferred_leaders_elected", moved, "unclean_leaders_elected", elected)
		}
	}
	recs, _ := t.commit()
	return recs
}

type partRef struct {
	topic metadata.TopicID
	p     int32
}

// rebalance elects preferred leaders on imbalanced brokers, the way
// Kafka's auto leader rebalance does, and returns how many it moved. A
// broker is imbalanced when, of the partitions it is the preferred leader
// of, more than pct percent are led by others; each of those whose
// preferred leader is active and in the ISR, and which is not being
// reassigned, moves back.
func (t *txn) rebalance(pct int) int {
	if t.base.NotPreferredPartitions() == 0 {
		return 0
	}
	total := map[int32]int{}
	notLed := map[int32][]partRef{}
	t.base.EachTopic(func(tp *metadata.Topic) bool {
		tp.EachPartition(func(p int32, s metadata.Partition) bool {
			pref := s.PreferredLeader()
			total[pref]++
			if s.Leader() != pref {
				notLed[pref] = append(notLed[pref], partRef{tp.ID(), p})
			}
			return true
		})
		return true
	})
	brokers := make([]int32, 0, len(notLed))
	for id := range notLed {
		brokers = append(brokers, id)
	}
	slices.Sort(brokers)
	moved := 0
	for _, id := range brokers {
		refs := notLed[id]
		if len(refs)*100 <= pct*total[id] || !t.active(id) {
			continue
		}
		for _, r := range refs {
			c, ok := t.change(r.topic, r.p)
			if !ok || c.cur.Reassigning() || !slices.Contains(c.cur.ISR(), id) {
				continue
			}
			c.election = electPreferred
			if rec := t.build(&c); rec != nil {
				t.add(rec)
				moved++
			}
		}
	}
	return moved
}

// electUnclean elects leaders for leaderless partitions of topics that
// allow unclean election, and returns how many.
func (t *txn) electUnclean() int {
	return t.electLeaderless(func(topic string) (election, bool) {
		return electUnclean, t.onlineElection(topic) == electUnclean
	})
}

// Election types of ElectLeaders.
const (
	electionPreferred int8 = 0
	electionUnclean   int8 = 1
)

// ElectLeaders handles ElectLeaders (API 43). A preferred election
// moves each partition's leadership to its first replica if that replica
// is active and in the ISR (PREFERRED_LEADER_NOT_AVAILABLE otherwise); an
// unclean one gives a leaderless partition a leader, from outside the ISR
// if need be (ELIGIBLE_LEADERS_NOT_AVAILABLE if no replica is active).
// Partitions whose leader is already right answer ELECTION_NOT_NEEDED.
// With no topics listed, every partition is a candidate, and only the
// ones that were not already right are answered.
func (c *Controller) ElectLeaders(req *kmsg.ElectLeadersRequest) (*kmsg.ElectLeadersResponse, []metadata.Record) {
	resp := kmsg.NewPtrElectLeadersResponse()
	resp.Version = req.Version
	kind := req.ElectionType
	if req.Version == 0 {
		kind = electionPreferred
	}
	if kind != electionPreferred && kind != electionUnclean {
		resp.ErrorCode = kerr.InvalidRequest.Code
		return resp, nil
	}
	t := c.begin()
	elect := func(tp *metadata.Topic, p int32) (*kerr.Error, string) {
		ch, ok := t.change(tp.ID(), p)
		if !ok {
			return kerr.UnknownTopicOrPartition, fmt.Sprintf("No such partition as %s-%d", tp.Name(), p)
		}
		if kind == electionPreferred && ch.cur.Leader() == ch.cur.PreferredLeader() ||
			kind == electionUnclean && ch.cur.Leader() != metadata.NoLeader {
			return kerr.ElectionNotNeeded, ""
		}
		ch.election = electPreferred
		if kind == electionUnclean {
			ch.election = electUnclean
		}
		rec := t.build(&ch)
		if rec == nil {
			if kind == electionPreferred {
				return kerr.PreferredLeaderNotAvailable, ""
			}
			return kerr.EligibleLeadersNotAvailable, ""
		}
		t.add(rec)
		return nil, ""
	}
	result := func(rt *kmsg.ElectLeadersResponseTopic, p int32, err *kerr.Error, msg string) {
		rp := kmsg.NewElectLeadersResponseTopicPartition()
		rp.Partition = p
		if err != nil {
			rp.ErrorCode = err.Code
			if msg != "" {
				rp.ErrorMessage = &msg
			}
		}
		rt.Partitions = append(rt.Partitions, rp)
	}
	if req.Topics == nil {
		for _, tp := range c.img.Topics() {
			rt := kmsg.NewElectLeadersResponseTopic()
			rt.Topic = tp.Name()
			for p := range tp.NumPartitions() {
				if err, msg := elect(tp, p); err != kerr.ElectionNotNeeded {
					result(&rt, p, err, msg)
				}
			}
			resp.Topics = append(resp.Topics, rt)
		}
	} else {
		for _, rtq := range req.Topics {
			rt := kmsg.NewElectLeadersResponseTopic()
			rt.Topic = rtq.Topic
			tp, ok := t.b.TopicByName(rtq.Topic)
			for _, p := range rtq.Partitions {
				if !ok {
					result(&rt, p, kerr.UnknownTopicOrPartition, "No such topic as "+rtq.Topic)
					continue
				}
				err, msg := elect(tp, p)
				result(&rt, p, err, msg)
			}
			resp.Topics = append(resp.Topics, rt)
		}
	}
	recs, err := t.commit()
	if err != nil {
		return failElect(resp), nil
	}
	return resp, recs
}

// failElect answers every partition of resp with UNKNOWN_SERVER_ERROR:
// the decision was dropped.
func failElect(resp *kmsg.ElectLeadersResponse) *kmsg.ElectLeadersResponse {
	for i := range resp.Topics {
		for j := range resp.Topics[i].Partitions {
			resp.Topics[i].Partitions[j].ErrorCode = kerr.UnknownServerError.Code
			resp.Topics[i].Partitions[j].ErrorMessage = nil
		}
	}
	return resp
}
