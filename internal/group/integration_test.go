package group

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Integration tests: many clients, each on its own goroutine, drive one
// coordinator on the system clock with short timeouts, the way a broker's
// connections would, but without sockets.

func newRealtimeCoordinator(t *testing.T, topics *MemTopics) *Coordinator {
	t.Helper()
	c, err := New(Config{
		Logger:                  testLogger(t),
		Store:                   NewMemStore(),
		Topics:                  topics,
		Shards:                  2,
		NoInitialRebalanceDelay: true,
		MinSessionTimeout:       50 * time.Millisecond,
		ConsumerSessionTimeout:  time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// classicClient is a small eager-rebalance consumer: join, (lead,) sync,
// heartbeat and commit until told to stop, then leave.
type classicClient struct {
	c      *Coordinator
	group  string
	topic  string
	parts  int32
	id     string
	client Client
}

func (cl *classicClient) run(ctx context.Context, t *testing.T) {
	defer func() {
		if cl.id == "" {
			return
		}
		r := kmsg.NewPtrLeaveGroupRequest()
		r.Version = 5
		r.Group = cl.group
		r.Members = []kmsg.LeaveGroupRequestMember{{MemberID: cl.id}}
		cl.c.LeaveGroup(context.Background(), r)
	}()
	for ctx.Err() == nil {
		gen, ok := cl.join(ctx)
		if !ok {
			continue
		}
		assigned, ok := cl.sync(ctx, gen)
		if !ok {
			continue
		}
		cl.heartbeatLoop(ctx, gen, assigned, t)
	}
}

func (cl *classicClient) join(ctx context.Context) (*kmsg.JoinGroupResponse, bool) {
	req := joinReq(cl.group, cl.id, cl.topic)
	req.SessionTimeoutMillis = 1000
	req.RebalanceTimeoutMillis = 2000
	resp, err := cl.c.JoinGroup(ctx, cl.client, req)
	if err != nil {
		return nil, false
	}
	switch resp.ErrorCode {
	case 0:
		return resp, true
	case kerr.MemberIDRequired.Code:
		cl.id = resp.MemberID
	case kerr.UnknownMemberID.Code:
		cl.id = ""
	}
	return nil, false
}

// sync sends the leader's range assignment (or nothing) and returns this
// member's partitions.
func (cl *classicClient) sync(ctx context.Context, j *kmsg.JoinGroupResponse) ([]int32, bool) {
	plan := map[string][]byte{}
	if j.LeaderID == cl.id {
		var ids []string
		for _, m := range j.Members {
			ids = append(ids, m.MemberID)
		}
		sort.Strings(ids)
		per, extra := cl.parts/int32(len(ids)), cl.parts%int32(len(ids))
		next := int32(0)
		for i, id := range ids {
			n := per
			if int32(i) < extra {
				n++
			}
			a := kmsg.ConsumerMemberAssignment{Topics: []kmsg.ConsumerMemberAssignmentTopic{{Topic: cl.topic}}}
			for p := next; p < next+n; p++ {
				a.Topics[0].Partitions = append(a.Topics[0].Partitions, p)
			}
			next += n
			plan[id] = a.AppendTo(nil)
		}
	}
	resp, err := cl.c.SyncGroup(ctx, syncReq(cl.group, cl.id, j.Generation, plan))
	if err != nil || resp.ErrorCode != 0 {
		if err == nil && resp.ErrorCode != kerr.RebalanceInProgress.Code {
			cl.id = ""
		}
		return nil, false
	}
	var a kmsg.ConsumerMemberAssignment
	if err := a.ReadFrom(resp.MemberAssignment); err != nil {
		return nil, false
	}
	var ps []int32
	for _, t := range a.Topics {
		ps = append(ps, t.Partitions...)
	}
	return ps, true
}

func (cl *classicClient) heartbeatLoop(ctx context.Context, j *kmsg.JoinGroupResponse, assigned []int32, t *testing.T) {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		offsets := map[int32]int64{}
		for _, p := range assigned {
			offsets[p] = int64(j.Generation)
		}
		if len(offsets) > 0 {
			resp, err := cl.c.OffsetCommit(ctx, commitReq(cl.group, cl.id, j.Generation, cl.topic, offsets))
			if err == nil {
				for _, code := range commitCodes(resp) {
					if code != 0 && code != kerr.RebalanceInProgress.Code && code != kerr.IllegalGeneration.Code && code != kerr.UnknownMemberID.Code {
						t.Errorf("commit: %s", codeName(code))
					}
				}
			}
		}
		hb := kmsg.NewPtrHeartbeatRequest()
		hb.Version = 4
		hb.Group, hb.MemberID, hb.Generation = cl.group, cl.id, j.Generation
		resp, err := cl.c.Heartbeat(ctx, hb)
		if err != nil {
			return
		}
		switch resp.ErrorCode {
		case 0:
		case kerr.RebalanceInProgress.Code:
			return
		default:
			cl.id = ""
			return
		}
	}
}

// stableClassicAssignment reports whether the group is Stable with the
// given number of members whose assignments split all partitions.
func stableClassicAssignment(c *Coordinator, group string, members int, parts int32) bool {
	r := kmsg.NewPtrDescribeGroupsRequest()
	r.Version = 5
	r.Groups = []string{group}
	resp, err := c.DescribeGroups(context.Background(), r)
	if err != nil || resp.Groups[0].State != "Stable" || len(resp.Groups[0].Members) != members {
		return false
	}
	seen := map[int32]bool{}
	for _, m := range resp.Groups[0].Members {
		var a kmsg.ConsumerMemberAssignment
		if a.ReadFrom(m.MemberAssignment) != nil {
			return false
		}
		for _, t := range a.Topics {
			for _, p := range t.Partitions {
				if seen[p] {
					return false
				}
				seen[p] = true
			}
		}
	}
	return int32(len(seen)) == parts
}

func TestIntegrationClassicClients(t *testing.T) {
	topics := NewMemTopics(TopicInfo{Name: "t", ID: tid(1), Partitions: 12})
	c := newRealtimeCoordinator(t, topics)
	const n = 6
	ctxs := make([]context.CancelFunc, n)
	var wg sync.WaitGroup
	for i := range n {
		ctx, cancel := context.WithCancel(context.Background())
		ctxs[i] = cancel
		cl := &classicClient{c: c, group: "workers", topic: "t", parts: 12, client: Client{ID: fmt.Sprintf("client-%d", i), Host: "/10.0.0.1"}}
		wg.Add(1)
		go func() {
			defer wg.Done()
			cl.run(ctx, t)
		}()
	}
	defer func() {
		for _, cancel := range ctxs {
			cancel()
		}
		wg.Wait()
	}()
	eventually(t, 10*time.Second, func() bool { return stableClassicAssignment(c, "workers", n, 12) })

	// Half the clients stop and leave; the rest take over.
	for _, cancel := range ctxs[:n/2] {
		cancel()
	}
	eventually(t, 10*time.Second, func() bool { return stableClassicAssignment(c, "workers", n-n/2, 12) })
	fr := kmsg.NewPtrOffsetFetchRequest()
	fr.Version = 8
	rg := kmsg.NewOffsetFetchRequestGroup()
	rg.Group = "workers"
	fr.Groups = []kmsg.OffsetFetchRequestGroup{rg}
	// The remaining members commit every partition.
	eventually(t, 10*time.Second, func() bool {
		resp, err := c.OffsetFetch(context.Background(), fr)
		return err == nil && len(resp.Groups[0].Topics) == 1 && len(resp.Groups[0].Topics[0].Partitions) == 12
	})
}

// ownership is the clients' shared view of who consumes what; it fails the
// test if a client takes a partition another client still has.
type ownership struct {
	mu    sync.Mutex
	owner map[int32]string
	t     *testing.T
}

func (o *ownership) update(member string, prev, next []int32) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, p := range prev {
		if o.owner[p] == member {
			delete(o.owner, p)
		}
	}
	for _, p := range next {
		if other, ok := o.owner[p]; ok && other != member {
			o.t.Errorf("partition %d given to %s while %s still consumes it", p, member, other)
		}
		o.owner[p] = member
	}
}

func (o *ownership) count() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.owner)
}

