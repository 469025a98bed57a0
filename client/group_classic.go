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

	"weir/client/internal/assign"
)

// classicGroup is membership in a classic consumer group: JoinGroup and
// SyncGroup run on the consumer's goroutine inside Poll; a heartbeat
// goroutine, started after the first join and stopped by leave, keeps the
// session alive and flags rebalances.
type classicGroup struct {
	c           *Consumer
	co          *coordinator
	cooperative bool

	mu         sync.Mutex // guards the fields below (the heartbeat reads them)
	topics     []string
	memberID   string
	generation int32
	protocol   string
	joined     bool
	rejoin     bool
	lost       bool
	fatal      error
	owned      map[TopicPartition]bool

	joining bool        // a join goroutine is running (guarded by mu)
	joinRes *joinResult // its outcome, waiting for Poll (guarded by mu)

	wakeCh chan struct{}
	ctx    context.Context // ends at leave: stops the heartbeat and a join
	cancel context.CancelFunc
	wg     sync.WaitGroup // the heartbeat and join goroutines
	hbOn   bool
}

// joinResult is what a join goroutine hands to Poll.
type joinResult struct {
	asg kmsg.ConsumerMemberAssignment
	err error
}

func newClassicGroup(c *Consumer, topics []string) *classicGroup {
	g := &classicGroup{
		c:          c,
		co:         &coordinator{cl: c.cl, group: c.cfg.groupID, node: -1},
		topics:     slices.Clone(topics),
		generation: -1,
		owned:      map[TopicPartition]bool{},
		wakeCh:     make(chan struct{}, 1),
	}
	g.ctx, g.cancel = context.WithCancel(c.cl.ctx)
	// The cooperative protocol is used only if every configured assignor
	// supports it, as in the Java client.
	g.cooperative = true
	for _, a := range c.cfg.assignors {
		g.cooperative = g.cooperative && a == "cooperative-sticky"
	}
	return g
}

func (g *classicGroup) wake() <-chan struct{} { return g.wakeCh }

func (g *classicGroup) signal() {
	select {
	case g.wakeCh <- struct{}{}:
	default:
	}
}

func (g *classicGroup) identity() (int32, string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.generation, g.memberID
}

func (g *classicGroup) subscribe(topics []string) {
	g.mu.Lock()
	g.topics = slices.Clone(topics)
	g.rejoin = true
	g.mu.Unlock()
	g.signal()
}

// poll runs on the consumer's goroutine. JoinGroup and SyncGroup run in a
// goroutine of their own, so a Poll with a short deadline does not cut a
// rebalance short; Poll starts the join, and a later Poll applies its result
// (running the callbacks).
func (g *classicGroup) poll(ctx context.Context) error {
	g.mu.Lock()
	fatal, lost, res := g.fatal, g.lost, g.joinRes
	g.joinRes = nil
	g.mu.Unlock()
	if fatal != nil {
		return fatal
	}
	if lost {
		g.loseAll(ctx)
	}
	if res != nil {
		if res.err != nil {
			if g.ctx.Err() == nil && !isRetriable(res.err) {
				return res.err
			}
			g.c.log.Debug("join failed, retrying", logGroup, g.co.group, logErr, res.err)
			g.mu.Lock()
			g.rejoin = true
			g.mu.Unlock()
		} else {
			g.apply(ctx, res.asg)
			g.startHeartbeat()
		}
	}
	g.mu.Lock()
	need := (!g.joined || g.rejoin) && !g.joining
	g.mu.Unlock()
	if !need {
		return nil
	}
	if !g.cooperative {
		// Eager protocols give everything up before rejoining.
		g.mu.Lock()
		owned := g.ownedList()
		g.mu.Unlock()
		g.revoke(ctx, owned)
	}
	g.mu.Lock()
	g.joining = true
	g.mu.Unlock()
	g.wg.Add(1)
	go func() {
		defer g.wg.Done()
		asg, err := g.join(g.ctx)
		g.mu.Lock()
		g.joining = false
		g.joinRes = &joinResult{asg: asg, err: err}
		g.mu.Unlock()
		g.signal()
	}()
	return nil
}

// loseAll gives up every partition without committing.
func (g *classicGroup) loseAll(ctx context.Context) {
	g.mu.Lock()
	owned := g.ownedList()
	g.owned = map[TopicPartition]bool{}
	g.lost = false
	g.mu.Unlock()
	if len(owned) > 0 {
		g.c.removePartitions(owned)
		g.c.callListener(ctx, "lost", owned)
	}
}

