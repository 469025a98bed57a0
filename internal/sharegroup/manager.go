package sharegroup

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/errcode"
	wlog "weir/internal/log"
	"weir/internal/replica"
	"weir/internal/share"
	"weir/internal/sharestate"
)

// Host is what the share-group service needs of the node it runs on.
type Host interface {
	Now() time.Time
	// TopicName is the name of a topic, false when it is unknown.
	TopicName(id [16]byte) (string, bool)
	// Topics is a snapshot of the topics share groups may use (not the
	// internal ones), for assignment and the offsets admin APIs.
	Topics() share.TopicLookup
	// Partition is a data partition this node leads, or the error a
	// request for it gets: UNKNOWN_TOPIC_ID for an unknown topic,
	// UNKNOWN_TOPIC_OR_PARTITION, NOT_LEADER_OR_FOLLOWER.
	Partition(topicID [16]byte, partition int32) (Partition, error)
	// LedElsewhere reports whether a topic has partitions led by another
	// node.
	LedElsewhere(topicID [16]byte) bool
	// ElsewhereWait is weir.share.fetch.elsewhere.wait.ms; negative turns
	// the early answer off.
	ElsewhereWait() time.Duration
	// Coordinates reports whether this node coordinates a group (leads
	// its __consumer_offsets partition).
	Coordinates(group string) bool
	// OtherGroupExists reports whether the group coordinator has a
	// classic or consumer group of this id: group ids are one namespace.
	OtherGroupExists(ctx context.Context, group string) bool
	// WriteGroupRecord records a share group's existence (or deletion)
	// in its __consumer_offsets partition, as Kafka keeps share groups
	// there, and returns once it is committed.
	WriteGroupRecord(ctx context.Context, group string, exists bool) error
	// GroupRecords calls fn, in log order, for every share group record
	// of the __consumer_offsets partitions this node leads.
	GroupRecords(ctx context.Context, fn func(group string, exists bool)) error
}

// RemoteHighWatermark is what a Host may also offer: the high watermark
// of a data partition another node leads (ListOffsets to its leader). With
// it DescribeShareGroupOffsets reports the lag of every partition; without
// it, only of those led here (-1 elsewhere, which tools show as "-").
type RemoteHighWatermark interface {
	HighWatermark(ctx context.Context, topicID [16]byte, partition int32) (int64, error)
}

// Partition is a data partition this node leads.
type Partition interface {
	// Log holds the partition's batches.
	Log() *wlog.Log
	// HighWatermark bounds what may be acquired.
	HighWatermark() int64
	// LeaderEpoch is the epoch this node leads the partition in; share
	// state read in one epoch is read again in the next.
	LeaderEpoch() int32
	// Park wakes w when the partition grows or its leadership changes,
	// until the returned function is called.
	Park(w *replica.Waiter) (unpark func())
}

// StateStore is where share partitions keep their state
// (sharestate.Service).
type StateStore interface {
	// Ensure creates __share_group_state unless it exists; it waits for
	// the controller, so no lock may be held.
	Ensure() error
	Write(rkey, value []byte, full bool, f sharestate.Fence) *sharestate.Ticket
	Read(ctx context.Context, rkey []byte, leaderEpoch int32) ([]share.StateRecord, error)
	Keys(ctx context.Context, group string) []share.StateKey
}

// Manager serves share groups on one node: Kafka's SharePartitionManager
// (share sessions, the share partitions this node leads with their
// acquisitions and acknowledgements, parked ShareFetch requests) and the
// share-group side of its group coordinator (membership and assignment,
// group configs, the offsets admin APIs). internal/share holds the state
// machines; the state goes to a StateStore.
//
// Concurrency. mu guards the registry (groups, configs, share
// partitions) and each share.Group, and is held only for in-memory work.
// Each share partition has its own mutex, taken after mu when both are
// needed, held only for in-memory work too: loading a partition's state
// from its coordinator happens with no lock held (partition.go). smu
// guards the share sessions and is never held with the others. The
// timers' queue is a leaf taken under any of these. The Host's methods
// are called with no share lock held, except Partition and TopicName,
// which take only the node's topic registry lock (read). Goroutines: the
// timers', owned by the Manager; Close stops it after the node's request
// goroutines are gone.
type Manager struct {
	host   Host
	state  StateStore
	cfg    Config
	logger *slog.Logger
	timers *timers
	closed sync.Once // Close runs once

	ctx    context.Context // ends at Close: bounds loads of state
	cancel context.CancelFunc

	mu      sync.Mutex
	groups  map[string]*shareGroup
	configs map[string]map[string]string // group config overrides, with or without a group
	parts   map[share.StateKey]*sharePartition

	smu        sync.Mutex
	sessions   map[sessionKey]*session
	sessionGen uint64

	waits waitStats
	// trims keeps batches read to be trimmed (trim.go).
	trims trimReads

	wg sync.WaitGroup
}

