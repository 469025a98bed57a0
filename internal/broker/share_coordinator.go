package broker

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/group"
	wlog "weir/internal/log"
	"weir/internal/share"
)

// shareCoordinator serves share groups (KIP-932): membership and
// assignment, share sessions, the share partitions with their durable
// state in __share_group_state, and group configs. internal/share holds
// the state machines; this is the wiring: locks, timers, the store, the
// log reads.
//
// Concurrency. mu guards the registry (groups, configs, share
// partitions) and each share.Group, and is held only for in-memory work.
// Each sharePart has its own mutex, taken after mu when both are needed.
// smu guards the share sessions and is never held with the others. The
// store's queue and the timers' queue are leaf locks taken under any of
// these. Broker.mu may be read-locked under a share lock (topic lookups),
// never the other way round (docs/LOCKS.md). Two goroutines belong to the
// coordinator, the store's writer and the timers; close stops both after
// the broker's request goroutines are gone.
type shareCoordinator struct {
	b      *Broker
	cfg    ShareConfig
	logger *slog.Logger

	// store is nil until __share_group_state exists: the topic is made
	// when the first share group is, as in Kafka.
	store   atomic.Pointer[shareStore]
	storeMu sync.Mutex // serialises the store's creation
	// sender carries state records to coordinators on other nodes.
	sender *stateSender
	timers *shareTimers

	mu      sync.Mutex
	groups  map[string]*shareGroup
	configs map[string]map[string]string // group config overrides, with or without a group
	parts   map[share.StateKey]*sharePart

	smu        sync.Mutex
	sessions   map[shareSessionKey]*shareSession
	sessionGen uint64

	waits shareWaitStats
	// trims keeps batches read to be trimmed (share_trim.go).
	trims trimReads

	wg sync.WaitGroup
}

// shareGroup is one share group: its membership state machine, its
// settings and the share partitions it has used.
type shareGroup struct {
	id       string
	g        *share.Group
	settings groupSettings
	parts    map[share.StateKey]*sharePart
	armed    time.Time // session expiry queued on the timers
}

// newShareCoordinator returns a coordinator with its timers running;
// start loads the state.
func newShareCoordinator(b *Broker, cfg ShareConfig) *shareCoordinator {
	c := &shareCoordinator{
		b:        b,
		cfg:      cfg.withDefaults(),
		logger:   b.logger.With("component", "share"),
		timers:   newShareTimers(b.now),
		groups:   map[string]*shareGroup{},
		configs:  map[string]map[string]string{},
		parts:    map[share.StateKey]*sharePart{},
		sessions: map[shareSessionKey]*shareSession{},
	}
	c.sender = newStateSender(c)
	c.wg.Add(1)
	go func() { defer c.wg.Done(); c.timers.run() }()
	return c
}

// start loads the share groups this node coordinates and starts the
// store's writer if __share_group_state exists.
func (c *shareCoordinator) start(ctx context.Context) error {
	if c.b.lookupTopic(shareStateTopic) != nil {
		if err := c.ensureStore(); err != nil {
			return err
		}
	}
	return c.loadGroups(ctx)
}

// runStore publishes the store and starts its writer.
func (c *shareCoordinator) runStore(s *shareStore) {
	c.store.Store(s)
	c.wg.Add(1)
	go func() { defer c.wg.Done(); s.run() }()
}

// ensureStore creates __share_group_state through the controller unless
// it exists, and the store's writer. It takes Broker.mu and waits for the
// metadata, so no share lock may be held.
func (c *shareCoordinator) ensureStore() error {
	if c.store.Load() != nil {
		return nil
	}
	c.storeMu.Lock()
	defer c.storeMu.Unlock()
	if c.store.Load() != nil {
		return nil
	}
	b := c.b
	if b.lookupTopic(shareStateTopic) == nil {
		ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
		defer cancel()
		if err := b.ensureInternalTopic(ctx, shareStateTopic, c.statePartitions()); err != nil {
			return err
		}
		if err := b.waitRegistry(ctx, func() bool { return b.lookupTopic(shareStateTopic) != nil }); err != nil {
			return fmt.Errorf("broker: %s did not appear: %w", shareStateTopic, err)
		}
	}
	t := b.lookupTopic(shareStateTopic)
	b.mu.RLock()
	n := len(t.partitions)
	b.mu.RUnlock()
	if n == 0 {
		return fmt.Errorf("%w: %s has no partitions", kerr.CoordinatorNotAvailable, shareStateTopic)
	}
	c.runStore(newShareStore(b, c.logger, n, c.cfg.StateLogRecords))
	return nil
}