// consumerClient heartbeats a KIP-848 group like the Java consumer: it
// stops consuming revoked partitions before its next heartbeat.
func consumerClient(ctx context.Context, t *testing.T, c *Coordinator, id string, own *ownership) {
	var owned []int32
	epoch := int32(0)
	defer func() {
		own.update(id, owned, nil)
		r := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		r.Version = 1
		r.Group, r.MemberID, r.MemberEpoch = "streamers", id, -1
		c.ConsumerGroupHeartbeat(context.Background(), Client{ID: id}, r)
	}()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		r := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		r.Version = 1
		r.Group, r.MemberID, r.MemberEpoch = "streamers", id, epoch
		r.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{{TopicID: tid(1), Partitions: owned}}
		if epoch == 0 {
			r.RebalanceTimeoutMillis = 5000
			r.SubscribedTopicNames = []string{"t"}
			r.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
		}
		resp, err := c.ConsumerGroupHeartbeat(ctx, Client{ID: id}, r)
		if err != nil {
			return
		}
		switch resp.ErrorCode {
		case 0:
			epoch = resp.MemberEpoch
			if resp.Assignment != nil {
				var next []int32
				for _, at := range resp.Assignment.Topics {
					next = append(next, at.Partitions...)
				}
				own.update(id, owned, next)
				owned = next
			}
		case kerr.FencedMemberEpoch.Code, kerr.UnknownMemberID.Code:
			own.update(id, owned, nil)
			owned, epoch = nil, 0
		default:
			t.Errorf("%s: heartbeat error %s", id, codeName(resp.ErrorCode))
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

func TestIntegrationConsumerProtocolClients(t *testing.T) {
	topics := NewMemTopics(TopicInfo{Name: "t", ID: tid(1), Partitions: 16})
	c := newRealtimeCoordinator(t, topics)
	own := &ownership{owner: map[int32]string{}, t: t}
	const n = 8
	cancels := make([]context.CancelFunc, n)
	var wg sync.WaitGroup
	start := func(i int) {
		ctx, cancel := context.WithCancel(context.Background())
		cancels[i] = cancel
		wg.Add(1)
		go func() {
			defer wg.Done()
			consumerClient(ctx, t, c, fmt.Sprintf("member-%d", i), own)
		}()
	}
	defer func() {
		for _, cancel := range cancels {
			if cancel != nil {
				cancel()
			}
		}
		wg.Wait()
	}()
	describe := func() kmsg.ConsumerGroupDescribeResponseGroup {
		r := kmsg.NewPtrConsumerGroupDescribeRequest()
		r.Groups = []string{"streamers"}
		resp, err := c.ConsumerGroupDescribe(context.Background(), r)
		if err != nil {
			t.Fatal(err)
		}
		return resp.Groups[0]
	}
	stable := func(members, partitions int) func() bool {
		return func() bool {
			d := describe()
			return d.State == "Stable" && len(d.Members) == members && own.count() == partitions
		}
	}
	// Members arrive one after another while the others consume.
	for i := range n {
		start(i)
		eventually(t, 10*time.Second, func() bool { return len(describe().Members) == i+1 })
	}
	eventually(t, 10*time.Second, stable(n, 16))
	// Three leave at once; the group rebalances without double ownership.
	for _, cancel := range cancels[:3] {
		cancel()
	}
	eventually(t, 10*time.Second, stable(n-3, 16))
	// The topic grows; the new partitions are handed out.
	topics.Set(TopicInfo{Name: "t", ID: tid(1), Partitions: 20})
	c.TopicsChanged()
	eventually(t, 10*time.Second, stable(n-3, 20))
}
