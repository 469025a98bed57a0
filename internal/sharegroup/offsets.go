package sharegroup

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/errcode"
	"weir/internal/share"
	"weir/internal/sharestate"
)

// The share group offset admin APIs (DescribeShareGroupOffsets,
// AlterShareGroupOffsets, DeleteShareGroupOffsets) on the group's
// coordinator.

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
func (m *Manager) describeOffset(k share.StateKey) shareOffset {
	out := shareOffset{start: -1, lag: -1, epoch: -1}
	m.mu.Lock()
	sp, ok := m.parts[k]
	m.mu.Unlock()
	lp, lerr := m.host.Partition(k.TopicID, k.Partition)
	if ok && lerr == nil {
		hw := lp.HighWatermark()
		sp.mu.Lock()
		loaded := sp.p != nil && !sp.deleted && !sp.broken
		if loaded {
			out.start, out.lag, out.epoch = sp.p.StartOffset(), sp.p.Lag(hw), lp.LeaderEpoch()
		}
		sp.mu.Unlock()
		if loaded {
			return out
		}
	}
	rkey, err := sharestate.RecordKey(k)
	if err != nil || m.state.Ensure() != nil {
		return out
	}
	ctx, cancel := context.WithTimeout(m.ctx, 15*time.Second)
	defer cancel()
	recs, err := m.state.Read(ctx, rkey, -1)
	if err != nil || len(recs) == 0 {
		return out
	}
	p, err := share.Restore(share.Config{}, recs)
	if err != nil {
		return out
	}
	out.start = p.StartOffset()
	if lerr == nil {
		out.lag, out.epoch = p.Lag(lp.HighWatermark()), lp.LeaderEpoch()
	} else if rh, ok := m.host.(RemoteHighWatermark); ok {
		if hw, err := rh.HighWatermark(ctx, k.TopicID, k.Partition); err == nil {
			out.lag = p.Lag(hw)
		}
	}
	return out
}

// initializedParts finds a group's share partitions that have state,
// with their start offsets and lags, or false when the group does not
// exist. The state of a partition lives with its leader (loaded) and its
// share coordinator (stored), both often other nodes: the candidates are
// every partition of the topics the group's members subscribed to, the
// partitions loaded here and the keys this node's share coordinator
// holds, and each candidate's state is read where it is
// (describeOffset), at most describeParallel at a time. A partition
// without state is left out.
func (m *Manager) initializedParts(group string) (map[share.StateKey]shareOffset, bool) {
	m.mu.Lock()
	g, ok := m.groups[group]
	var parts []*sharePartition
	var topics [][16]byte
	if ok {
		parts = slices.Collect(maps.Values(g.parts))
		topics = slices.Collect(maps.Keys(g.topics))
	}
	m.mu.Unlock()
	if !ok {
		return nil, false
	}
	candidates := map[share.StateKey]bool{}
	for _, sp := range parts {
		sp.mu.Lock()
		if sp.p != nil && !sp.deleted {
			candidates[sp.key] = true
		}
		sp.mu.Unlock()
	}
	ctx, cancel := context.WithTimeout(m.ctx, 15*time.Second)
	defer cancel()
	for _, k := range m.state.Keys(ctx, group) {
		candidates[k] = true
	}
	lookup := m.host.Topics()
	for _, id := range topics {
		name, known := m.host.TopicName(id)
		if !known {
			continue
		}
		info, ok := lookup(name)
		if !ok || info.ID != id {
			continue
		}
		for p := range info.Partitions {
			candidates[share.StateKey{Group: group, TopicID: id, Partition: p}] = true
		}
	}
	keys := slices.Collect(maps.Keys(candidates))
	offsets := make([]shareOffset, len(keys))
	var wg sync.WaitGroup
	sem := make(chan struct{}, describeParallel)
	for i, k := range keys {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			offsets[i] = m.describeOffset(k)
		})
	}
	wg.Wait()
	out := map[share.StateKey]shareOffset{}
	for i, k := range keys {
		if offsets[i].start >= 0 {
			out[k] = offsets[i]
		}
	}
	return out, true
}

// describeParallel bounds the state reads one DescribeShareGroupOffsets
// has in flight.
const describeParallel = 16

