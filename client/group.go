package client

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// groupMember is a consumer's membership: the classic protocol (JoinGroup,
// SyncGroup, Heartbeat) or KIP-848's (ConsumerGroupHeartbeat).
type groupMember interface {
	// poll does pending group work on the consumer's goroutine: joining,
	// applying a new assignment and running the rebalance callbacks.
	poll(ctx context.Context) error
	// identity is what OffsetCommit and OffsetFetch carry: the generation
	// (classic) or member epoch (KIP-848), and the member id.
	identity() (int32, string)
	subscribe(topics []string)
	// wake is signalled when poll has work.
	wake() <-chan struct{}
	leave(ctx context.Context) error
}

// coordinator caches the group coordinator's node id.
type coordinator struct {
	cl      *core
	group   string // the key: a group id, or a transactional id
	keyType int8   // FindCoordinator's key type: 0 group, 1 transaction
	mu      sync.Mutex
	node    int32
}

func (co *coordinator) get(ctx context.Context) (int32, error) {
	co.mu.Lock()
	n := co.node
	co.mu.Unlock()
	if n >= 0 {
		return n, nil
	}
	n, err := co.cl.findCoordinator(ctx, co.group, co.keyType)
	if err != nil {
		return -1, err
	}
	co.mu.Lock()
	co.node = n
	co.mu.Unlock()
	return n, nil
}

func (co *coordinator) reset() {
	co.mu.Lock()
	co.node = -1
	co.mu.Unlock()
}

// isCoordinatorErr reports errors that mean "ask again who coordinates".
func isCoordinatorErr(err error) bool {
	return errors.Is(err, kerr.NotCoordinator) || errors.Is(err, kerr.CoordinatorNotAvailable) || errors.Is(err, kerr.CoordinatorLoadInProgress)
}

// do sends a group request to the coordinator, re-finding it and retrying on
// coordinator errors and transport failures, until ctx ends. check extracts
// the response's top-level error.
func (co *coordinator) do(ctx context.Context, req kmsg.Request, timeout time.Duration, check func(kmsg.Response) error) (kmsg.Response, error) {
	for attempt := 1; ; attempt++ {
		node, err := co.get(ctx)
		var resp kmsg.Response
		if err == nil {
			conn, cerr := co.cl.conn(ctx, node)
			if cerr != nil {
				err = cerr
			} else {
				resp, err = conn.Do(ctx, req, timeout)
				if err == nil {
					err = check(resp)
					if err == nil || !isCoordinatorErr(err) {
						return resp, err
					}
				}
			}
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("client: group %s: %w (last error: %v)", co.group, ctx.Err(), err)
		}
		if !isCoordinatorErr(err) && !isRetriable(err) {
			return nil, err
		}
		co.reset()
		t := time.NewTimer(backoff(co.cl.cfg.retryBackoff, co.cl.cfg.retryBackoffMax, attempt, co.cl.o.rand))
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
		}
	}
}

