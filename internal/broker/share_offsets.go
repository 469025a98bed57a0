package broker

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/share"
)

// The share group offset admin APIs (90-92) on the coordinator.

// shareOffset is what DescribeShareGroupOffsets reports of a partition;
// start is -1 when the partition has no state.
type shareOffset struct {
	start, lag int64
	epoch      int32
}

// describeOffset reads one share partition's start offset and lag: from
// the share partition when this node leads it and has it loaded, else
// from the state its share coordinator holds (the lag then only when the
// data partition's log is here).
func (c *shareCoordinator) describeOffset(k share.StateKey) shareOffset {
	out := shareOffset{start: -1, lag: -1, epoch: -1}
	c.mu.Lock()
	sp, ok := c.parts[k]
	c.mu.Unlock()
	if ok {
		if lp := sp.logPartition(); lp != nil {
			hw := lp.highWatermark()
			sp.mu.Lock()
			loaded := sp.p != nil && !sp.deleted && !sp.broken
			if loaded {
				out.start, out.lag, out.epoch = sp.p.StartOffset(), sp.p.Lag(hw), lp.leaderEpoch.Load()
			}
			sp.mu.Unlock()
			if loaded {
				return out
			}
		}
	}
	rkey, err := stateRecordKey(k)
	if err != nil || c.ensureStore() != nil {
		return out
	}
	ctx, cancel := context.WithTimeout(c.b.ctx, 15*time.Second)
	defer cancel()
	recs, err := c.stateRead(ctx, rkey, -1)
	if err != nil || len(recs) == 0 {
		return out
	}
	p, err := share.Restore(share.Config{}, recs)
	if err != nil {
		return out
	}
	out.start = p.StartOffset()
	if lp := c.b.lookupTopicID(k.TopicID); lp != nil {
		if part, err := c.b.partitionOf(lp, k.Partition); err == nil {
			out.lag, out.epoch = p.Lag(part.highWatermark()), part.leaderEpoch.Load()
		}
	}
	return out
}

// initializedParts lists a group's share partitions that have state, or
// false when the group does not exist: those loaded here, and those whose
// state the share coordinator on this node holds (in a cluster, state
// coordinated elsewhere is not listed).
func (c *shareCoordinator) initializedParts(group string) ([]share.StateKey, bool) {
	c.mu.Lock()
	g, ok := c.groups[group]
	var parts []*sharePart
	if ok {
		parts = slices.Collect(maps.Values(g.parts))
	}
	c.mu.Unlock()
	if !ok {
		return nil, false
	}
	seen := map[share.StateKey]bool{}
	for _, sp := range parts {
		sp.mu.Lock()
		if sp.p != nil && !sp.deleted {
			seen[sp.key] = true
		}
		sp.mu.Unlock()
	}
	if s := c.store.Load(); s != nil {
		ctx, cancel := context.WithTimeout(c.b.ctx, 15*time.Second)
		defer cancel()
		for _, k := range s.keysOf(ctx, group) {
			seen[k] = true
		}
	}
	return slices.Collect(maps.Keys(seen)), true
}