func (g *classicGroup) ownedList() []TopicPartition {
	out := make([]TopicPartition, 0, len(g.owned))
	for tp := range g.owned {
		out = append(out, tp)
	}
	sortTPs(out)
	return out
}

// revoke gives up tps after committing their progress (auto-commit).
func (g *classicGroup) revoke(ctx context.Context, tps []TopicPartition) {
	if len(tps) == 0 {
		return
	}
	if g.c.cfg.autoCommit {
		if err := g.c.CommitSync(ctx, g.c.positions(tps)); err != nil {
			g.c.log.Debug("commit before revoke failed", logGroup, g.co.group, logErr, err)
		}
	}
	g.c.callListener(ctx, "revoked", tps)
	g.c.removePartitions(tps)
	g.mu.Lock()
	for _, tp := range tps {
		delete(g.owned, tp)
	}
	g.mu.Unlock()
}

func (g *classicGroup) memberMetadata() []byte {
	g.mu.Lock()
	defer g.mu.Unlock()
	md := kmsg.NewConsumerMemberMetadata()
	md.Version = 3
	md.Topics = slices.Clone(g.topics)
	sort.Strings(md.Topics)
	md.Generation = g.generation
	if g.c.cfg.rack != "" {
		md.Rack = kmsg.StringPtr(g.c.cfg.rack)
	}
	byTopic := map[string][]int32{}
	for tp := range g.owned {
		byTopic[tp.Topic] = append(byTopic[tp.Topic], tp.Partition)
	}
	for t, ps := range byTopic {
		slices.Sort(ps)
		md.OwnedPartitions = append(md.OwnedPartitions, kmsg.ConsumerMemberMetadataOwnedPartition{Topic: t, Partitions: ps})
	}
	sort.Slice(md.OwnedPartitions, func(i, j int) bool { return md.OwnedPartitions[i].Topic < md.OwnedPartitions[j].Topic })
	return md.AppendTo(nil)
}

// join runs JoinGroup and SyncGroup until this member holds an assignment
// of the current generation.
func (g *classicGroup) join(ctx context.Context) (kmsg.ConsumerMemberAssignment, error) {
	var none kmsg.ConsumerMemberAssignment
	cfg := g.c.cfg
	for attempt := 1; ; attempt++ {
		g.mu.Lock()
		g.rejoin = false
		memberID := g.memberID
		g.mu.Unlock()
		req := kmsg.NewPtrJoinGroupRequest()
		req.Group = cfg.groupID
		req.SessionTimeoutMillis = int32(cfg.sessionTimeout / time.Millisecond)
		req.RebalanceTimeoutMillis = int32(cfg.maxPollInterval / time.Millisecond)
		req.MemberID = memberID
		if cfg.instanceID != "" {
			req.InstanceID = kmsg.StringPtr(cfg.instanceID)
		}
		req.ProtocolType = "consumer"
		meta := g.memberMetadata()
		for _, a := range cfg.assignors {
			req.Protocols = append(req.Protocols, kmsg.JoinGroupRequestProtocol{Name: a, Metadata: meta})
		}
		raw, err := g.co.do(ctx, req, cfg.maxPollInterval+cfg.requestTimeout, func(r kmsg.Response) error {
			return kerr.ErrorForCode(r.(*kmsg.JoinGroupResponse).ErrorCode)
		})
		if err != nil {
			switch {
			case errors.Is(err, kerr.MemberIDRequired):
				g.mu.Lock()
				g.memberID = raw.(*kmsg.JoinGroupResponse).MemberID
				g.mu.Unlock()
				continue
			case errors.Is(err, kerr.UnknownMemberID):
				g.mu.Lock()
				g.memberID, g.generation = "", -1
				g.mu.Unlock()
				continue
			case errors.Is(err, kerr.RebalanceInProgress) || errors.Is(err, kerr.IllegalGeneration):
				continue
			}
			return none, fmt.Errorf("client: join group %s: %w", cfg.groupID, err)
		}
		resp := raw.(*kmsg.JoinGroupResponse)
		g.mu.Lock()
		g.memberID, g.generation = resp.MemberID, resp.Generation
		if resp.Protocol != nil {
			g.protocol = *resp.Protocol
		}
		g.mu.Unlock()
		var plan []kmsg.SyncGroupRequestGroupAssignment
		if resp.LeaderID == resp.MemberID && !resp.SkipAssignment {
			if plan, err = g.lead(ctx, resp); err != nil {
				return none, err
			}
		}
		sreq := kmsg.NewPtrSyncGroupRequest()
		sreq.Group, sreq.Generation, sreq.MemberID = cfg.groupID, resp.Generation, resp.MemberID
		sreq.InstanceID = req.InstanceID
		sreq.ProtocolType, sreq.Protocol = kmsg.StringPtr("consumer"), resp.Protocol
		sreq.GroupAssignment = plan
		sraw, err := g.co.do(ctx, sreq, cfg.maxPollInterval+cfg.requestTimeout, func(r kmsg.Response) error {
			return kerr.ErrorForCode(r.(*kmsg.SyncGroupResponse).ErrorCode)
		})
		if err != nil {
			if errors.Is(err, kerr.RebalanceInProgress) || errors.Is(err, kerr.IllegalGeneration) || errors.Is(err, kerr.UnknownMemberID) {
				if errors.Is(err, kerr.UnknownMemberID) {
					g.mu.Lock()
					g.memberID, g.generation = "", -1
					g.mu.Unlock()
				}
				continue
			}
			return none, fmt.Errorf("client: sync group %s: %w", cfg.groupID, err)
		}
		var asg kmsg.ConsumerMemberAssignment
		if b := sraw.(*kmsg.SyncGroupResponse).MemberAssignment; len(b) > 0 {
			if err := asg.ReadFrom(b); err != nil {
				return none, fmt.Errorf("client: group %s: undecodable assignment: %w", cfg.groupID, err)
			}
		}
		return asg, nil
	}
}

