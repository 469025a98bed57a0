package group

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Client identifies the connection a request came from.
type Client struct {
	// ID is the request header's client id.
	ID string
	// Host is the client's address as Kafka reports it in DescribeGroups,
	// e.g. "/127.0.0.1".
	Host string
	// Describable, when an authorizer is on, returns the topics of names
	// the client's principal may DESCRIBE. A consumer group heartbeat
	// that resolves the group's subscription regexes keeps only those
	// (regex.go); nil keeps every topic.
	Describable func(names []string) []string
}

const (
	stateNew int32 = iota
	stateLoading
	stateRunning
	stateClosed
)

// Coordinator is the group coordinator of one broker. Its methods are
// safe for concurrent use; each takes a decoded request (Version set) and
// returns the response for that version. They return an error only when
// ctx ends before an answer exists, in which case nothing should be sent.
//
// A request belongs to the coordinator once passed: it may be read after
// the call returns (a call abandoned through ctx still runs), so it must
// not be reused, and it must be decoded with ReadFrom rather than
// UnsafeReadFrom since the coordinator keeps some of its strings.
type Coordinator struct {
	cfg    Config
	shards []*shard
	stats  stats
	state  atomic.Int32

	closeOnce sync.Once
	wg        sync.WaitGroup
}

// New returns a Coordinator. Call Start before serving requests.
func New(cfg Config) (*Coordinator, error) {
	c, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	co := &Coordinator{cfg: c}
	for i := range c.Shards {
		co.shards = append(co.shards, newShard(i, &co.cfg, &co.stats))
	}
	return co, nil
}

// Start rebuilds the groups and offsets by replaying the Store, then starts
// serving. Requests that arrive before Start finishes are answered with
// COORDINATOR_LOAD_IN_PROGRESS (COORDINATOR_NOT_AVAILABLE before Start).
func (c *Coordinator) Start(ctx context.Context) error {
	if !c.state.CompareAndSwap(stateNew, stateLoading) {
		return errors.New("group: coordinator already started")
	}
	n := 0
	err := c.cfg.Store.Replay(ctx, func(r Record) error {
		if r.Control {
			// A transaction marker resolves what its producer left
			// pending in the partition's groups.
			if commit, ok := markerOutcome(r.Key); ok {
				for _, s := range c.shards {
					s.completeTxn(r.ProducerID, commit, s.inPartition(r.Partition))
				}
			}
			return nil
		}
		dr, err := decodeRecord(r.Key, r.Value)
		if err != nil {
			return err
		}
		s := c.shardFor(dr.group)
		if r.Transactional && dr.kind == recOffset && dr.offset != nil {
			s.addPending(s.replayGroup(dr.group), r.ProducerID, dr.topic, dr.partition, dr.offset)
		} else if err := s.replay(dr); err != nil {
			return fmt.Errorf("group %s: %w", dr.group, err)
		}
		n++
		return nil
	})
	if err != nil {
		c.state.Store(stateNew)
		return fmt.Errorf("group: replaying state: %w", err)
	}
	groups := 0
	for _, s := range c.shards {
		s.loaded()
		groups += len(s.groups)
	}
	for _, s := range c.shards {
		c.wg.Add(1)
		go func() {
			defer c.wg.Done()
			s.run()
		}()
	}
	c.state.Store(stateRunning)
	c.cfg.Logger.Info("group coordinator started", "records", n, "groups", groups, "shards", len(c.shards))
	return nil
}

// Close stops the coordinator: parked JoinGroup and SyncGroup calls are
// answered with NOT_COORDINATOR, timers stop, and later calls get
// NOT_COORDINATOR. It waits for the owner goroutines to exit.
func (c *Coordinator) Close() {
	c.closeOnce.Do(func() {
		c.state.Store(stateClosed)
		for _, s := range c.shards {
			close(s.stop)
		}
		c.wg.Wait()
	})
}

// Serves reports whether the coordinator loaded and serves the groups of
// a __consumer_offsets partition (Config.Partitions). A partition this
// node came to lead after the coordinator was made is not served: its
// groups are not loaded, and a request for one must not be answered as
// if the group did not exist. The broker answers such requests
// NOT_COORDINATOR until it has made a coordinator that loaded it.
func (c *Coordinator) Serves(partition int32) bool {
	return c.cfg.Partitions == nil || slices.Contains(c.cfg.Partitions, partition)
}

