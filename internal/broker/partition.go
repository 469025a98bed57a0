package broker

import (
	"sync"
	"sync/atomic"

	wlog "weir/internal/log"
	"weir/internal/metadata"
	"weir/internal/producer"
	"weir/internal/replica"
)

// partition is one partition of a topic as the metadata image describes
// it. log and rep are set when this node holds a replica; it serves
// clients only while it leads (leader == this node). hw mirrors the
// replica's high watermark (OnHighWatermark), for readers that do not
// take the replica's lock.
type partition struct {
	topic *topic
	index int32
	log   *wlog.Log
	rep   *replica.Replica // the replica over log; nil when log is

	leader      atomic.Int32 // the leader's node id, -1 when offline
	leads       atomic.Bool
	state       atomic.Pointer[metadata.Partition]
	leaderEpoch atomic.Int32
	hw          atomic.Int64
	nullEnd     atomic.Int64              // offsets handed out in NullStorage mode
	nullBatch   atomic.Pointer[nullBatch] // NullStorage: what fetches repeat

	// producers is the idempotent-producer state, touched only inside the
	// log's append hooks (see internal/producer).
	producers *producer.State

	// waiters are fetches parked until this partition grows.
	wmu     sync.Mutex
	waiters []*replica.Waiter
}

func (p *partition) addWaiter(w *replica.Waiter) {
	p.wmu.Lock()
	p.waiters = append(p.waiters, w)
	p.wmu.Unlock()
}

func (p *partition) removeWaiter(w *replica.Waiter) {
	p.wmu.Lock()
	for i, x := range p.waiters {
		if x == w {
			last := len(p.waiters) - 1
			p.waiters[i] = p.waiters[last]
			p.waiters[last] = nil
			p.waiters = p.waiters[:last]
			break
		}
	}
	p.wmu.Unlock()
}

// highWatermark is the offset below which records are visible to
// consumers.
func (p *partition) highWatermark() int64 { return p.hw.Load() }

// setState takes the partition's state from the metadata image (the
// replica's role is switched separately, by applyRoles) and reports
// whether its leader epoch changed or this node started or stopped
// leading it: applyRoles then wakes the partition's parked fetches once
// the replica has its new role, so that they answer
// NOT_LEADER_OR_FOLLOWER, or, for a follower's fetch held for this
// leadership, are served.
func (p *partition) setState(s metadata.Partition, self int32) (changed bool) {
	st := s
	p.state.Store(&st)
	epochChanged := p.leaderEpoch.Swap(s.LeaderEpoch()) != s.LeaderEpoch()
	p.leader.Store(s.Leader())
	leads := s.Leader() == self && p.log != nil
	return p.leads.Swap(leads) != leads || epochChanged
}

// setHW publishes the replica's high watermark and wakes parked fetches.
func (p *partition) setHW(hw int64) {
	p.hw.Store(hw)
	p.wakeAll()
}

func (p *partition) wakeAll() {
	p.wmu.Lock()
	for _, w := range p.waiters {
		w.Wake()
	}
	p.wmu.Unlock()
}

// localOnly keeps the partitions this node holds a replica of.
func localOnly(ps []*partition) []*partition {
	out := make([]*partition, 0, len(ps))
	for _, p := range ps {
		if p.log != nil {
			out = append(out, p)
		}
	}
	return out
}

// isLeader reports whether this node leads the partition.
func (p *partition) isLeader() bool { return p.leads.Load() }