// alterOffsets resets share partitions of an empty (or new) group to new
// start offsets. A negative offset forgets the partition's state, so that
// its next use starts it from share.auto.offset.reset again.
func (c *shareCoordinator) alterOffsets(ctx context.Context, r *kmsg.AlterShareGroupOffsetsRequest, resp *kmsg.AlterShareGroupOffsetsResponse) {
	if err := c.ensureStore(); err != nil {
		resp.ErrorCode, resp.ErrorMessage = kerr.KafkaStorageError.Code, errMessage(err)
		return
	}
	lookup := c.topicLookup()
	c.mu.Lock()
	g, existed := c.groups[r.GroupID]
	if existed && !g.g.Empty() {
		c.mu.Unlock()
		resp.ErrorCode = kerr.NonEmptyGroup.Code
		resp.ErrorMessage = kmsg.StringPtr(fmt.Sprintf("Share group %s is not empty.", r.GroupID))
		return
	}
	var tickets []*storeTicket
	if !existed {
		g = c.groupLocked(r.GroupID)
	}
	now := c.b.now()
	for _, rt := range r.Topics {
		st := kmsg.NewAlterShareGroupOffsetsResponseTopic()
		st.Topic = rt.Topic
		info, known := lookup(rt.Topic)
		if known {
			st.TopicID = info.ID
		}
		for _, rp := range rt.Partitions {
			sp := kmsg.NewAlterShareGroupOffsetsResponseTopicPartition()
			sp.Partition = rp.Partition
			if !known || rp.Partition < 0 || rp.Partition >= info.Partitions {
				sp.ErrorCode = kerr.UnknownTopicOrPartition.Code
				sp.ErrorMessage = kmsg.StringPtr(kerr.UnknownTopicOrPartition.Description)
				st.Partitions = append(st.Partitions, sp)
				continue
			}
			part := c.partLocked(g, share.StateKey{Group: g.id, TopicID: info.ID, Partition: rp.Partition})
			tickets = append(tickets, part.reset(rp.StartOffset, now))
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	c.mu.Unlock()
	err := waitTickets(ctx, tickets...)
	if err == nil && !existed {
		err = c.writeGroupRecord(ctx, r.GroupID, true)
	}
	if err != nil {
		resp.ErrorCode, resp.ErrorMessage = kerr.KafkaStorageError.Code, errMessage(err)
	}
}

// reset moves a share partition to a new start offset with a new state
// epoch, or forgets it for a negative offset.
func (sp *sharePart) reset(start int64, now time.Time) *storeTicket {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	sp.broken, sp.deleted = false, false
	var t *storeTicket
	// The share coordinator starts a new state epoch for the reset, so a
	// leader holding the old state (here or on another node) is fenced
	// and loads the reset one.
	reinit := stateFence{stateEpoch: 0, leaderEpoch: -1, reinit: true}
	switch {
	case start < 0:
		sp.p = nil
		t = sp.c.stateWrite(sp.rkey, nil, true, reinit)
	case sp.p == nil:
		sp.p = share.New(sp.cfg, start)
		t = sp.writeSnapshotAs(reinit)
	default:
		sp.p.Reset(start)
		reinit.stateEpoch = sp.p.StateEpoch()
		t = sp.writeSnapshotAs(reinit)
	}
	// This node's copy is not the coordinator's (its state epoch may
	// differ): the next use loads it.
	sp.broken = sp.p != nil
	for _, w := range sp.waiters {
		w.wake()
	}
	return t
}

// deleteOffsets deletes the state of an empty group's share partitions of
// the named topics.
func (c *shareCoordinator) deleteOffsets(ctx context.Context, r *kmsg.DeleteShareGroupOffsetsRequest, resp *kmsg.DeleteShareGroupOffsetsResponse) {
	lookup := c.topicLookup()
	c.mu.Lock()
	g, ok := c.groups[r.GroupID]
	switch {
	case !ok:
		c.mu.Unlock()
		resp.ErrorCode = kerr.GroupIDNotFound.Code
		resp.ErrorMessage = kmsg.StringPtr(fmt.Sprintf("Share group %s not found.", r.GroupID))
		return
	case !g.g.Empty():
		c.mu.Unlock()
		resp.ErrorCode = kerr.NonEmptyGroup.Code
		resp.ErrorMessage = kmsg.StringPtr(fmt.Sprintf("Share group %s is not empty.", r.GroupID))
		return
	}
	var tickets []*storeTicket
	for _, rt := range r.Topics {
		st := kmsg.NewDeleteShareGroupOffsetsResponseTopic()
		st.Topic = rt.Topic
		info, known := lookup(rt.Topic)
		if !known {
			st.ErrorCode = kerr.UnknownTopicOrPartition.Code
			st.ErrorMessage = kmsg.StringPtr(kerr.UnknownTopicOrPartition.Description)
			resp.Topics = append(resp.Topics, st)
			continue
		}
		st.TopicID = info.ID
		for k, sp := range g.parts {
			if k.TopicID == info.ID {
				tickets = append(tickets, c.dropPartLocked(k, sp))
			}
		}
		resp.Topics = append(resp.Topics, st)
	}
	c.mu.Unlock()
	if err := waitTickets(ctx, tickets...); err != nil {
		resp.ErrorCode, resp.ErrorMessage = kerr.KafkaStorageError.Code, errMessage(err)
	}
}