// Stats returns the cumulative event counters.
func (c *Coordinator) Stats() Stats { return c.stats.snapshot() }

// TopicsChanged tells the coordinator that topics were created, deleted or
// grew partitions; consumer-protocol groups subscribed to them are
// reassigned. It does not wait for that to happen.
func (c *Coordinator) TopicsChanged() {
	if c.state.Load() != stateRunning {
		return
	}
	for _, s := range c.shards {
		s.enqueue(context.Background(), func(s *shard) { s.topicsChanged() })
	}
}

func (c *Coordinator) shardFor(group string) *shard {
	h := fnv.New32a()
	h.Write([]byte(group))
	return c.shards[h.Sum32()%uint32(len(c.shards))]
}

// unavailable returns the code to answer with when the coordinator is not
// serving, or 0 when it is.
func (c *Coordinator) unavailable() int16 {
	switch c.state.Load() {
	case stateRunning:
		return 0
	case stateLoading:
		return kerr.CoordinatorLoadInProgress.Code
	case stateClosed:
		return kerr.NotCoordinator.Code
	}
	return kerr.CoordinatorNotAvailable.Code
}

// stoppedCode is the answer when a shard stopped while a call waited.
func stoppedCode(err error) (int16, error) {
	if errors.Is(err, errStopped) {
		return kerr.NotCoordinator.Code, nil
	}
	return 0, err
}

// JoinGroup handles JoinGroup (key 11). It blocks until the rebalance it
// joins completes, the member must retry, or ctx ends. The v8+ Reason is
// ignored (Kafka only logs it).
func (c *Coordinator) JoinGroup(ctx context.Context, client Client, req *kmsg.JoinGroupRequest) (*kmsg.JoinGroupResponse, error) {
	return oneGroup(c, ctx, req.Group,
		func() int16 {
			if st := msDur(req.SessionTimeoutMillis); st < c.cfg.MinSessionTimeout || st > c.cfg.MaxSessionTimeout {
				return kerr.InvalidSessionTimeout.Code
			}
			return 0
		},
		func(code int16) *kmsg.JoinGroupResponse { return joinError(req.Version, code, req.MemberID) },
		func(s *shard, reply func(*kmsg.JoinGroupResponse)) { s.joinGroup(req, client, reply) })
}

// SyncGroup handles SyncGroup (key 14). A member's call blocks until the
// leader's assignment is in, the rebalance restarts, or ctx ends.
func (c *Coordinator) SyncGroup(ctx context.Context, req *kmsg.SyncGroupRequest) (*kmsg.SyncGroupResponse, error) {
	return oneGroup(c, ctx, req.Group, nil,
		func(code int16) *kmsg.SyncGroupResponse { return syncError(req.Version, code) },
		func(s *shard, reply func(*kmsg.SyncGroupResponse)) { s.syncGroup(req, reply) })
}

// Heartbeat handles Heartbeat (key 12).
func (c *Coordinator) Heartbeat(ctx context.Context, req *kmsg.HeartbeatRequest) (*kmsg.HeartbeatResponse, error) {
	answer := func(code int16) *kmsg.HeartbeatResponse {
		r := kmsg.NewPtrHeartbeatResponse()
		r.Version = req.Version
		r.ErrorCode = code
		return r
	}
	if c.unavailable() == kerr.CoordinatorLoadInProgress.Code {
		// Kafka answers heartbeats blindly while it loads.
		return answer(0), nil
	}
	return oneGroup(c, ctx, req.Group, nil, answer,
		func(s *shard, reply func(*kmsg.HeartbeatResponse)) { reply(answer(s.heartbeat(req))) })
}

// LeaveGroup handles LeaveGroup (key 13), including v3+ batches. The v5+
// per-member Reason is ignored (Kafka only logs it).
func (c *Coordinator) LeaveGroup(ctx context.Context, req *kmsg.LeaveGroupRequest) (*kmsg.LeaveGroupResponse, error) {
	return oneGroup(c, ctx, req.Group, nil,
		func(code int16) *kmsg.LeaveGroupResponse {
			r := kmsg.NewPtrLeaveGroupResponse()
			r.Version = req.Version
			r.ErrorCode = code
			return r
		},
		func(s *shard, reply func(*kmsg.LeaveGroupResponse)) { reply(s.leaveGroup(req)) })
}

