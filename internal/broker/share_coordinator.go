package broker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

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
	// when the first share group or group config is, as in Kafka.
	store   atomic.Pointer[shareStore]
	storeMu sync.Mutex // serialises the store's creation

	logsMu    sync.Mutex // guards stateLogs; a leaf
	stateLogs []*partition
	timers    *shareTimers

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
	c.wg.Add(1)
	go func() { defer c.wg.Done(); c.timers.run() }()
	return c
}

// start restores every share group and share partition from this
// node's share-state logs, if they exist, and starts the store's writer.
func (c *shareCoordinator) start(ctx context.Context) error {
	b := c.b
	parts, ok, err := c.openStateLogs(false)
	if err != nil {
		return err
	}
	b.mu.RLock()
	known := make(map[[16]byte]bool, len(b.topicsByID))
	for id := range b.topicsByID {
		known[id] = true
	}
	b.mu.RUnlock()
	if !ok {
		return nil
	}
	s := c.newStore(parts)
	rep, err := s.replay(ctx)
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.configs = rep.configs
	for id := range rep.groups {
		c.groupLocked(id)
	}
	restored := 0
	for k, recs := range rep.states {
		if !known[k.TopicID] {
			continue // the topic is gone; refresh tombstones the key
		}
		g := c.groupLocked(k.Group)
		p, err := share.Restore(g.settings.part, recs)
		if err != nil {
			c.logger.Warn("share partition state not restored", "group", k.Group, "partition", k.Partition, "err", err)
			continue
		}
		sp := c.partLocked(g, k)
		sp.p = p
		restored++
	}
	if len(c.groups) > 0 {
		c.logger.Info("share groups restored", "groups", len(c.groups), "partitions", restored)
	}
	c.runStore(s)
	return nil
}

func (c *shareCoordinator) newStore(parts []*partition) *shareStore {
	s := newShareStore(c.logger, parts, c.cfg.StateLogRecords)
	s.refresh = c.refresh
	return s
}

// runStore publishes the store and starts its writer.
func (c *shareCoordinator) runStore(s *shareStore) {
	c.store.Store(s)
	c.wg.Add(1)
	go func() { defer c.wg.Done(); s.run() }()
}

// ensureStore creates __share_group_state and its writer if they do not
// exist yet. It takes Broker.mu, so no share lock may be held.
func (c *shareCoordinator) ensureStore() error {
	if c.store.Load() != nil {
		return nil
	}
	c.storeMu.Lock()
	defer c.storeMu.Unlock()
	if c.store.Load() != nil {
		return nil
	}
	parts, _, err := c.openStateLogs(true)
	if err != nil {
		return err
	}
	c.runStore(c.newStore(parts))
	return nil
}

// openStateLogs opens this node's share-state logs
// (DataDir/__share_group_state-N): the state of the share partitions
// this node leads. They are local to the node, not a replicated topic.
// Without create, it opens them only if they exist (ok reports that).
func (c *shareCoordinator) openStateLogs(create bool) ([]*partition, bool, error) {
	c.logsMu.Lock()
	defer c.logsMu.Unlock()
	if c.stateLogs != nil {
		return c.stateLogs, true, nil
	}
	b := c.b
	if !create {
		if _, err := os.Stat(partitionDir(b.cfg.DataDir, shareStateTopic, 0)); err != nil {
			return nil, false, nil
		}
	}
	cfg, err := b.topicLogConfig(map[string]string{"cleanup.policy": "compact"})
	if err != nil {
		return nil, false, err
	}
	t := &topic{name: shareStateTopic, internal: true}
	var parts []*partition
	for i := range c.cfg.StatePartitions {
		p, err := b.openPartition(t, i, cfg, false)
		if err != nil {
			for _, q := range parts {
				q.log.Close()
			}
			return nil, false, fmt.Errorf("%w: %v", kerr.KafkaStorageError, err)
		}
		p.leads.Store(true)
		parts = append(parts, p)
	}
	c.stateLogs = parts
	return parts, true, nil
}

// closeLogs closes the share-state logs.
func (c *shareCoordinator) closeLogs() error {
	c.logsMu.Lock()
	defer c.logsMu.Unlock()
	var errs []error
	for _, p := range c.stateLogs {
		if err := p.log.Close(); err != nil && !errors.Is(err, wlog.ErrClosed) {
			errs = append(errs, err)
		}
	}
	c.stateLogs = nil
	return errors.Join(errs...)
}

// errNoShareStore is a write attempted before the store exists, which the
// entry points prevent with ensureStore.
var errNoShareStore = errors.New("broker: __share_group_state does not exist")