// statePartitions is the partition count __share_group_state is created
// with: the configured one, else 1 on a single node and Kafka's 50 in a
// cluster.
func (c *shareCoordinator) statePartitions() int32 {
	switch {
	case c.cfg.StatePartitions > 0:
		return c.cfg.StatePartitions
	case c.b.cfg.Cluster.single(c.b.cfg.NodeID):
		return 1
	}
	return 50
}

// writeGroupRecord records a share group's existence (or its deletion)
// in the group's __consumer_offsets partition, which this node leads as
// the group's coordinator, as Kafka keeps share groups there.
func (c *shareCoordinator) writeGroupRecord(ctx context.Context, id string, exists bool) error {
	s := &offsetsStore{b: c.b}
	return s.Append(ctx, id, []group.Record{group.ShareGroupRecord(id, exists)})
}

// loadGroups makes known the share groups recorded in the
// __consumer_offsets partitions this node leads: the groups it
// coordinates. Their members rejoin (UNKNOWN_MEMBER_ID).
func (c *shareCoordinator) loadGroups(ctx context.Context) error {
	s := &offsetsStore{b: c.b}
	ids := map[string]bool{}
	for _, p := range s.partitions() {
		if !p.isLeader() {
			continue
		}
		err := eachLogRecord(ctx, p, func(r *wlog.Record) error {
			if id, exists, ok := group.ShareGroupOf(r.Key, r.Value); ok {
				ids[id] = exists
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("broker: share groups in %s-%d: %w", offsetsTopic, p.index, err)
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for id, exists := range ids {
		if _, ok := c.groups[id]; exists && !ok {
			c.groupLocked(id)
			n++
		}
	}
	if n > 0 {
		c.logger.Info("share groups loaded", "groups", n)
	}
	return nil
}

// errNoShareStore is a write attempted before the store exists, which the
// entry points prevent with ensureStore.
var errNoShareStore = fmt.Errorf("%w: %s does not exist yet", kerr.CoordinatorNotAvailable, shareStateTopic)

// close stops the timers, the senders, then the writer once its queue is
// written. The broker calls it after its request goroutines are gone.
func (c *shareCoordinator) close() {
	c.timers.close()
	c.sender.close()
	if s := c.store.Load(); s != nil {
		s.close()
	}
	c.wg.Wait()
	c.smu.Lock()
	for _, s := range c.sessions {
		if s.stop != nil {
			s.stop()
		}
	}
	c.smu.Unlock()
}

// groupLocked returns the group, creating it (empty) if needed. mu held.
func (c *shareCoordinator) groupLocked(id string) *shareGroup {
	if g, ok := c.groups[id]; ok {
		return g
	}
	st := c.cfg.settingsFor(c.configs[id])
	g := &shareGroup{id: id, g: share.NewGroup(id, st.group), settings: st, parts: map[share.StateKey]*sharePart{}}
	c.groups[id] = g
	return g
}

// partLocked returns a share partition of g, creating it (not yet
// initialised) if needed. mu held.
func (c *shareCoordinator) partLocked(g *shareGroup, k share.StateKey) *sharePart {
	if sp, ok := g.parts[k]; ok {
		return sp
	}
	rkey, err := stateRecordKey(k)
	if err != nil {
		panic(fmt.Sprintf("broker: share state key: %v", err)) // group ids are bounded by the protocol
	}
	sp := &sharePart{c: c, key: k, rkey: rkey, cfg: g.settings.part}
	g.parts[k] = sp
	c.parts[k] = sp
	return sp
}

// partFor returns the share partition of an existing group and the
// group's settings.
func (c *shareCoordinator) partFor(group string, topicID [16]byte, partition int32) (*sharePart, groupSettings, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	g, ok := c.groups[group]
	if !ok {
		return nil, groupSettings{}, false
	}
	return c.partLocked(g, share.StateKey{Group: group, TopicID: topicID, Partition: partition}), g.settings, true
}

// ensureGroup makes the group known here (empty, no members): the share
// partitions this node leads serve a group another node coordinates.
func (c *shareCoordinator) ensureGroup(group string) groupSettings {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.groupLocked(group).settings
}

// settings returns a group's settings (the broker defaults and its
// config overrides) and whether the group exists.
func (c *shareCoordinator) settings(group string) (groupSettings, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if g, ok := c.groups[group]; ok {
		return g.settings, true
	}
	return c.cfg.settingsFor(c.configs[group]), false
}

// releaseMember hands back what member holds in parts and closes its
// share session.
func (c *shareCoordinator) releaseMember(group, member string, parts []*sharePart) {
	now := c.b.now()
	for _, sp := range parts {
		sp.releaseMember(member, now)
	}
	c.dropSession(shareSessionKey{group, member})
}

// armGroupLocked queues the group's next session expiry. mu held.
func (c *shareCoordinator) armGroupLocked(g *shareGroup) {
	at, ok := g.g.NextDeadline()
	if !ok || (!g.armed.IsZero() && !at.Before(g.armed)) {
		return
	}
	g.armed = at
	id := g.id
	c.timers.arm(at, func(now time.Time) { c.expireGroup(id, now) })
}

// expireGroup fences members whose session timed out.
func (c *shareCoordinator) expireGroup(id string, now time.Time) {
	c.mu.Lock()
	g, ok := c.groups[id]
	if !ok {
		c.mu.Unlock()
		return
	}
	g.armed = time.Time{}
	fenced := g.g.Expire(now)
	parts := slices.Collect(maps.Values(g.parts))
	c.armGroupLocked(g)
	c.mu.Unlock()
	for _, m := range fenced {
		c.logger.Info("share group member fenced", "group", id, "member", m)
		c.releaseMember(id, m, parts)
	}
}

// topicLookup snapshots the broker's topics for assignment, so that
// Broker.mu is not taken under the coordinator's lock.
func (c *shareCoordinator) topicLookup() share.TopicLookup {
	b := c.b
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

// otherGroupExists reports whether the group coordinator has a classic or
// consumer group of this id: group ids are one namespace.
func (c *shareCoordinator) otherGroupExists(ctx context.Context, id string) bool {
	req := kmsg.NewPtrListGroupsRequest()
	req.Version = 5
	resp, err := c.b.coord().ListGroups(ctx, req)
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

// heartbeat handles ShareGroupHeartbeat.
func (c *shareCoordinator) heartbeat(ctx context.Context, req *kmsg.ShareGroupHeartbeatRequest, client share.ClientInfo) *kmsg.ShareGroupHeartbeatResponse {
	fail := func(err error) *kmsg.ShareGroupHeartbeatResponse {
		resp := kmsg.NewPtrShareGroupHeartbeatResponse()
		resp.Version = req.Version
		resp.ErrorCode, resp.ErrorMessage = errCode(err), errMessage(err)
		return resp
	}
	if err := share.ValidateHeartbeat(req); err != nil {
		return fail(err)
	}
	c.mu.Lock()
	_, exists := c.groups[req.GroupID]
	c.mu.Unlock()
	if !exists {
		if req.MemberEpoch != 0 {
			return fail(fmt.Errorf("%w: Share group %s not found.", kerr.GroupIDNotFound, req.GroupID))
		}
		if c.otherGroupExists(ctx, req.GroupID) {
			return fail(fmt.Errorf("%w: Group %s is not a share group.", kerr.GroupIDNotFound, req.GroupID))
		}
		if err := c.ensureStore(); err != nil {
			return fail(fmt.Errorf("%w: %v", kerr.CoordinatorNotAvailable, err))
		}
	}
	lookup := c.topicLookup()
	now := c.b.now()

	c.mu.Lock()
	g, existed := c.groups[req.GroupID]
	if !existed {
		st := c.cfg.settingsFor(c.configs[req.GroupID])
		g = &shareGroup{id: req.GroupID, g: share.NewGroup(req.GroupID, st.group), settings: st, parts: map[share.StateKey]*sharePart{}}
	}
	resp := g.g.Heartbeat(req, client, lookup, now)
	created := !existed && resp.ErrorCode == 0
	if created {
		c.groups[g.id] = g
		c.logger.Info("share group created", "group", g.id)
	}
	var parts []*sharePart
	left := req.MemberEpoch == -1 && resp.ErrorCode == 0
	if left {
		parts = slices.Collect(maps.Values(g.parts))
	}
	if existed || resp.ErrorCode == 0 {
		c.armGroupLocked(g)
	}
	c.mu.Unlock()

	if left {
		c.releaseMember(g.id, req.MemberID, parts)
	}
	if created {
		if err := c.writeGroupRecord(ctx, g.id, true); err != nil {
			return fail(fmt.Errorf("%w: %v", kerr.CoordinatorNotAvailable, err))
		}
	}
	return resp
}

// describe handles one group of ShareGroupDescribe.
func (c *shareCoordinator) describe(id string) kmsg.ShareGroupDescribeResponseGroup {
	c.mu.Lock()
	g, ok := c.groups[id]
	var d kmsg.ShareGroupDescribeResponseGroup
	if ok {
		d = g.g.Describe()
	}
	c.mu.Unlock()
	if ok {
		return d
	}
	d = kmsg.NewShareGroupDescribeResponseGroup()
	d.GroupID = id
	switch {
	case id == "":
		d.ErrorCode = kerr.InvalidGroupID.Code
	default:
		d.ErrorCode = kerr.GroupIDNotFound.Code
		d.ErrorMessage = kmsg.StringPtr(fmt.Sprintf("Group %s not found.", id))
	}
	return d
}

// groupState is a share group's state name and whether it exists.
func (c *shareCoordinator) groupState(id string) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	g, ok := c.groups[id]
	if !ok {
		return "", false
	}
	if g.g.Empty() {
		return "Empty", true
	}
	return "Stable", true
}

// listGroups lists the share groups as ListGroups reports them.
func (c *shareCoordinator) listGroups() []kmsg.ListGroupsResponseGroup {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]kmsg.ListGroupsResponseGroup, 0, len(c.groups))
	for _, id := range slices.Sorted(maps.Keys(c.groups)) {
		lg := kmsg.NewListGroupsResponseGroup()
		lg.Group, lg.ProtocolType, lg.GroupType = id, "share", "share"
		lg.GroupState = "Stable"
		if c.groups[id].g.Empty() {
			lg.GroupState = "Empty"
		}
		out = append(out, lg)
	}
	return out
}

// deleteGroup deletes an empty share group with its share partitions'
// state (DeleteGroups). Its configs stay, as they are a resource of their
// own.
func (c *shareCoordinator) deleteGroup(ctx context.Context, id string) error {
	c.mu.Lock()
	g, ok := c.groups[id]
	if !ok {
		c.mu.Unlock()
		return fmt.Errorf("%w: Group %s not found.", kerr.GroupIDNotFound, id)
	}
	if !g.g.Empty() {
		c.mu.Unlock()
		return fmt.Errorf("%w: The group is not empty.", kerr.NonEmptyGroup)
	}
	var last *storeTicket
	for k, sp := range g.parts {
		last = c.dropPartLocked(k, sp)
	}
	delete(c.groups, id)
	c.mu.Unlock()
	c.logger.Info("share group deleted", "group", id)
	if err := waitTickets(ctx, last); err != nil {
		return err
	}
	return c.writeGroupRecord(ctx, id, false)
}

// dropPartLocked forgets a share partition and tombstones its state. mu
// held.
func (c *shareCoordinator) dropPartLocked(k share.StateKey, sp *sharePart) *storeTicket {
	sp.mu.Lock()
	sp.p, sp.broken = nil, false
	sp.deleted = true
	for _, w := range sp.waiters {
		w.wake()
	}
	t := c.stateWrite(sp.rkey, nil, true, stateFence{})
	sp.mu.Unlock()
	delete(c.parts, k)
	if g, ok := c.groups[k.Group]; ok {
		delete(g.parts, k)
	}
	return t
}

// groupConfigs returns a group's config overrides.
func (c *shareCoordinator) groupConfigs(group string) map[string]string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.configs[group])
}

// setGroupConfigs applies a group's overrides from the metadata image to
// the group and its share partitions at once (group configs are dynamic).
func (c *shareCoordinator) setGroupConfigs(group string, next map[string]string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(next) == 0 {
		delete(c.configs, group)
	} else {
		c.configs[group] = maps.Clone(next)
	}
	if g, ok := c.groups[group]; ok {
		g.settings = c.cfg.settingsFor(next)
		g.g.SetConfig(g.settings.group)
		for _, sp := range g.parts {
			sp.mu.Lock()
			sp.cfg = g.settings.part
			if sp.p != nil {
				sp.p.SetConfig(sp.cfg)
			}
			sp.mu.Unlock()
		}
	}
	c.logger.Info("share group config changed", "group", group, "overrides", len(next))
}