// OffsetCommit handles OffsetCommit (key 8), v10 naming topics by id. The
// v1-only per-partition Timestamp is ignored: Kafka 4 no longer accepts
// v1. Topics unknown to Topics fail with UNKNOWN_TOPIC_OR_PARTITION (v10:
// UNKNOWN_TOPIC_ID), as the broker's API layer does in Kafka.
func (c *Coordinator) OffsetCommit(ctx context.Context, req *kmsg.OffsetCommitRequest) (*kmsg.OffsetCommitResponse, error) {
	return oneGroup(c, ctx, req.Group, nil,
		func(code int16) *kmsg.OffsetCommitResponse {
			r := kmsg.NewPtrOffsetCommitResponse()
			r.Version = req.Version
			for _, t := range req.Topics {
				st := kmsg.NewOffsetCommitResponseTopic()
				st.Topic = t.Topic
				st.TopicID = t.TopicID
				for _, p := range t.Partitions {
					sp := kmsg.NewOffsetCommitResponseTopicPartition()
					sp.Partition = p.Partition
					sp.ErrorCode = code
					st.Partitions = append(st.Partitions, sp)
				}
				r.Topics = append(r.Topics, st)
			}
			return r
		},
		func(s *shard, reply func(*kmsg.OffsetCommitResponse)) { reply(s.offsetCommit(req)) })
}

