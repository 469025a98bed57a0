package broker

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/config"
	"weir/internal/group"
	wlog "weir/internal/log"
	"weir/internal/metadata"
	"weir/internal/replica"
	"weir/internal/share"
	"weir/internal/sharegroup"
	"weir/internal/sharestate"
)

// Share groups are served by internal/sharegroup (the Manager: sessions,
// share partitions, membership, group configs) over internal/sharestate
// (the state in __share_group_state, on this node or another). This file
// is their view of the node; the handlers (76-79, 84, 85, 90-92) call
// them.

// startShares makes the share services; Start starts them once the
// registry knows every topic.
func (b *Broker) startShares() {
	scfg := b.cfg.Share
	b.shareState = sharestate.New(sharestate.Config{
		NodeID:     b.cfg.NodeID,
		Partitions: b.statePartitions(),
		LogRecords: scfg.StateLogRecords,
		Logger:     b.logger.With("component", "share"),
	}, shareStateHost{b})
	b.shares = sharegroup.New(scfg, shareGroupHost{b}, b.shareState, b.logger.With("component", "share"))
}

// statePartitions is the partition count __share_group_state is created
// with: the configured one, else 1 on a single node and Kafka's 50 in a
// cluster.
func (b *Broker) statePartitions() int32 {
	switch {
	case b.cfg.Share.StatePartitions > 0:
		return b.cfg.Share.StatePartitions
	case b.cfg.Quorum.Single(b.cfg.NodeID):
		return 1
	}
	return 50
}

// shareStateHost is the node as sharestate sees it.
type shareStateHost struct{ b *Broker }

func (h shareStateHost) Partitions() int {
	t := h.b.lookupTopic(sharestate.Topic)
	if t == nil {
		return 0
	}
	h.b.mu.RLock()
	defer h.b.mu.RUnlock()
	return len(t.partitions)
}

func (h shareStateHost) EnsureTopic(ctx context.Context, partitions int32) error {
	return h.b.ensureInternalTopic(ctx, sharestate.Topic, partitions)
}

// statePartition is this node's partition i of __share_group_state, or
// nil.
func (h shareStateHost) statePartition(i int) *partition {
	t := h.b.lookupTopic(sharestate.Topic)
	if t == nil {
		return nil
	}
	h.b.mu.RLock()
	defer h.b.mu.RUnlock()
	if i >= len(t.partitions) {
		return nil
	}
	return t.partitions[i]
}

func (h shareStateHost) Replica(i int) sharestate.Replica {
	if p := h.statePartition(i); p != nil && p.rep != nil {
		return p.rep
	}
	return nil
}

func (h shareStateHost) Leader(i int) int32 {
	if p := h.statePartition(i); p != nil {
		return p.leader()
	}
	return -1
}

func (h shareStateHost) Serving() bool { return h.b.started.Load() }

func (h shareStateHost) Send(ctx context.Context, node int32, req kmsg.Request) (kmsg.Response, error) {
	return h.b.transport.Send(ctx, node, req)
}

// shareGroupHost is the node as sharegroup sees it.
type shareGroupHost struct{ b *Broker }

func (h shareGroupHost) Now() time.Time { return h.b.now() }

func (h shareGroupHost) TopicName(id [16]byte) (string, bool) {
	if t := h.b.lookupTopicID(id); t != nil {
		return t.name, true
	}
	return "", false
}

// Topics snapshots the topics, so that Broker.mu is not taken under the
// share group's locks.
func (h shareGroupHost) Topics() share.TopicLookup {
	b := h.b
	b.mu.RLock()
	m := make(map[string]share.TopicInfo, len(b.topics))
	for name, t := range b.topics {
		if !t.internal {
			m[name] = share.TopicInfo{ID: t.id, Partitions: int32(len(t.partitions))}
		}
	}
	b.mu.RUnlock()
	return func(name string) (share.TopicInfo, bool) {
		info, ok := m[name]
		return info, ok
	}
}

func (h shareGroupHost) Partition(topicID [16]byte, index int32) (sharegroup.Partition, error) {
	t := h.b.lookupTopicID(topicID)
	if t == nil {
		return nil, kerr.UnknownTopicID
	}
	p, err := h.b.partitionOf(t, index)
	if err != nil {
		return nil, err
	}
	// The leader epoch comes from the replica, which applies a
	// leadership a moment after the registry does.
	epoch, ok := p.rep.Leading()
	if !ok {
		return nil, kerr.NotLeaderForPartition
	}
	return sharedPartition{p, epoch}, nil
}

func (h shareGroupHost) LedElsewhere(topicID [16]byte) bool {
	t, ok := h.b.image().Topic(topicID)
	if !ok {
		return false
	}
	self := h.b.cfg.NodeID
	return !t.EachPartition(func(_ int32, s metadata.Partition) bool {
		return s.Leader() < 0 || s.Leader() == self
	})
}

func (h shareGroupHost) ElsewhereWait() time.Duration {
	return h.b.settings().Millis(config.ShareFetchElsewhereWaitMs)
}

func (h shareGroupHost) Coordinates(group string) bool { return h.b.coordinates(group) }

func (h shareGroupHost) OtherGroupExists(ctx context.Context, id string) bool {
	req := kmsg.NewPtrListGroupsRequest()
	req.Version = 5
	resp, err := h.b.coord().ListGroups(ctx, req)
	if err != nil {
		return false
	}
	for _, g := range resp.Groups {
		if g.Group == id {
			return true
		}
	}
	return false
}

func (h shareGroupHost) WriteGroupRecord(ctx context.Context, id string, exists bool) error {
	return h.b.offsetsStore().Append(ctx, id, []group.Record{group.ShareGroupRecord(id, exists)})
}

func (h shareGroupHost) GroupRecords(ctx context.Context, fn func(group string, exists bool)) error {
	return h.b.offsetsStore().Replay(ctx, func(r group.Record) error {
		if id, exists, ok := group.ShareGroupOf(r.Key, r.Value); ok {
			fn(id, exists)
		}
		return nil
	})
}

// sharedPartition is a data partition led here, for sharegroup.
type sharedPartition struct {
	p     *partition
	epoch int32
}

func (s sharedPartition) Log() *wlog.Log       { return s.p.log() }
func (s sharedPartition) HighWatermark() int64 { return s.p.highWatermark() }
func (s sharedPartition) LeaderEpoch() int32   { return s.epoch }
func (s sharedPartition) Park(w *replica.Waiter) func() {
	s.p.addWaiter(w)
	return func() { s.p.removeWaiter(w) }
}

// ShareStats returns the share groups' metrics, partitions sorted by group,
// topic and partition.
func (b *Broker) ShareStats() sharegroup.Stats { return b.shares.Stats() }