// AlterOffsets answers AlterShareGroupOffsets: it resets share partitions
// of an empty (or new) group to new start offsets, each with a new state
// epoch, so records of its old state are ignored from then on. A group
// with members is NON_EMPTY_GROUP; an unknown group is created empty, as
// Kafka does; unknown topics and partitions are
// UNKNOWN_TOPIC_OR_PARTITION. A negative offset forgets the partition's
// state, so that its next use starts it from share.auto.offset.reset
// again.
func (m *Manager) AlterOffsets(ctx context.Context, r *kmsg.AlterShareGroupOffsetsRequest) *kmsg.AlterShareGroupOffsetsResponse {
	resp := r.ResponseKind().(*kmsg.AlterShareGroupOffsetsResponse)
	if r.GroupID == "" {
		resp.ErrorCode = kerr.InvalidGroupID.Code
		return resp
	}
	m.alterOffsets(ctx, r, resp)
	return resp
}

func (m *Manager) alterOffsets(ctx context.Context, r *kmsg.AlterShareGroupOffsetsRequest, resp *kmsg.AlterShareGroupOffsetsResponse) {
	if err := m.state.Ensure(); err != nil {
		resp.ErrorCode, resp.ErrorMessage = kerr.KafkaStorageError.Code, errcode.Message(err)
		return
	}
	lookup := m.host.Topics()
	m.mu.Lock()
	g, existed := m.groups[r.GroupID]
	if existed && !g.g.Empty() {
		m.mu.Unlock()
		resp.ErrorCode = kerr.NonEmptyGroup.Code
		resp.ErrorMessage = kmsg.StringPtr(fmt.Sprintf("Share group %s is not empty.", r.GroupID))
		return
	}
	var tickets []*sharestate.Ticket
	if !existed {
		g = m.groupLocked(r.GroupID)
	}
	now := m.host.Now()
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
			part := m.partLocked(g, share.StateKey{Group: g.id, TopicID: info.ID, Partition: rp.Partition})
			tickets = append(tickets, part.reset(rp.StartOffset, now))
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	m.mu.Unlock()
	err := sharestate.WaitAll(ctx, tickets...)
	if err == nil && !existed {
		err = m.host.WriteGroupRecord(ctx, r.GroupID, true)
	}
	if err != nil {
		resp.ErrorCode, resp.ErrorMessage = kerr.KafkaStorageError.Code, errcode.Message(err)
	}
}

// reset moves a share partition to a new start offset with a new state
// epoch, or forgets it for a negative offset.
func (sp *sharePartition) reset(start int64, now time.Time) *sharestate.Ticket {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	sp.failBatchLocked(errBatchDropped)
	sp.broken, sp.deleted = false, false
	sp.gen++ // a load in progress read the old state
	var t *sharestate.Ticket
	// The share coordinator starts a new state epoch for the reset, so a
	// leader holding the old state (here or on another node) is fenced
	// and loads the reset one.
	reinit := sharestate.Fence{StateEpoch: 0, LeaderEpoch: -1, Reinit: true}
	switch {
	case start < 0:
		sp.p = nil
		t = sp.m.state.Write(sp.rkey, nil, true, reinit)
	case sp.p == nil:
		sp.p = share.New(sp.cfg, start)
		t = sp.writeSnapshotAs(reinit)
	default:
		sp.p.Reset(start)
		reinit.StateEpoch = sp.p.StateEpoch()
		t = sp.writeSnapshotAs(reinit)
	}
	// This node's copy is not the coordinator's (its state epoch may
	// differ): the next use loads it.
	sp.broken = sp.p != nil
	for _, w := range sp.waiters {
		w.Wake()
	}
	return t
}

// DeleteOffsets answers DeleteShareGroupOffsets: it forgets the state of
// an empty group's share partitions of the named topics (their next use
// starts them from share.auto.offset.reset). GROUP_ID_NOT_FOUND and
// NON_EMPTY_GROUP are answered for the whole request,
// UNKNOWN_TOPIC_OR_PARTITION per topic.
func (m *Manager) DeleteOffsets(ctx context.Context, r *kmsg.DeleteShareGroupOffsetsRequest) *kmsg.DeleteShareGroupOffsetsResponse {
	resp := r.ResponseKind().(*kmsg.DeleteShareGroupOffsetsResponse)
	if r.GroupID == "" {
		resp.ErrorCode = kerr.InvalidGroupID.Code
		return resp
	}
	m.deleteOffsets(ctx, r, resp)
	return resp
}