// shareGroup is one share group: its membership state machine, its
// settings and the share partitions it has used.
type shareGroup struct {
	id       string
	g        *share.Group
	settings groupSettings
	parts    map[share.StateKey]*sharePartition
	armed    time.Time // session expiry queued on the timers
	// topics are the topics the group's members subscribed to since this
	// node coordinates it: where DescribeShareGroupOffsets looks for the
	// share partitions with state, which live on every partition's
	// leader and share coordinator, not here.
	topics map[[16]byte]bool
}

// New returns a manager with its timers running; Start loads the groups
// this node coordinates.
func New(cfg Config, host Host, state StateStore, logger *slog.Logger) *Manager {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	m := &Manager{
		host:     host,
		state:    state,
		cfg:      cfg.withDefaults(),
		logger:   logger,
		timers:   newTimers(host.Now),
		groups:   map[string]*shareGroup{},
		configs:  map[string]map[string]string{},
		parts:    map[share.StateKey]*sharePartition{},
		sessions: map[sessionKey]*session{},
	}
	m.ctx, m.cancel = context.WithCancel(context.Background())
	m.wg.Add(1)
	go func() { defer m.wg.Done(); m.timers.run() }()
	return m
}

// Config is the configuration the manager runs with, defaults filled in.
func (m *Manager) Config() Config { return m.cfg }