// lead computes the group's plan with the chosen assignor.
func (g *classicGroup) lead(ctx context.Context, resp *kmsg.JoinGroupResponse) ([]kmsg.SyncGroupRequestGroupAssignment, error) {
	var members []assign.Member
	topics := map[string]bool{}
	for _, m := range resp.Members {
		var md kmsg.ConsumerMemberMetadata
		if err := md.ReadFrom(m.ProtocolMetadata); err != nil {
			return nil, fmt.Errorf("client: group %s: member %s sent undecodable metadata: %w", g.co.group, m.MemberID, err)
		}
		am := assign.Member{ID: m.MemberID, Topics: md.Topics, Generation: md.Generation, Owned: map[string][]int32{}}
		if m.InstanceID != nil {
			am.InstanceID = *m.InstanceID
		}
		for _, o := range md.OwnedPartitions {
			am.Owned[o.Topic] = o.Partitions
		}
		for _, t := range md.Topics {
			topics[t] = true
		}
		members = append(members, am)
	}
	counts := map[string]int32{}
	for t := range topics {
		g.c.cl.addInterest(t)
		tctx, cancel := context.WithTimeout(ctx, g.c.cfg.requestTimeout)
		tm, err := g.c.cl.waitTopic(tctx, t)
		cancel()
		if err != nil {
			g.c.log.Debug("leader: topic without metadata left out", logTopic, t, logErr, err)
			continue
		}
		counts[t] = int32(len(tm.partitions))
	}
	var plan assign.Plan
	switch *resp.Protocol {
	case "range":
		plan = assign.Range(members, counts)
	case "roundrobin":
		plan = assign.RoundRobin(members, counts)
	case "cooperative-sticky":
		plan = assign.CooperativeSticky(members, counts)
	default:
		return nil, fmt.Errorf("client: group %s chose assignor %q, which this client lacks", g.co.group, *resp.Protocol)
	}
	var out []kmsg.SyncGroupRequestGroupAssignment
	for _, m := range members {
		a := kmsg.NewConsumerMemberAssignment()
		a.Version = 3
		var names []string
		for t := range plan[m.ID] {
			names = append(names, t)
		}
		sort.Strings(names)
		for _, t := range names {
			a.Topics = append(a.Topics, kmsg.ConsumerMemberAssignmentTopic{Topic: t, Partitions: plan[m.ID][t]})
		}
		out = append(out, kmsg.SyncGroupRequestGroupAssignment{MemberID: m.ID, MemberAssignment: a.AppendTo(nil)})
	}
	return out, nil
}

// apply installs a new assignment, running the callbacks. Under the
// cooperative protocol partitions given up are revoked now and the member
// rejoins at once so the next round can hand them to their new owner.
func (g *classicGroup) apply(ctx context.Context, asg kmsg.ConsumerMemberAssignment) {
	next := map[TopicPartition]bool{}
	for _, t := range asg.Topics {
		for _, p := range t.Partitions {
			next[TopicPartition{t.Topic, p}] = true
		}
	}
	g.mu.Lock()
	cur := maps.Clone(g.owned)
	g.mu.Unlock()
	revoked := diffTPs(cur, next)
	added := diffTPs(next, cur)
	if len(revoked) > 0 {
		g.revoke(ctx, revoked)
		g.mu.Lock()
		g.rejoin = true
		g.mu.Unlock()
	}
	g.mu.Lock()
	g.owned = next
	g.joined = true
	gen := g.generation
	g.mu.Unlock()
	g.c.addPartitions(added)
	g.c.log.Info("group assignment", logGroup, g.co.group, logGeneration, gen, "assigned", len(next), "added", len(added), "revoked", len(revoked))
	g.c.callListener(ctx, "assigned", added)
}