// enqueue queues a record on the store; see shareStore.enqueue.
func (c *shareCoordinator) enqueue(key, value []byte, full bool) *storeTicket {
	s := c.store.Load()
	if s == nil {
		t := &storeTicket{done: make(chan struct{}), err: errNoShareStore}
		close(t.done)
		return t
	}
	return s.enqueue(key, value, full)
}

// close stops the timers, then the writer once its queue is written. The
// broker calls it after its request goroutines are gone.
func (c *shareCoordinator) close() {
	c.timers.close()
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
	var ticket *storeTicket
	if !existed && resp.ErrorCode == 0 {
		c.groups[g.id] = g
		ticket = c.enqueue(groupRecordKey(shareKeyGroup, g.id), []byte{0}, true)
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
	if err := ticket.wait(ctx); err != nil {
		return fail(fmt.Errorf("%w: %v", kerr.CoordinatorNotAvailable, err))
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
	last = lastTicket(last, c.enqueue(groupRecordKey(shareKeyGroup, id), nil, true))
	c.mu.Unlock()
	c.logger.Info("share group deleted", "group", id)
	return waitTickets(ctx, last)
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
	t := c.enqueue(sp.rkey, nil, true)
	sp.mu.Unlock()
	delete(c.parts, k)
	if g, ok := c.groups[k.Group]; ok {
		delete(g.parts, k)
	}
	return t
}

// refresh is the store's call for keys whose full record is old: it
// writes them again (a snapshot, the group or config record), or a
// tombstone when nothing needs them any more.
func (c *shareCoordinator) refresh(keys [][]byte) {
	for _, key := range keys {
		switch key[0] {
		case shareKeyState:
			k, err := share.DecodeStateKey(key[1:])
			if err != nil {
				continue
			}
			c.mu.Lock()
			sp, ok := c.parts[k]
			if ok && sp.logPartition() == nil {
				c.dropPartLocked(k, sp)
				ok = false
			}
			c.mu.Unlock()
			if !ok {
				c.enqueue(key, nil, true)
				continue
			}
			sp.mu.Lock()
			if sp.p != nil && !sp.broken {
				sp.writeSnapshotLocked()
			}
			sp.mu.Unlock()
		case shareKeyGroup:
			id := string(key[1:])
			c.mu.Lock()
			if _, ok := c.groups[id]; ok {
				c.enqueue(key, []byte{0}, true)
			} else {
				c.enqueue(key, nil, true)
			}
			c.mu.Unlock()
		case shareKeyConfig:
			id := string(key[1:])
			c.mu.Lock()
			if m, ok := c.configs[id]; ok {
				c.enqueue(key, encodeGroupConfigs(m), true)
			} else {
				c.enqueue(key, nil, true)
			}
			c.mu.Unlock()
		}
	}
}

// restoreFromLog rebuilds one share partition from its records in the
// store, after a failed write left its memory ahead of the log. No records
// gives a nil partition, initialised again on next use.
func (c *shareCoordinator) restoreFromLog(k share.StateKey, rkey []byte, cfg share.Config) (*share.Partition, error) {
	rep := replayed{states: map[share.StateKey][]share.StateRecord{}}
	s := c.store.Load()
	if s == nil {
		return nil, errNoShareStore
	}
	p := s.parts[s.partFor(rkey)]
	err := eachLogRecord(context.Background(), p, func(r *wlog.Record) error {
		if bytes.Equal(r.Key, rkey) {
			_, _ = rep.apply(r.Key, r.Value)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	recs, ok := rep.states[k]
	if !ok {
		return nil, nil
	}
	return share.Restore(cfg, recs)
}

// groupConfigs returns a group's config overrides.
func (c *shareCoordinator) groupConfigs(group string) map[string]string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.configs[group])
}

// alterGroupConfigs stores a group's new overrides and applies them to
// the group and its share partitions at once (group configs are dynamic).
func (c *shareCoordinator) alterGroupConfigs(ctx context.Context, group string, change func(map[string]string) (map[string]string, error), validateOnly bool) error {
	if !validateOnly {
		if err := c.ensureStore(); err != nil {
			return fmt.Errorf("%w: %v", kerr.KafkaStorageError, err)
		}
	}
	c.mu.Lock()
	next, err := change(c.configs[group])
	if err != nil || validateOnly {
		c.mu.Unlock()
		return err
	}
	var t *storeTicket
	if len(next) == 0 {
		delete(c.configs, group)
		t = c.enqueue(groupRecordKey(shareKeyConfig, group), nil, true)
	} else {
		c.configs[group] = next
		t = c.enqueue(groupRecordKey(shareKeyConfig, group), encodeGroupConfigs(next), true)
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
	c.mu.Unlock()
	c.logger.Info("share group config changed", "group", group, "overrides", len(next))
	return waitTickets(ctx, t)
}