// OffsetFetch handles OffsetFetch (key 9): one group before v8, a batch of
// groups from v8, topic ids from v10. With RequireStable (v7+) a
// partition with uncommitted transactional offsets is
// UNSTABLE_OFFSET_COMMIT.
func (c *Coordinator) OffsetFetch(ctx context.Context, req *kmsg.OffsetFetchRequest) (*kmsg.OffsetFetchResponse, error) {
	v := req.Version
	groups := req.Groups
	if v < 8 {
		rg := kmsg.NewOffsetFetchRequestGroup()
		rg.Group = req.Group
		if req.Topics != nil {
			rg.Topics = make([]kmsg.OffsetFetchRequestGroupTopic, 0, len(req.Topics))
			for _, t := range req.Topics {
				rt := kmsg.NewOffsetFetchRequestGroupTopic()
				rt.Topic = t.Topic
				rt.Partitions = t.Partitions
				rg.Topics = append(rg.Topics, rt)
			}
		}
		groups = []kmsg.OffsetFetchRequestGroup{rg}
	}
	ids := make([]string, len(groups))
	for i := range groups {
		ids[i] = groups[i].Group
	}
	out, err := perGroup(c, ctx, ids, rejectEmptyID,
		func(i int, code int16) kmsg.OffsetFetchResponseGroup {
			g := kmsg.NewOffsetFetchResponseGroup()
			g.Group, g.ErrorCode = ids[i], code
			return g
		},
		func(s *shard, i int) kmsg.OffsetFetchResponseGroup {
			return s.offsetFetch(v, v >= 7 && req.RequireStable, &groups[i])
		})
	if err != nil {
		return nil, err
	}
	resp := kmsg.NewPtrOffsetFetchResponse()
	resp.Version = v
	if v >= 8 {
		resp.Groups = out
		return resp, nil
	}
	g := out[0]
	resp.ErrorCode = g.ErrorCode
	for _, t := range g.Topics {
		st := kmsg.NewOffsetFetchResponseTopic()
		st.Topic = t.Topic
		for _, p := range t.Partitions {
			sp := kmsg.NewOffsetFetchResponseTopicPartition()
			sp.Partition = p.Partition
			sp.Offset = p.Offset
			sp.LeaderEpoch = p.LeaderEpoch
			sp.Metadata = p.Metadata
			sp.ErrorCode = p.ErrorCode
			if v < 2 && sp.ErrorCode == 0 {
				// Before v2 there is no top-level error code.
				sp.ErrorCode = g.ErrorCode
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp, nil
}

// OffsetDelete handles OffsetDelete (key 47).
func (c *Coordinator) OffsetDelete(ctx context.Context, req *kmsg.OffsetDeleteRequest) (*kmsg.OffsetDeleteResponse, error) {
	return oneGroup(c, ctx, req.Group, nil,
		func(code int16) *kmsg.OffsetDeleteResponse {
			r := kmsg.NewPtrOffsetDeleteResponse()
			r.Version = req.Version
			r.ErrorCode = code
			return r
		},
		func(s *shard, reply func(*kmsg.OffsetDeleteResponse)) { reply(s.offsetDelete(req)) })
}

// DescribeGroups handles DescribeGroups (key 15). Authorized operations
// (v3+) are left at their "not requested" default for the broker to fill.
func (c *Coordinator) DescribeGroups(ctx context.Context, req *kmsg.DescribeGroupsRequest) (*kmsg.DescribeGroupsResponse, error) {
	groups, err := perGroup(c, ctx, req.Groups, nil,
		func(i int, code int16) kmsg.DescribeGroupsResponseGroup {
			g := kmsg.NewDescribeGroupsResponseGroup()
			g.Group, g.ErrorCode = req.Groups[i], code
			return g
		},
		func(s *shard, i int) kmsg.DescribeGroupsResponseGroup {
			return s.describeGroup(req.Version, req.Groups[i])
		})
	if err != nil {
		return nil, err
	}
	resp := kmsg.NewPtrDescribeGroupsResponse()
	resp.Version = req.Version
	resp.Groups = groups
	return resp, nil
}

// ListGroups handles ListGroups (key 16) with the v4 states and v5 types
// filters. Groups are listed by id.
func (c *Coordinator) ListGroups(ctx context.Context, req *kmsg.ListGroupsRequest) (*kmsg.ListGroupsResponse, error) {
	resp := kmsg.NewPtrListGroupsResponse()
	resp.Version = req.Version
	if code := c.unavailable(); code != 0 {
		resp.ErrorCode = code
		return resp, nil
	}
	f := newListFilter(req)
	for _, s := range c.shards {
		gs, err := call(ctx, s, func(s *shard, reply func([]kmsg.ListGroupsResponseGroup)) {
			reply(s.listGroups(f))
		})
		if err != nil {
			code, err := stoppedCode(err)
			if err != nil {
				return nil, err
			}
			resp.ErrorCode = code
			resp.Groups = nil
			return resp, nil
		}
		resp.Groups = append(resp.Groups, gs...)
	}
	sort.Slice(resp.Groups, func(i, j int) bool { return resp.Groups[i].Group < resp.Groups[j].Group })
	return resp, nil
}

// DeleteGroups handles DeleteGroups (key 42): empty groups are deleted with
// their offsets; others get NON_EMPTY_GROUP.
func (c *Coordinator) DeleteGroups(ctx context.Context, req *kmsg.DeleteGroupsRequest) (*kmsg.DeleteGroupsResponse, error) {
	groups, err := perGroup(c, ctx, req.Groups, nil,
		func(i int, code int16) kmsg.DeleteGroupsResponseGroup {
			g := kmsg.NewDeleteGroupsResponseGroup()
			g.Group, g.ErrorCode = req.Groups[i], code
			return g
		},
		func(s *shard, i int) kmsg.DeleteGroupsResponseGroup { return s.deleteGroup(req.Version, req.Groups[i]) })
	if err != nil {
		return nil, err
	}
	resp := kmsg.NewPtrDeleteGroupsResponse()
	resp.Version = req.Version
	resp.Groups = groups
	return resp, nil
}

// ConsumerGroupHeartbeat handles ConsumerGroupHeartbeat (key 68, v0-v1).
// RackId is kept for ConsumerGroupDescribe but does not steer assignment.
func (c *Coordinator) ConsumerGroupHeartbeat(ctx context.Context, client Client, req *kmsg.ConsumerGroupHeartbeatRequest) (*kmsg.ConsumerGroupHeartbeatResponse, error) {
	if code := c.unavailable(); code != 0 {
		return heartbeatError(req.Version, code, ""), nil
	}
	if code, msg := validateConsumerHeartbeat(req); code != 0 {
		return heartbeatError(req.Version, code, msg), nil
	}
	return oneGroup(c, ctx, req.Group, nil,
		func(code int16) *kmsg.ConsumerGroupHeartbeatResponse { return heartbeatError(req.Version, code, "") },
		func(s *shard, reply func(*kmsg.ConsumerGroupHeartbeatResponse)) {
			reply(s.consumerHeartbeat(req, client))
		})
}

// oneGroup answers a request about one group on the shard that owns it.
// fail builds the answer for an error code: when the coordinator is not
// serving, the group id is empty, check (if set) rejects the request, or
// the shard stopped before answering.
func oneGroup[T any](c *Coordinator, ctx context.Context, group string, check func() int16,
	fail func(int16) T, run func(s *shard, reply func(T))) (T, error) {
	code := c.unavailable()
	if code == 0 {
		code = rejectEmptyID(group)
	}
	if code == 0 && check != nil {
		code = check()
	}
	if code != 0 {
		return fail(code), nil
	}
	resp, err := call(ctx, c.shardFor(group), run)
	if err != nil {
		code, err := stoppedCode(err)
		if err != nil {
			var zero T
			return zero, err
		}
		return fail(code), nil
	}
	return resp, nil
}

// ConsumerGroupDescribe handles ConsumerGroupDescribe (key 69). As with
// DescribeGroups, AuthorizedOperations is left for the broker to fill.
func (c *Coordinator) ConsumerGroupDescribe(ctx context.Context, req *kmsg.ConsumerGroupDescribeRequest) (*kmsg.ConsumerGroupDescribeResponse, error) {
	groups, err := perGroup(c, ctx, req.Groups, rejectEmptyID,
		func(i int, code int16) kmsg.ConsumerGroupDescribeResponseGroup {
			g := kmsg.NewConsumerGroupDescribeResponseGroup()
			g.Group, g.ErrorCode = req.Groups[i], code
			return g
		},
		func(s *shard, i int) kmsg.ConsumerGroupDescribeResponseGroup {
			return s.consumerGroupDescribe(req.Groups[i])
		})
	if err != nil {
		return nil, err
	}
	resp := kmsg.NewPtrConsumerGroupDescribeResponse()
	resp.Version = req.Version
	resp.Groups = groups
	return resp, nil
}

func rejectEmptyID(id string) int16 {
	if id == "" {
		return kerr.InvalidGroupID.Code
	}
	return 0
}

// perGroup answers a request about several groups, in request order: each
// id is answered by the shard that owns it, unless the coordinator is not
// serving or check (if set) rejects the id, in which case fail builds the
// answer.
func perGroup[T any](c *Coordinator, ctx context.Context, ids []string, check func(string) int16,
	fail func(i int, code int16) T, run func(s *shard, i int) T) ([]T, error) {
	out := make([]T, len(ids))
	var todo []int
	unavailable := c.unavailable()
	for i, id := range ids {
		code := unavailable
		if code == 0 && check != nil {
			code = check(id)
		}
		if code != 0 {
			out[i] = fail(i, code)
			continue
		}
		todo = append(todo, i)
	}
	err := c.fanout(ctx, todo, func(i int) string { return ids[i] }, func(s *shard, idx []int) {
		for _, i := range idx {
			out[i] = run(s, i)
		}
	}, func(idx []int, code int16) {
		for _, i := range idx {
			out[i] = fail(i, code)
		}
	})
	return out, err
}

// fanout runs each shard's share of the items (indexes into a request's
// groups) on that shard. failed is told about items of a shard that
// stopped.
func (c *Coordinator) fanout(ctx context.Context, items []int, groupOf func(int) string, run func(*shard, []int), failed func([]int, int16)) error {
	byShard := make(map[*shard][]int)
	var order []*shard
	for _, i := range items {
		s := c.shardFor(groupOf(i))
		if byShard[s] == nil {
			order = append(order, s)
		}
		byShard[s] = append(byShard[s], i)
	}
	for _, s := range order {
		idx := byShard[s]
		_, err := call(ctx, s, func(s *shard, reply func(struct{})) {
			run(s, idx)
			reply(struct{}{})
		})
		if err != nil {
			code, err := stoppedCode(err)
			if err != nil {
				return err
			}
			failed(idx, code)
		}
	}
	return nil
}