func (g *classicGroup) startHeartbeat() {
	if g.hbOn {
		return
	}
	g.hbOn = true
	g.wg.Add(1)
	go g.heartbeatLoop()
}

func (g *classicGroup) heartbeatLoop() {
	defer g.wg.Done()
	hbCtx := g.ctx
	t := time.NewTicker(g.c.cfg.heartbeat)
	defer t.Stop()
	for {
		select {
		case <-hbCtx.Done():
			return
		case <-t.C:
		}
		g.mu.Lock()
		gen, member, joined := g.generation, g.memberID, g.joined && !g.rejoin && !g.joining
		g.mu.Unlock()
		if !joined {
			continue
		}
		if g.c.pollOverdue() {
			g.c.log.Warn("max.poll.interval.ms passed without a poll: leaving the group", logGroup, g.co.group, logMember, member)
			ctx, cancel := context.WithTimeout(hbCtx, g.c.cfg.requestTimeout)
			g.sendLeave(ctx, member)
			cancel()
			g.mu.Lock()
			g.memberID, g.generation, g.rejoin, g.lost = "", -1, true, true
			g.mu.Unlock()
			g.signal()
			continue
		}
		req := kmsg.NewPtrHeartbeatRequest()
		req.Group, req.Generation, req.MemberID = g.co.group, gen, member
		if g.c.cfg.instanceID != "" {
			req.InstanceID = kmsg.StringPtr(g.c.cfg.instanceID)
		}
		ctx, cancel := context.WithTimeout(hbCtx, g.c.cfg.sessionTimeout)
		_, err := g.co.do(ctx, req, g.c.cfg.requestTimeout, func(r kmsg.Response) error {
			return kerr.ErrorForCode(r.(*kmsg.HeartbeatResponse).ErrorCode)
		})
		cancel()
		switch {
		case err == nil:
		case errors.Is(err, kerr.RebalanceInProgress):
			g.mu.Lock()
			g.rejoin = true
			g.mu.Unlock()
			g.signal()
		case errors.Is(err, kerr.IllegalGeneration) || errors.Is(err, kerr.UnknownMemberID) || errors.Is(err, kerr.FencedInstanceID):
			g.mu.Lock()
			if errors.Is(err, kerr.FencedInstanceID) {
				g.fatal = fmt.Errorf("client: group %s: %w", g.co.group, err)
			}
			if errors.Is(err, kerr.UnknownMemberID) {
				g.memberID = ""
			}
			g.generation, g.rejoin, g.lost = -1, true, true
			g.mu.Unlock()
			g.signal()
		default:
			g.c.log.Debug("heartbeat failed", logGroup, g.co.group, logErr, err)
		}
	}
}

// leave stops heartbeating and leaves the group (static members stay, as in
// Java, so a restart within the session timeout keeps the assignment).
func (g *classicGroup) leave(ctx context.Context) error {
	g.cancel()
	g.wg.Wait()
	g.mu.Lock()
	member, joined := g.memberID, g.joined
	owned := g.ownedList()
	g.mu.Unlock()
	if len(owned) > 0 {
		g.c.callListener(ctx, "revoked", owned)
	}
	if !joined || member == "" || g.c.cfg.instanceID != "" {
		return nil
	}
	return g.sendLeave(ctx, member)
}

func (g *classicGroup) sendLeave(ctx context.Context, member string) error {
	req := kmsg.NewPtrLeaveGroupRequest()
	req.Group, req.MemberID = g.co.group, member
	req.Members = []kmsg.LeaveGroupRequestMember{{MemberID: member, Reason: kmsg.StringPtr("the consumer is leaving")}}
	if g.c.cfg.instanceID != "" {
		req.Members[0].InstanceID = kmsg.StringPtr(g.c.cfg.instanceID)
	}
	_, err := g.co.do(ctx, req, g.c.cfg.requestTimeout, func(r kmsg.Response) error {
		return kerr.ErrorForCode(r.(*kmsg.LeaveGroupResponse).ErrorCode)
	})
	if err != nil && (errors.Is(err, kerr.UnknownMemberID) || errors.Is(err, kerr.IllegalGeneration)) {
		return nil
	}
	return err
}
