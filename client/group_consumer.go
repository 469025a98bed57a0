package client

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// consumerGroup is membership under KIP-848 (group.protocol=consumer): the
// broker assigns; the member heartbeats with ConsumerGroupHeartbeat from a
// goroutine, and Poll reconciles each new target assignment (revoke, then
// assign, running the callbacks) and has the next heartbeat acknowledge it
// by reporting the partitions now owned.
type consumerGroup struct {
	c  *Consumer
	co *coordinator

	mu       sync.Mutex
	topics   []string
	memberID string
	epoch    int32
	interval time.Duration
	owned    map[TopicPartition]bool
	target   map[[16]byte][]int32 // latest assignment from the broker, not yet applied; nil none
	lost     bool
	fatal    error
	left     bool

	ctx    context.Context // ends at leave, cutting a heartbeat short
	cancel context.CancelFunc
	wakeCh chan struct{} // to Poll
	hbNow  chan struct{} // to the heartbeat loop
	stop   chan struct{}
	done   chan struct{}
}

func newConsumerGroup(c *Consumer, topics []string) *consumerGroup {
	g := &consumerGroup{
		c:        c,
		co:       &coordinator{cl: c.cl, group: c.cfg.groupID, node: -1},
		topics:   slices.Clone(topics),
		memberID: newMemberID(),
		interval: 5 * time.Second,
		owned:    map[TopicPartition]bool{},
		wakeCh:   make(chan struct{}, 1),
		hbNow:    make(chan struct{}, 1),
		stop:     make(chan struct{}),
		done:     make(chan struct{}),
	}
	g.ctx, g.cancel = context.WithCancel(c.cl.ctx)
	go g.loop()
	return g
}

func (g *consumerGroup) wake() <-chan struct{} { return g.wakeCh }

func (g *consumerGroup) identity() (int32, string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.epoch, g.memberID
}

func (g *consumerGroup) subscribe(topics []string) {
	g.mu.Lock()
	g.topics = slices.Clone(topics)
	g.mu.Unlock()
	poke(g.hbNow)
}

func poke(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

func (g *consumerGroup) loop() {
	defer close(g.done)
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-g.stop:
			return
		case <-timer.C:
		case <-g.hbNow:
		}
		err := g.heartbeat()
		g.mu.Lock()
		wait := g.interval
		g.mu.Unlock()
		if err != nil {
			wait = backoff(g.c.cfg.retryBackoff, g.c.cfg.retryBackoffMax, 3, g.c.o.rand)
		}
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
		timer.Reset(wait)
	}
}