// newMemberID makes a client-side member id (KIP-848 members name
// themselves): 16 random bytes in base64url, like a Kafka Uuid.
func newMemberID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// CommitSync commits offsets for the group (nil: the current positions of
// every assigned partition), waiting for the answer.
func (c *Consumer) CommitSync(ctx context.Context, offsets map[TopicPartition]int64) error {
	if c.cfg.groupID == "" {
		return ErrNoGroup
	}
	if offsets == nil {
		offsets = c.positions(nil)
	}
	if len(offsets) == 0 {
		return nil
	}
	if err := c.knowTopics(ctx, offsets); err != nil {
		return err
	}
	gen, member := int32(-1), ""
	if c.group != nil {
		gen, member = c.group.identity()
	}
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Group, req.Generation, req.MemberID = c.cfg.groupID, gen, member
	if c.cfg.instanceID != "" {
		req.InstanceID = kmsg.StringPtr(c.cfg.instanceID)
	}
	idx := map[string]int{}
	for tp, off := range offsets {
		i, ok := idx[tp.Topic]
		if !ok {
			i = len(req.Topics)
			idx[tp.Topic] = i
			rt := kmsg.NewOffsetCommitRequestTopic()
			rt.Topic = tp.Topic
			if t := c.cl.meta.Load().topics[tp.Topic]; t != nil {
				rt.TopicID = t.id
			}
			req.Topics = append(req.Topics, rt)
		}
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset, rp.LeaderEpoch = tp.Partition, off, -1
		c.mu.Lock()
		if ps := c.parts[tp]; ps != nil && ps.position == off {
			rp.LeaderEpoch = ps.epoch
		}
		c.mu.Unlock()
		req.Topics[i].Partitions = append(req.Topics[i].Partitions, rp)
	}
	co := c.coord()
	raw, err := co.do(ctx, req, c.cfg.requestTimeout, func(r kmsg.Response) error {
		for _, t := range r.(*kmsg.OffsetCommitResponse).Topics {
			for _, p := range t.Partitions {
				if err := kerr.ErrorForCode(p.ErrorCode); err != nil && isCoordinatorErr(err) {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	var errs []error
	for _, t := range raw.(*kmsg.OffsetCommitResponse).Topics {
		for _, p := range t.Partitions {
			err := kerr.ErrorForCode(p.ErrorCode)
			switch {
			case err == nil:
			case errors.Is(err, kerr.IllegalGeneration) || errors.Is(err, kerr.UnknownMemberID) || errors.Is(err, kerr.StaleMemberEpoch) || errors.Is(err, kerr.FencedMemberEpoch):
				errs = append(errs, fmt.Errorf("%w: %s/%d: %v", ErrCommitFailed, t.Topic, p.Partition, err))
			default:
				errs = append(errs, fmt.Errorf("client: commit %s/%d: %w", t.Topic, p.Partition, err))
			}
		}
	}
	return errors.Join(errs...)
}

// knowTopics waits for the metadata (topic ids) of the topics in tps: newer
// OffsetCommit and OffsetFetch versions name topics by id.
func (c *Consumer) knowTopics(ctx context.Context, tps map[TopicPartition]int64) error {
	seen := map[string]bool{}
	for tp := range tps {
		if seen[tp.Topic] {
			continue
		}
		seen[tp.Topic] = true
		if _, err := c.cl.waitTopic(ctx, tp.Topic); err != nil {
			return err
		}
	}
	return nil
}

func (c *Consumer) coord() *coordinator {
	switch g := c.group.(type) {
	case *classicGroup:
		return g.co
	case *consumerGroup:
		return g.co
	}
	if c.plainCoord == nil {
		c.plainCoord = &coordinator{cl: c.cl, group: c.cfg.groupID, node: -1}
	}
	return c.plainCoord
}

// Committed returns the group's committed offsets for tps; partitions
// without one are absent.
func (c *Consumer) Committed(ctx context.Context, tps []TopicPartition) (map[TopicPartition]int64, error) {
	if c.cfg.groupID == "" {
		return nil, ErrNoGroup
	}
	want := make(map[TopicPartition]int64, len(tps))
	for _, tp := range tps {
		want[tp] = 0
	}
	if err := c.knowTopics(ctx, want); err != nil {
		return nil, err
	}
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Group = c.cfg.groupID
	req.RequireStable = true
	g := kmsg.NewOffsetFetchRequestGroup()
	g.Group = c.cfg.groupID
	if c.group != nil {
		if epoch, member := c.group.identity(); c.cfg.protocol == "consumer" && member != "" {
			g.MemberID, g.MemberEpoch = kmsg.StringPtr(member), epoch
		}
	}
	byTopic := map[string][]int32{}
	for _, tp := range tps {
		byTopic[tp.Topic] = append(byTopic[tp.Topic], tp.Partition)
	}
	for topic, parts := range byTopic {
		rt := kmsg.NewOffsetFetchRequestTopic()
		rt.Topic, rt.Partitions = topic, parts
		req.Topics = append(req.Topics, rt)
		gt := kmsg.NewOffsetFetchRequestGroupTopic()
		gt.Topic, gt.Partitions = topic, parts
		if t := c.cl.meta.Load().topics[topic]; t != nil {
			gt.TopicID = t.id
		}
		g.Topics = append(g.Topics, gt)
	}
	req.Groups = append(req.Groups, g)
	raw, err := c.coord().do(ctx, req, c.cfg.requestTimeout, func(r kmsg.Response) error {
		resp := r.(*kmsg.OffsetFetchResponse)
		code := resp.ErrorCode
		if len(resp.Groups) > 0 {
			code = resp.Groups[0].ErrorCode
		}
		err := kerr.ErrorForCode(code)
		// A partition whose transactional commit awaits its marker
		// answers UNSTABLE_OFFSET_COMMIT on its own, as Kafka does.
		for _, g := range resp.Groups {
			for _, t := range g.Topics {
				for _, p := range t.Partitions {
					if p.ErrorCode == kerr.UnstableOffsetCommit.Code {
						code = p.ErrorCode
					}
				}
			}
		}
		for _, t := range resp.Topics {
			for _, p := range t.Partitions {
				if p.ErrorCode == kerr.UnstableOffsetCommit.Code {
					code = p.ErrorCode
				}
			}
		}
		if code == kerr.UnstableOffsetCommit.Code {
			return kerr.CoordinatorLoadInProgress // retry after the pending transaction settles
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	resp := raw.(*kmsg.OffsetFetchResponse)
	out := map[TopicPartition]int64{}
	m := c.cl.meta.Load()
	add := func(topic string, p int32, off int64, code int16) error {
		if err := kerr.ErrorForCode(code); err != nil {
			return fmt.Errorf("client: committed offset of %s/%d: %w", topic, p, err)
		}
		if off >= 0 {
			out[TopicPartition{topic, p}] = off
		}
		return nil
	}
	var errs []error
	if len(resp.Groups) > 0 {
		for _, t := range resp.Groups[0].Topics {
			name := t.Topic
			if t.TopicID != ([16]byte{}) {
				name = m.byID[t.TopicID]
			}
			for _, p := range t.Partitions {
				errs = append(errs, add(name, p.Partition, p.Offset, p.ErrorCode))
			}
		}
	} else {
		for _, t := range resp.Topics {
			for _, p := range t.Partitions {
				errs = append(errs, add(t.Topic, p.Partition, p.Offset, p.ErrorCode))
			}
		}
	}
	return out, errors.Join(errs...)
}

// diffTPs returns a minus b.
func diffTPs(a, b map[TopicPartition]bool) []TopicPartition {
	var out []TopicPartition
	for tp := range a {
		if !b[tp] {
			out = append(out, tp)
		}
	}
	sortTPs(out)
	return out
}

func (c *Consumer) callListener(ctx context.Context, which string, tps []TopicPartition) {
	l := c.listener
	if l == nil {
		return
	}
	var fn func(context.Context, *Consumer, []TopicPartition)
	switch which {
	case "assigned":
		fn = l.OnAssigned
	case "revoked":
		fn = l.OnRevoked
	case "lost":
		fn = l.OnLost
	}
	if fn != nil {
		fn(ctx, c, tps)
	}
}