// LoadGroups makes known the share groups recorded in the
// __consumer_offsets partitions this node leads: the groups it
// coordinates. Their members rejoin (UNKNOWN_MEMBER_ID). The node calls
// it at start and whenever the partitions it leads change.
func (m *Manager) LoadGroups(ctx context.Context) error {
	ids := map[string]bool{}
	if err := m.host.GroupRecords(ctx, func(id string, exists bool) { ids[id] = exists }); err != nil {
		return fmt.Errorf("sharegroup: share groups: %w", err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for id, exists := range ids {
		if _, ok := m.groups[id]; exists && !ok {
			m.groupLocked(id)
			n++
		}
	}
	if n > 0 {
		m.logger.Info("share groups loaded", "groups", n)
	}
	return nil
}

// Close writes the acknowledgements partitions still gather, stops the
// timers and ends the share sessions; a second call does nothing. The
// node calls it after its request goroutines are gone, before it closes
// the state store.
func (m *Manager) Close() { m.closed.Do(m.close) }

func (m *Manager) close() {
	m.flushAll()
	m.timers.close()
	m.cancel()
	m.wg.Wait()
	m.smu.Lock()
	for _, s := range m.sessions {
		if s.stop != nil {
			s.stop()
		}
	}
	m.smu.Unlock()
}

// groupLocked returns the group, creating it (empty) if needed. mu held.
func (m *Manager) groupLocked(id string) *shareGroup {
	if g, ok := m.groups[id]; ok {
		return g
	}
	st := m.cfg.settingsFor(m.configs[id])
	g := &shareGroup{id: id, g: share.NewGroup(id, st.group), settings: st, parts: map[share.StateKey]*sharePartition{}}
	m.groups[id] = g
	return g
}

// partLocked returns a share partition of g, creating it (not yet
// initialised) if needed. mu held.
func (m *Manager) partLocked(g *shareGroup, k share.StateKey) *sharePartition {
	if sp, ok := g.parts[k]; ok {
		return sp
	}
	rkey, err := sharestate.RecordKey(k)
	if err != nil {
		panic(fmt.Sprintf("sharegroup: share state key: %v", err)) // group ids are bounded by the protocol
	}
	sp := &sharePartition{m: m, key: k, rkey: rkey, cfg: g.settings.part}
	g.parts[k] = sp
	m.parts[k] = sp
	return sp
}

// partFor returns the share partition of an existing group and the
// group's settings.
func (m *Manager) partFor(group string, topicID [16]byte, partition int32) (*sharePartition, groupSettings, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	g, ok := m.groups[group]
	if !ok {
		return nil, groupSettings{}, false
	}
	return m.partLocked(g, share.StateKey{Group: group, TopicID: topicID, Partition: partition}), g.settings, true
}

// ensureGroup makes the group known here (empty, no members): the share
// partitions this node leads serve a group another node coordinates.
func (m *Manager) ensureGroup(group string) groupSettings {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.groupLocked(group).settings
}

// settings returns a group's settings (the broker defaults and its
// config overrides) and whether the group exists.
func (m *Manager) settings(group string) (groupSettings, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if g, ok := m.groups[group]; ok {
		return g.settings, true
	}
	return m.cfg.settingsFor(m.configs[group]), false
}

// releaseMember hands back what member holds in parts and closes its
// share session.
func (m *Manager) releaseMember(group, member string, parts []*sharePartition) {
	now := m.host.Now()
	for _, sp := range parts {
		sp.releaseMember(member, now)
	}
	m.dropSession(sessionKey{group, member})
}

// armGroupLocked queues the group's next session expiry. mu held.
func (m *Manager) armGroupLocked(g *shareGroup) {
	at, ok := g.g.NextDeadline()
	if !ok || (!g.armed.IsZero() && !at.Before(g.armed)) {
		return
	}
	g.armed = at
	id := g.id
	m.timers.arm(at, func(now time.Time) { m.expireGroup(id, now) })
}

// expireGroup fences members whose session timed out.
func (m *Manager) expireGroup(id string, now time.Time) {
	m.mu.Lock()
	g, ok := m.groups[id]
	if !ok {
		m.mu.Unlock()
		return
	}
	g.armed = time.Time{}
	fenced := g.g.Expire(now)
	parts := slices.Collect(maps.Values(g.parts))
	m.armGroupLocked(g)
	m.mu.Unlock()
	for _, member := range fenced {
		m.logger.Info("share group member fenced", "group", id, "member", member)
		m.releaseMember(id, member, parts)
	}
}

// Heartbeat answers ShareGroupHeartbeat: a member's join (epoch 0),
// heartbeat or leave (epoch -1). The group is created on its first join
// unless a classic or consumer group holds the id (GROUP_ID_NOT_FOUND, as
// Kafka does), its existence is recorded, and a leaving member's records
// are released in every share partition of the group.
func (m *Manager) Heartbeat(ctx context.Context, req *kmsg.ShareGroupHeartbeatRequest, client share.ClientInfo) *kmsg.ShareGroupHeartbeatResponse {
	fail := func(err error) *kmsg.ShareGroupHeartbeatResponse {
		resp := kmsg.NewPtrShareGroupHeartbeatResponse()
		resp.Version = req.Version
		resp.ErrorCode, resp.ErrorMessage = errcode.Of(err), errcode.Message(err)
		return resp
	}
	if err := share.ValidateHeartbeat(req); err != nil {
		return fail(err)
	}
	m.mu.Lock()
	_, exists := m.groups[req.GroupID]
	m.mu.Unlock()
	if !exists {
		if req.MemberEpoch != 0 {
			return fail(fmt.Errorf("%w: Share group %s not found.", kerr.GroupIDNotFound, req.GroupID))
		}
		if m.host.OtherGroupExists(ctx, req.GroupID) {
			return fail(fmt.Errorf("%w: Group %s is not a share group.", kerr.GroupIDNotFound, req.GroupID))
		}
		if err := m.state.Ensure(); err != nil {
			return fail(fmt.Errorf("%w: %v", kerr.CoordinatorNotAvailable, err))
		}
	}
	lookup := m.host.Topics()
	now := m.host.Now()

	m.mu.Lock()
	g, existed := m.groups[req.GroupID]
	if !existed {
		st := m.cfg.settingsFor(m.configs[req.GroupID])
		g = &shareGroup{id: req.GroupID, g: share.NewGroup(req.GroupID, st.group), settings: st, parts: map[share.StateKey]*sharePartition{}}
	}
	resp := g.g.Heartbeat(req, client, lookup, now)
	if resp.ErrorCode == 0 {
		for _, name := range req.SubscribedTopicNames {
			if info, ok := lookup(name); ok {
				if g.topics == nil {
					g.topics = map[[16]byte]bool{}
				}
				g.topics[info.ID] = true
			}
		}
	}
	created := !existed && resp.ErrorCode == 0
	if created {
		m.groups[g.id] = g
		m.logger.Info("share group created", "group", g.id)
	}
	var parts []*sharePartition
	left := req.MemberEpoch == -1 && resp.ErrorCode == 0
	if left {
		parts = slices.Collect(maps.Values(g.parts))
	}
	if existed || resp.ErrorCode == 0 {
		m.armGroupLocked(g)
	}
	m.mu.Unlock()

	if left {
		m.releaseMember(g.id, req.MemberID, parts)
	}
	if created {
		if err := m.host.WriteGroupRecord(ctx, g.id, true); err != nil {
			return fail(fmt.Errorf("%w: %v", kerr.CoordinatorNotAvailable, err))
		}
	}
	return resp
}

// Describe answers one group of ShareGroupDescribe: an unknown id is
// GROUP_ID_NOT_FOUND, an empty one INVALID_GROUP_ID.
func (m *Manager) Describe(id string) kmsg.ShareGroupDescribeResponseGroup {
	m.mu.Lock()
	g, ok := m.groups[id]
	var d kmsg.ShareGroupDescribeResponseGroup
	if ok {
		d = g.g.Describe()
	}
	m.mu.Unlock()
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

// GroupState is a share group's state name and whether it exists.
func (m *Manager) GroupState(id string) (string, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	g, ok := m.groups[id]
	if !ok {
		return "", false
	}
	if g.g.Empty() {
		return "Empty", true
	}
	return "Stable", true
}

// ListGroups lists the share groups as ListGroups reports them.
func (m *Manager) ListGroups() []kmsg.ListGroupsResponseGroup {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]kmsg.ListGroupsResponseGroup, 0, len(m.groups))
	for _, id := range slices.Sorted(maps.Keys(m.groups)) {
		lg := kmsg.NewListGroupsResponseGroup()
		lg.Group, lg.ProtocolType, lg.GroupType = id, "share", "share"
		lg.GroupState = "Stable"
		if m.groups[id].g.Empty() {
			lg.GroupState = "Empty"
		}
		out = append(out, lg)
	}
	return out
}

// DeleteGroup deletes an empty share group with its share partitions'
// state (DeleteGroups). Its configs stay, as they are a resource of their
// own.
func (m *Manager) DeleteGroup(ctx context.Context, id string) error {
	m.mu.Lock()
	g, ok := m.groups[id]
	if !ok {
		m.mu.Unlock()
		return fmt.Errorf("%w: Group %s not found.", kerr.GroupIDNotFound, id)
	}
	if !g.g.Empty() {
		m.mu.Unlock()
		return fmt.Errorf("%w: The group is not empty.", kerr.NonEmptyGroup)
	}
	var last *sharestate.Ticket
	for k, sp := range g.parts {
		last = m.dropPartLocked(k, sp)
	}
	delete(m.groups, id)
	m.mu.Unlock()
	m.logger.Info("share group deleted", "group", id)
	if err := last.Wait(ctx); err != nil {
		return err
	}
	return m.host.WriteGroupRecord(ctx, id, false)
}

// dropPartLocked forgets a share partition and tombstones its state. mu
// held.
func (m *Manager) dropPartLocked(k share.StateKey, sp *sharePartition) *sharestate.Ticket {
	sp.mu.Lock()
	sp.failBatchLocked(errBatchDropped)
	sp.p, sp.broken = nil, false
	sp.deleted = true
	sp.gen++
	for _, w := range sp.waiters {
		w.Wake()
	}
	t := m.state.Write(sp.rkey, nil, true, sharestate.Fence{})
	sp.mu.Unlock()
	delete(m.parts, k)
	if g, ok := m.groups[k.Group]; ok {
		delete(g.parts, k)
	}
	return t
}
