package broker

import (
	"sync/atomic"
	"time"

	"weir/internal/fetchsession"
	wlog "weir/internal/log"
	"weir/internal/metadata"
	"weir/internal/producer"
	"weir/internal/replica"
)

// partition is one partition of a topic as the metadata image describes
// it. rep is set when this node holds a replica; it serves clients only
// while it leads (leader == this node). It is 48 B: its log, high
// watermark and NullStorage store are read through the replica and the
// Broker (nullOf).
type partition struct {
	topic *topic
	index int32
	// cleaning is where the log stands with the cleaner (cleaner.go):
	// notCleaned, cleaned or cleanerDone; changed under Broker.cleanMu.
	cleaning atomic.Uint32
	rep      *replica.Replica // the replica over the local log; nil without one

	// leadership is the leader's node id (-1 when offline) and the leader
	// epoch, as one snapshot (leader in the high 32 bits).
	leadership atomic.Int64

	// src holds the marks of the fetch sessions reading this partition
	// and the ShareFetches parked on it (internal/fetchsession).
	src fetchsession.Source
}

// lastFetchBy is when follower id last fetched in a session holding
// this partition (zero if none does): replica.Config.LastFetch.
func (p *partition) lastFetchBy(id int32) time.Time { return p.src.LastUsedBy(id) }

func (p *partition) addWaiter(wt *replica.Waiter)    { p.src.AddWaker(wt) }
func (p *partition) removeWaiter(wt *replica.Waiter) { p.src.RemoveWaker(wt) }

// leaderAndEpoch is the leader and its epoch as the image last gave
// them together.
func (p *partition) leaderAndEpoch() (leader, epoch int32) {
	v := p.leadership.Load()
	return int32(v >> 32), int32(uint32(v))
}

// leader (-1 when offline) and leaderEpoch are leaderAndEpoch's halves.
func (p *partition) leader() int32      { return int32(p.leadership.Load() >> 32) }
func (p *partition) leaderEpoch() int32 { return int32(uint32(p.leadership.Load())) }

// Topic, TopicID and Partition name the partition, and ReplicaEnv is
// the broker's replica.Env, which the topic holds (a replica.Owner).
func (p *partition) Topic() string            { return p.topic.name }
func (p *partition) TopicID() [16]byte        { return p.topic.id }
func (p *partition) Partition() int32         { return p.index }
func (p *partition) ReplicaEnv() *replica.Env { return p.topic.env }

// setLeadership stores the leader and leader epoch, returning the epoch
// they replace.
func (p *partition) setLeadership(leader, epoch int32) (was int32) {
	return int32(uint32(p.leadership.Swap(int64(leader)<<32 | int64(uint32(epoch)))))
}

// producers is the idempotent-producer state of the replica's own log
// (internal/producer), for a write; nil without a local log.
func (p *partition) producers() (st *producer.State) {
	if p.rep != nil {
		st, _ = p.rep.LogToWrite().Producers().(*producer.State)
	}
	return st
}

// highWatermark is the offset below which records are visible to
// consumers: the replica's (0 without one).
func (p *partition) highWatermark() int64 {
	if p.rep == nil {
		return 0
	}
	return p.rep.HighWatermark()
}

// setState takes the partition's state from the metadata image (the
// replica's role is switched separately, by applyRoles) and reports
// whether its leader epoch changed or this node started or stopped
// leading it: applyRoles then wakes the partition's parked fetches once
// the replica has its new role, so that they answer
// NOT_LEADER_OR_FOLLOWER, or, for a follower's fetch held for this
// leadership, are served.
func (p *partition) setState(s metadata.Partition) (changed bool) {
	led := p.isLeader()
	epochChanged := p.setLeadership(s.Leader(), s.LeaderEpoch()) != s.LeaderEpoch()
	return p.isLeader() != led || epochChanged
}

// wakeAll tells everything watching the partition that it changed: the
// fetch sessions reading it (each queues it for its next read and wakes
// its parked fetch) and the parked ShareFetches. Called after an append,
// a high watermark or log start move, and leadership changes.
func (p *partition) wakeAll() { p.src.MarkAll() }

// localOnly keeps the partitions this node holds a replica of.
func localOnly(ps []*partition) []*partition {
	out := make([]*partition, 0, len(ps))
	for _, p := range ps {
		if p.rep != nil {
			out = append(out, p)
		}
	}
	return out
}

// isLeader reports whether this node leads the partition.
func (p *partition) isLeader() bool { return p.rep != nil && p.leader() == p.topic.self }

// log is the local log, the replica's; nil without one.
func (p *partition) log() *wlog.Log {
	if p.rep == nil {
		return nil
	}
	return p.rep.Log()
}