func (m *Manager) deleteOffsets(ctx context.Context, r *kmsg.DeleteShareGroupOffsetsRequest, resp *kmsg.DeleteShareGroupOffsetsResponse) {
	lookup := m.host.Topics()
	m.mu.Lock()
	g, ok := m.groups[r.GroupID]
	switch {
	case !ok:
		m.mu.Unlock()
		resp.ErrorCode = kerr.GroupIDNotFound.Code
		resp.ErrorMessage = kmsg.StringPtr(fmt.Sprintf("Share group %s not found.", r.GroupID))
		return
	case !g.g.Empty():
		m.mu.Unlock()
		resp.ErrorCode = kerr.NonEmptyGroup.Code
		resp.ErrorMessage = kmsg.StringPtr(fmt.Sprintf("Share group %s is not empty.", r.GroupID))
		return
	}
	var tickets []*sharestate.Ticket
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
				tickets = append(tickets, m.dropPartLocked(k, sp))
			}
		}
		resp.Topics = append(resp.Topics, st)
	}
	m.mu.Unlock()
	if err := sharestate.WaitAll(ctx, tickets...); err != nil {
		resp.ErrorCode, resp.ErrorMessage = kerr.KafkaStorageError.Code, errcode.Message(err)
	}
}

// DescribeOffsets answers DescribeShareGroupOffsets (v1 adds Lag: the
// records from the start offset up to the high watermark not yet
// acknowledged or archived). Null Topics means every share partition of
// the group with state (an unknown group is GROUP_ID_NOT_FOUND); named
// topics are answered whether or not the group exists, as Kafka does: an
// unknown topic or a partition without state has start offset -1.
func (m *Manager) DescribeOffsets(r *kmsg.DescribeShareGroupOffsetsRequest) *kmsg.DescribeShareGroupOffsetsResponse {
	resp := r.ResponseKind().(*kmsg.DescribeShareGroupOffsetsResponse)
	lookup := m.host.Topics()
	for _, rg := range r.Groups {
		g := kmsg.NewDescribeShareGroupOffsetsResponseGroup()
		g.GroupID = rg.GroupID
		type want struct {
			name string
			id   [16]byte
			ok   bool
			ps   []int32
		}
		var wants []want
		var found map[share.StateKey]shareOffset
		if rg.Topics == nil {
			var ok bool
			found, ok = m.initializedParts(rg.GroupID)
			if !ok {
				g.ErrorCode = kerr.GroupIDNotFound.Code
				g.ErrorMessage = kmsg.StringPtr(fmt.Sprintf("Group %s not found.", rg.GroupID))
				resp.Groups = append(resp.Groups, g)
				continue
			}
			byTopic := map[[16]byte][]int32{}
			for k := range found {
				byTopic[k.TopicID] = append(byTopic[k.TopicID], k.Partition)
			}
			for id, ps := range byTopic {
				if name, ok := m.host.TopicName(id); ok {
					slices.Sort(ps)
					wants = append(wants, want{name, id, true, ps})
				}
			}
			slices.SortFunc(wants, func(a, b want) int { return cmp.Compare(a.name, b.name) })
		} else {
			for _, rt := range rg.Topics {
				w := want{name: rt.Topic, ps: rt.Partitions}
				if info, ok := lookup(rt.Topic); ok {
					w.id, w.ok = info.ID, true
				}
				wants = append(wants, w)
			}
		}
		for _, w := range wants {
			t := kmsg.NewDescribeShareGroupOffsetsResponseGroupTopic()
			t.Topic, t.TopicID = w.name, w.id
			for _, p := range w.ps {
				rp := kmsg.NewDescribeShareGroupOffsetsResponseGroupTopicPartition()
				rp.Partition, rp.StartOffset, rp.LeaderEpoch = p, -1, -1
				if w.ok {
					k := share.StateKey{Group: rg.GroupID, TopicID: w.id, Partition: p}
					o, ok := found[k]
					if !ok {
						o = m.describeOffset(k)
					}
					rp.StartOffset, rp.LeaderEpoch = o.start, o.epoch
					if r.Version >= 1 {
						rp.Lag = o.lag
					}
				}
				t.Partitions = append(t.Partitions, rp)
			}
			g.Topics = append(g.Topics, t)
		}
		resp.Groups = append(resp.Groups, g)
	}
	return resp
}