func (g *consumerGroup) heartbeat() error {
	g.mu.Lock()
	if g.fatal != nil || g.left {
		g.mu.Unlock()
		return nil
	}
	if g.lost {
		g.mu.Unlock()
		return nil // rejoin after Poll has handed the lost partitions back
	}
	if g.epoch > 0 && g.c.pollOverdue() {
		// Stuck application: leave (epoch -1) and rejoin with epoch 0 at
		// the next Poll, losing the partitions, as the Java client does.
		member := g.memberID
		g.epoch, g.lost = 0, true
		g.mu.Unlock()
		g.c.log.Warn("max.poll.interval.ms passed without a poll: leaving the group", logGroup, g.co.group, logMember, member)
		req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		req.Group, req.MemberID, req.MemberEpoch = g.co.group, member, -1
		ctx, cancel := context.WithTimeout(g.ctx, g.c.cfg.requestTimeout)
		defer cancel()
		_, err := g.co.do(ctx, req, g.c.cfg.requestTimeout, func(r kmsg.Response) error {
			return kerr.ErrorForCode(r.(*kmsg.ConsumerGroupHeartbeatResponse).ErrorCode)
		})
		poke(g.wakeCh)
		return err
	}
	req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	req.Group, req.MemberID, req.MemberEpoch = g.co.group, g.memberID, g.epoch
	if g.c.cfg.instanceID != "" {
		req.InstanceID = kmsg.StringPtr(g.c.cfg.instanceID)
	}
	if g.c.cfg.rack != "" {
		req.RackID = kmsg.StringPtr(g.c.cfg.rack)
	}
	req.RebalanceTimeoutMillis = int32(g.c.cfg.maxPollInterval / time.Millisecond)
	req.SubscribedTopicNames = slices.Clone(g.topics)
	if g.c.cfg.remoteAssignor != "" {
		req.ServerAssignor = kmsg.StringPtr(g.c.cfg.remoteAssignor)
	}
	req.Topics = g.ownedByID()
	if req.Topics == nil {
		g.mu.Unlock()
		return errors.New("client: topic ids of owned partitions unknown") // metadata refresh pending
	}
	g.mu.Unlock()
	ctx, cancel := context.WithTimeout(g.ctx, g.c.cfg.requestTimeout)
	defer cancel()
	raw, err := g.co.do(ctx, req, g.c.cfg.requestTimeout, heartbeatErr)
	if err != nil {
		switch {
		case errors.Is(err, kerr.FencedMemberEpoch) || errors.Is(err, kerr.UnknownMemberID):
			g.mu.Lock()
			g.epoch, g.lost = 0, true
			g.mu.Unlock()
			poke(g.wakeCh)
			poke(g.hbNow)
		case errors.Is(err, kerr.UnsupportedAssignor) || errors.Is(err, kerr.UnreleasedInstanceID) || errors.Is(err, kerr.GroupMaxSizeReached) ||
			errors.Is(err, kerr.InvalidRequest) || errors.Is(err, kerr.UnsupportedVersion) || errors.Is(err, kerr.GroupIDNotFound):
			g.mu.Lock()
			g.fatal = fmt.Errorf("client: group %s heartbeat: %w", g.co.group, err)
			g.mu.Unlock()
			poke(g.wakeCh)
		default:
			g.c.log.Debug("group heartbeat failed", logGroup, g.co.group, logErr, err)
		}
		return err
	}
	resp := raw.(*kmsg.ConsumerGroupHeartbeatResponse)
	g.mu.Lock()
	if resp.MemberID != nil && *resp.MemberID != "" {
		g.memberID = *resp.MemberID
	}
	g.epoch = resp.MemberEpoch
	if resp.HeartbeatIntervalMillis > 0 {
		g.interval = time.Duration(resp.HeartbeatIntervalMillis) * time.Millisecond
	}
	if resp.Assignment != nil {
		g.target = map[[16]byte][]int32{}
		for _, t := range resp.Assignment.Topics {
			g.target[t.TopicID] = t.Partitions
		}
	}
	g.mu.Unlock()
	if resp.Assignment != nil {
		poke(g.wakeCh)
	}
	return nil
}

// ownedByID lists owned partitions by topic id; g.mu is held. It returns
// nil when an owned topic's id is unknown.
func (g *consumerGroup) ownedByID() []kmsg.ConsumerGroupHeartbeatRequestTopic {
	m := g.c.cl.meta.Load()
	byTopic := map[string][]int32{}
	for tp := range g.owned {
		byTopic[tp.Topic] = append(byTopic[tp.Topic], tp.Partition)
	}
	out := []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	names := slices.Sorted(maps.Keys(byTopic))
	for _, name := range names {
		t := m.topics[name]
		if t == nil || t.id == ([16]byte{}) {
			g.c.cl.requestRefresh()
			return nil
		}
		ps := byTopic[name]
		slices.Sort(ps)
		out = append(out, kmsg.ConsumerGroupHeartbeatRequestTopic{TopicID: t.id, Partitions: ps})
	}
	return out
}

