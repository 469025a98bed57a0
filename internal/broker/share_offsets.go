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

// describeOffset reads one share partition's start offset and lag.
func (c *shareCoordinator) describeOffset(k share.StateKey) shareOffset {
	out := shareOffset{start: -1, lag: -1, epoch: -1}
	c.mu.Lock()
	sp, ok := c.parts[k]
	c.mu.Unlock()
	if !ok {
		return out
	}
	lp := sp.logPartition()
	if lp == nil {
		return out
	}
	hw := lp.highWatermark()
	sp.mu.Lock()
	defer sp.mu.Unlock()
	if sp.p == nil || sp.deleted {
		return out
	}
	out.start, out.lag, out.epoch = sp.p.StartOffset(), sp.p.Lag(hw), lp.leaderEpoch.Load()
	return out
}

// initializedParts lists a group's share partitions that have state, or
// false when the group does not exist.
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
	var keys []share.StateKey
	for _, sp := range parts {
		sp.mu.Lock()
		if sp.p != nil && !sp.deleted {
			keys = append(keys, sp.key)
		}
		sp.mu.Unlock()
	}
	return keys, true
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
		tickets = append(tickets, c.enqueue(groupRecordKey(shareKeyGroup, g.id), []byte{0}, true))
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
	if err := waitTickets(ctx, tickets...); err != nil {
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
	switch {
	case start < 0:
		sp.p = nil
		t = sp.c.enqueue(sp.rkey, nil, true)
	case sp.p == nil:
		sp.p = share.New(sp.cfg, start)
		t = sp.writeSnapshotLocked()
	default:
		sp.p.Reset(start)
		t = sp.writeSnapshotLocked()
	}
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