func (g *consumerGroup) poll(ctx context.Context) error {
	g.mu.Lock()
	fatal, lost, target := g.fatal, g.lost, g.target
	g.mu.Unlock()
	if fatal != nil {
		return fatal
	}
	if lost {
		g.mu.Lock()
		owned := sortedKeys(g.owned)
		// A target assignment received before the loss belonged to the old
		// membership: drop it, the rejoin brings a new one.
		g.owned, g.lost, g.target = map[TopicPartition]bool{}, false, nil
		target = nil
		g.mu.Unlock()
		if len(owned) > 0 {
			g.c.removePartitions(owned)
			g.c.callListener(ctx, "lost", owned)
		}
		poke(g.hbNow) // rejoin
	}
	if target == nil {
		return nil
	}
	// Resolve topic ids; wait for metadata if one is new to us.
	next := map[TopicPartition]bool{}
	m := g.c.cl.meta.Load()
	for id, ps := range target {
		name, ok := m.byID[id]
		if !ok {
			g.c.cl.requestRefresh()
			return nil // retried on the next Poll
		}
		for _, p := range ps {
			next[TopicPartition{name, p}] = true
		}
	}
	g.mu.Lock()
	if !maps.EqualFunc(target, g.target, slices.Equal) {
		g.mu.Unlock()
		return nil // a newer target arrived meanwhile; take it next time
	}
	g.target = nil
	cur := maps.Clone(g.owned)
	g.mu.Unlock()
	revoked := diffTPs(cur, next)
	added := diffTPs(next, cur)
	if len(revoked) > 0 {
		if g.c.cfg.autoCommit {
			if err := g.c.CommitSync(ctx, g.c.positions(revoked)); err != nil {
				g.c.log.Debug("commit before revoke failed", logGroup, g.co.group, logErr, err)
			}
		}
		g.c.callListener(ctx, "revoked", revoked)
		g.c.removePartitions(revoked)
	}
	g.c.addPartitions(added)
	g.mu.Lock()
	g.owned = next
	epoch := g.epoch
	g.mu.Unlock()
	if len(added)+len(revoked) > 0 {
		g.c.log.Info("group assignment", logGroup, g.co.group, logEpoch, epoch, "assigned", len(next), "added", len(added), "revoked", len(revoked))
	}
	g.c.callListener(ctx, "assigned", added)
	poke(g.hbNow) // acknowledge
	return nil
}

// heartbeatErr is a ConsumerGroupHeartbeat response's error with the
// broker's message.
func heartbeatErr(r kmsg.Response) error {
	resp := r.(*kmsg.ConsumerGroupHeartbeatResponse)
	err := kerr.ErrorForCode(resp.ErrorCode)
	if err != nil && resp.ErrorMessage != nil {
		return fmt.Errorf("%w (%s)", err, *resp.ErrorMessage)
	}
	return err
}

func sortedKeys(m map[TopicPartition]bool) []TopicPartition {
	out := make([]TopicPartition, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Topic != out[j].Topic {
			return out[i].Topic < out[j].Topic
		}
		return out[i].Partition < out[j].Partition
	})
	return out
}

// leave sends the leaving heartbeat (epoch -1, or -2 for a static member
// that keeps its assignment for a restart) and stops the loop.
func (g *consumerGroup) leave(ctx context.Context) error {
	g.mu.Lock()
	g.left = true
	owned := sortedKeys(g.owned)
	member := g.memberID
	g.mu.Unlock()
	close(g.stop)
	g.cancel()
	<-g.done
	if len(owned) > 0 {
		g.c.callListener(ctx, "revoked", owned)
	}
	req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	req.Group, req.MemberID, req.MemberEpoch = g.co.group, member, -1
	if g.c.cfg.instanceID != "" {
		req.InstanceID = kmsg.StringPtr(g.c.cfg.instanceID)
		req.MemberEpoch = -2
	}
	_, err := g.co.do(ctx, req, g.c.cfg.requestTimeout, func(r kmsg.Response) error {
		return kerr.ErrorForCode(r.(*kmsg.ConsumerGroupHeartbeatResponse).ErrorCode)
	})
	if errors.Is(err, kerr.UnknownMemberID) || errors.Is(err, kerr.FencedMemberEpoch) {
		return nil
	}
	return err
}
