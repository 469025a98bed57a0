package streamsgroup

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Client identifies the connection a heartbeat came from.
type Client struct {
	ID   string // the request header's client id
	Host string // as Kafka reports it, e.g. "/127.0.0.1"
}

// Config holds the group.streams.* settings; zero fields take Kafka's
// defaults.
type Config struct {
	// HeartbeatInterval is group.streams.heartbeat.interval.ms (5s).
	HeartbeatInterval time.Duration
	// SessionTimeout is group.streams.session.timeout.ms (45s); the
	// caller runs the session timers, the value is only reported here.
	SessionTimeout time.Duration
	// NumStandbyReplicas is group.streams.num.standby.replicas (0).
	NumStandbyReplicas int
	// MaxSize is group.streams.max.size (unbounded when 0).
	MaxSize int
	// AcceptableRecoveryLag and TaskOffsetInterval are Streams' settings
	// the coordinator hands its members (10000 records, 60s).
	AcceptableRecoveryLag int32
	TaskOffsetInterval    time.Duration
}

// WithDefaults returns c with Kafka's defaults in its zero fields.
func (c Config) WithDefaults() Config {
	if c.HeartbeatInterval <= 0 {
		c.HeartbeatInterval = 5 * time.Second
	}
	if c.SessionTimeout <= 0 {
		c.SessionTimeout = 45 * time.Second
	}
	if c.AcceptableRecoveryLag <= 0 {
		c.AcceptableRecoveryLag = 10000
	}
	if c.TaskOffsetInterval <= 0 {
		c.TaskOffsetInterval = 60 * time.Second
	}
	return c
}

// Group states, as ListGroups and Describe name them.
const (
	StateEmpty       = "Empty"
	StateNotReady    = "NotReady"
	StateAssigning   = "Assigning"
	StateReconciling = "Reconciling"
	StateStable      = "Stable"
)

// Group is one streams group's membership, topology and assignment. It
// is a pure state machine: its methods change it and say what to persist
// and what the broker must do, and touch nothing else. It is not safe for
// concurrent use; one owner calls it.
type Group struct {
	ID                     string
	Epoch                  int32
	AssignmentEpoch        int32
	Topology               *Topology
	ValidatedTopologyEpoch int32
	// Fingerprint of the partition counts the topology was last
	// configured against; a change bumps the epoch.
	Fingerprint     uint64
	EndpointEpoch   int32
	Members         map[string]*Member
	shutdownRequest string

	cfg        Config
	configured *configured // not persisted: recomputed from the topics
}

// New returns an empty group.
func New(id string, cfg Config) *Group {
	return &Group{ID: id, ValidatedTopologyEpoch: -1, Members: make(map[string]*Member), cfg: cfg.WithDefaults()}
}

// SetConfig changes the settings, as after a restart with new ones.
func (g *Group) SetConfig(cfg Config) { g.cfg = cfg.WithDefaults() }

// Changes lists what a call changed, for the owner to persist: the group
// record, the records of the members named, and tombstones of the
// members gone.
type Changes struct {
	Group   bool
	Members []string
	Gone    []string
}

func (c *Changes) member(id string) {
	if !slices.Contains(c.Members, id) {
		c.Members = append(c.Members, id)
	}
}

// Result is the outcome of a heartbeat.
type Result struct {
	Response *kmsg.StreamsGroupHeartbeatResponse
	Changes  Changes
	// Create lists the internal topics the broker should create.
	Create []NewTopic
}

// Leave and static-leave epochs of the heartbeat.
const (
	LeaveEpoch       int32 = -1
	StaticLeaveEpoch int32 = -2
)

// ErrorResponse returns a heartbeat answer carrying only an error.
func ErrorResponse(version, code int16, msg string) *kmsg.StreamsGroupHeartbeatResponse {
	r := kmsg.NewPtrStreamsGroupHeartbeatResponse()
	r.Version = version
	r.ErrorCode = code
	if msg != "" {
		r.ErrorMessage = &msg
	}
	return r
}

// ValidateRequest checks a heartbeat as far as it can be checked without
// the group, with Kafka's error codes and messages: INVALID_REQUEST for
// malformed requests, STREAMS_INVALID_TOPOLOGY for a topology Streams
// could not run.
func ValidateRequest(req *kmsg.StreamsGroupHeartbeatRequest) (int16, string) {
	blank := func(s *string) bool { return s != nil && strings.TrimSpace(*s) == "" }
	switch {
	case strings.TrimSpace(req.MemberID) == "":
		return kerr.InvalidRequest.Code, "MemberId can't be empty."
	case strings.TrimSpace(req.Group) == "":
		return kerr.InvalidRequest.Code, "GroupId can't be empty."
	case blank(req.InstanceID):
		return kerr.InvalidRequest.Code, "InstanceId can't be empty."
	case blank(req.RackID):
		return kerr.InvalidRequest.Code, "RackId can't be empty."
	}
	if req.Topology != nil {
		for _, s := range req.Topology.Subtopologies {
			if len(s.SourceTopicRegex) > 0 {
				return kerr.InvalidRequest.Code, "Regular expressions for source topics are not supported yet."
			}
		}
	}
	switch {
	case req.MemberEpoch == 0:
		if req.RebalanceTimeoutMillis == -1 {
			return kerr.InvalidRequest.Code, "RebalanceTimeoutMs must be provided in first request."
		}
		if len(req.ActiveTasks) > 0 {
			return kerr.InvalidRequest.Code, "ActiveTasks must be empty when (re-)joining."
		}
		if len(req.StandbyTasks) > 0 {
			return kerr.InvalidRequest.Code, "StandbyTasks must be empty when (re-)joining."
		}
		if len(req.WarmupTasks) > 0 {
			return kerr.InvalidRequest.Code, "WarmupTasks must be empty when (re-)joining."
		}
		if req.Topology == nil {
			return kerr.InvalidRequest.Code, "Topology must be non-null when (re-)joining."
		}
		if err := TopologyFromRequest(req.Topology).Validate(); err != nil {
			return errorCode(err), errorMessage(err)
		}
	case req.MemberEpoch == StaticLeaveEpoch:
		if req.InstanceID == nil {
			return kerr.InvalidRequest.Code, "InstanceId can't be null."
		}
	case req.MemberEpoch < StaticLeaveEpoch:
		return kerr.InvalidRequest.Code, fmt.Sprintf("MemberEpoch is %d, but must be greater than or equal to -2.", req.MemberEpoch)
	}
	if req.ActiveTasks != nil || req.StandbyTasks != nil || req.WarmupTasks != nil {
		if req.ActiveTasks == nil || req.StandbyTasks == nil || req.WarmupTasks == nil {
			return kerr.InvalidRequest.Code, "If one task-type is non-null, all must be non-null."
		}
	}
	if req.MemberEpoch != 0 && req.Topology != nil {
		return kerr.InvalidRequest.Code, "Topology can only be provided when (re-)joining."
	}
	if req.InstanceID != nil {
		return kerr.InvalidRequest.Code, "Static members are not supported yet."
	}
	return 0, ""
}

// errorCode and errorMessage split an error made by this package into
// its Kafka code and the text after it.
func errorCode(err error) int16 {
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Code
	}
	return kerr.UnknownServerError.Code
}

func errorMessage(err error) string {
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return strings.TrimPrefix(err.Error(), ke.Error()+": ")
	}
	return err.Error()
}

type failure struct {
	code int16
	msg  string
}

func fail(code int16, format string, args ...any) *failure {
	return &failure{code, fmt.Sprintf(format, args...)}
}

// Heartbeat applies one StreamsGroupHeartbeat that passed ValidateRequest
// (the caller checks that first, and routes epochs -1 and -2 to Leave).
// On an error nothing in the group changes.
func (g *Group) Heartbeat(req *kmsg.StreamsGroupHeartbeatRequest, client Client, topics TopicView) Result {
	res, f := g.heartbeat(req, client, topics)
	if f != nil {
		return Result{Response: ErrorResponse(req.Version, f.code, f.msg)}
	}
	return res
}

func (g *Group) heartbeat(req *kmsg.StreamsGroupHeartbeatRequest, client Client, topics TopicView) (Result, *failure) {
	joining := req.MemberEpoch == 0
	owned := ownedFromRequest(req)
	old := g.Members[req.MemberID]
	switch {
	case old == nil && !joining:
		return Result{}, fail(kerr.UnknownMemberID.Code, "Member %s is not a member of group %s.", req.MemberID, g.ID)
	case old == nil && g.cfg.MaxSize > 0 && len(g.Members) >= g.cfg.MaxSize:
		return Result{}, fail(kerr.GroupMaxSizeReached.Code, "The streams group has reached its maximum capacity of %d members.", g.cfg.MaxSize)
	case old != nil && !joining:
		if code := epochCheck(old, req.MemberEpoch, owned); code != 0 {
			which := "smaller"
			if req.MemberEpoch > old.Epoch {
				which = "greater"
			}
			return Result{}, fail(code, "The streams group member has a %s member epoch (%d) than the one known by the group coordinator (%d). The member must abandon all its partitions and rejoin.", which, req.MemberEpoch, old.Epoch)
		}
	}

	// The topology: the first member registers it; later members bring
	// the same one, or an older epoch (they are told STALE_TOPOLOGY). An
	// empty group takes a new topology, as a redeployed application
	// brings one.
	topology := g.Topology
	newTopology := false
	if req.Topology != nil {
		rt := TopologyFromRequest(req.Topology)
		switch {
		case g.Topology == nil || len(g.Members) == 0 || len(g.Members) == 1 && old != nil:
			if g.Topology == nil || !g.Topology.equal(rt) {
				topology, newTopology = rt, true
			}
		case g.Topology.Epoch > rt.Epoch:
		case !g.Topology.equal(rt):
			return Result{}, fail(kerr.InvalidRequest.Code, "Topology updates are not supported yet.")
		}
	}
	if topology == nil {
		return Result{}, fail(kerr.InvalidRequest.Code, "The topology is null and the group topology is also null.")
	}

	fp := fingerprint(topology, topics)
	cfgd := g.configured
	if newTopology || cfgd == nil || fp != g.Fingerprint {
		c := configure(topology, topics)
		cfgd = &c
	}
	if cfgd.ready {
		for _, ts := range []Tasks{owned.active(), owned.standby(), owned.warmup()} {
			for t := range ts {
				if n, ok := cfgd.tasks[t.Subtopology]; !ok || t.Partition < 0 || t.Partition >= n {
					return Result{}, fail(kerr.StreamsInvalidTopology.Code, "Unknown task %s_%d in the owned tasks.", t.Subtopology, t.Partition)
				}
			}
		}
	}

	// Validated: apply.
	var res Result
	member := old
	if member == nil {
		member = newMember(req.MemberID)
	}
	updated := member.update(req, client)
	bump := false
	if old == nil || !old.metadataEqual(updated) {
		bump = bump || old == nil || old.ProcessID != updated.ProcessID || !equalPtr(old.RackID, updated.RackID) ||
			len(old.ClientTags) != len(updated.ClientTags)
		res.Changes.member(updated.ID)
	}
	if !slices.Equal(member.TaskOffsets, updated.TaskOffsets) || !slices.Equal(member.TaskEndOffsets, updated.TaskEndOffsets) {
		res.Changes.member(updated.ID)
	}
	g.Members[updated.ID] = updated
	if newTopology {
		g.Topology = topology
		res.Changes.Group = true
		bump = true
	}
	g.configured = cfgd
	if fp != g.Fingerprint {
		g.Fingerprint = fp
		res.Changes.Group = true
		bump = true
	}
	validated := int32(-1)
	if cfgd.ready {
		validated = topology.Epoch
	}
	if validated != g.ValidatedTopologyEpoch {
		g.ValidatedTopologyEpoch = validated
		res.Changes.Group = true
		bump = true
	}
	if bump || g.Epoch == 0 {
		g.bumpEpoch(&res.Changes)
	}

	g.reconcileMember(updated.ID, owned, &res.Changes)
	now := g.Members[updated.ID]

	if req.ShutdownApplication && g.shutdownRequest == "" {
		g.shutdownRequest = now.ID
	}

	r := kmsg.NewPtrStreamsGroupHeartbeatResponse()
	r.Version = req.Version
	r.MemberID = now.ID
	r.MemberEpoch = now.Epoch
	r.HeartbeatIntervalMillis = int32(g.cfg.HeartbeatInterval.Milliseconds())
	r.AcceptableRecoveryLagLegacy = g.cfg.AcceptableRecoveryLag
	r.AcceptableRecoveryLag = int64(g.cfg.AcceptableRecoveryLag)
	r.TaskOffsetIntervalMillis = int32(g.cfg.TaskOffsetInterval.Milliseconds())
	if joining || !now.Assigned.equal(member.Assigned) {
		r.ActiveTasks = now.Assigned.Active.wire()
		r.StandbyTasks = now.Assigned.Standby.wire()
		r.WarmupTasks = now.Assigned.Warmup.wire()
		if now.UserEndpoint != nil {
			g.EndpointEpoch++
			res.Changes.Group = true
		}
	}
	if g.EndpointEpoch != req.EndpointInformationEpoch {
		r.PartitionsByUserEndpoint = g.endpointsToPartitions(now.ID)
	}
	r.EndpointInformationEpoch = g.EndpointEpoch
	if now.TopologyEpoch < topology.Epoch {
		r.Status = append(r.Status, kmsg.StreamsGroupHeartbeatResponseStatus{StatusCode: StatusStaleTopology,
			StatusDetail: fmt.Sprintf("The member's topology epoch %d is behind the group's topology epoch %d.", now.TopologyEpoch, topology.Epoch)})
	}
	if cfgd.status != nil {
		r.Status = append(r.Status, kmsg.StreamsGroupHeartbeatResponseStatus{StatusCode: cfgd.status.Code, StatusDetail: cfgd.status.Detail})
		res.Create = slices.Clone(cfgd.create)
	}
	if g.shutdownRequest != "" {
		r.Status = append(r.Status, kmsg.StreamsGroupHeartbeatResponseStatus{StatusCode: StatusShutdownApplication,
			StatusDetail: fmt.Sprintf("Streams group member %s encountered a fatal error and requested a shutdown for the entire application.", g.shutdownRequest)})
	}
	res.Response = r
	return res, nil
}

// epochCheck validates the epoch a known member sent. A member may lag
// one epoch if what it owns is within its assignment (the answer that
// moved it may have been lost).
func epochCheck(m *Member, received int32, owned *Assignment) int16 {
	switch {
	case received > m.Epoch:
		return kerr.FencedMemberEpoch.Code
	case received < m.Epoch:
		if received != m.PrevEpoch || owned == nil ||
			len(owned.Active.minus(m.Assigned.Active)) > 0 || len(owned.Standby.minus(m.Assigned.Standby)) > 0 ||
			len(owned.Warmup.minus(m.Assigned.Warmup)) > 0 {
			return kerr.FencedMemberEpoch.Code
		}
	}
	return 0
}

func (a *Assignment) active() Tasks {
	if a == nil {
		return nil
	}
	return a.Active
}

func (a *Assignment) standby() Tasks {
	if a == nil {
		return nil
	}
	return a.Standby
}

func (a *Assignment) warmup() Tasks {
	if a == nil {
		return nil
	}
	return a.Warmup
}

// bumpEpoch moves the group epoch and recomputes every member's target:
// the sticky assignor's answer when the topology is ready, nothing
// otherwise.
func (g *Group) bumpEpoch(ch *Changes) {
	g.Epoch++
	ch.Group = true
	var tasks map[string]int32
	stateful := make(map[string]bool)
	if g.configured != nil && g.configured.ready {
		tasks = g.configured.tasks
		for _, s := range g.Topology.Subtopologies {
			stateful[s.ID] = len(s.StateChangelogTopics) > 0
		}
	}
	ms := make([]assignMember, 0, len(g.Members))
	for _, m := range g.Members {
		process := m.ProcessID
		if process == "" {
			process = m.ID
		}
		ms = append(ms, assignMember{id: m.ID, process: process, previous: m.Assigned.union(m.Pending)})
	}
	target := assign(ms, tasks, stateful, g.cfg.NumStandbyReplicas)
	for id, m := range g.Members {
		if !m.Target.equal(target[id]) {
			m.Target = target[id]
			ch.member(id)
		}
	}
	g.AssignmentEpoch = g.Epoch
}

func (a Assignment) union(o Assignment) Assignment {
	return Assignment{Active: a.Active.union(o.Active), Standby: a.Standby.union(o.Standby), Warmup: a.Warmup.union(o.Warmup)}
}

func (g *Group) reconcileMember(id string, owned *Assignment, ch *Changes) {
	m := g.Members[id]
	next := reconcile(m, g.AssignmentEpoch, groupHolders{g}, owned)
	if next == m {
		return
	}
	if next.Epoch != m.Epoch || next.State != m.State || !next.Assigned.equal(m.Assigned) || !next.Pending.equal(m.Pending) {
		ch.member(id)
	}
	g.Members[id] = next
}

type groupHolders struct{ g *Group }

func (h groupHolders) activeHolder(t TaskID) string {
	for id, m := range h.g.Members {
		if m.Assigned.Active.has(t) || m.Pending.Active.has(t) {
			return id
		}
	}
	return ""
}

func (h groupHolders) activeInProcess(t TaskID, process, except string) bool {
	for id, m := range h.g.Members {
		if id != except && process != "" && m.ProcessID == process && (m.Assigned.Active.has(t) || m.Pending.Active.has(t)) {
			return true
		}
	}
	return false
}

// Leave removes a member that left (epoch -1); the others are reassigned.
func (g *Group) Leave(req *kmsg.StreamsGroupHeartbeatRequest) Result {
	m := g.Members[req.MemberID]
	if m == nil {
		return Result{Response: ErrorResponse(req.Version, kerr.UnknownMemberID.Code,
			fmt.Sprintf("Member %s is not a member of group %s.", req.MemberID, g.ID))}
	}
	var res Result
	g.Remove(m.ID, &res.Changes)
	r := kmsg.NewPtrStreamsGroupHeartbeatResponse()
	r.Version = req.Version
	r.MemberID = req.MemberID
	r.MemberEpoch = req.MemberEpoch
	res.Response = r
	return res
}

// Remove takes a member out (it left, or its session or rebalance timeout
// expired): its tasks become free and the group epoch moves.
func (g *Group) Remove(id string, ch *Changes) {
	if g.Members[id] == nil {
		return
	}
	delete(g.Members, id)
	ch.Gone = append(ch.Gone, id)
	if len(g.Members) == 0 {
		g.shutdownRequest = ""
	}
	g.bumpEpoch(ch)
}

// RecheckTopics reconfigures the topology against the topics as they are
// now, bumping the epoch if their partition counts changed (a source
// topic created or grown, an internal topic created).
//
// An empty group is left alone: its next member's heartbeat configures it.
func (g *Group) RecheckTopics(topics TopicView) Changes {
	var ch Changes
	if g.Topology == nil || len(g.Members) == 0 {
		return ch
	}
	fp := fingerprint(g.Topology, topics)
	if fp == g.Fingerprint && g.configured != nil {
		return ch
	}
	c := configure(g.Topology, topics)
	g.configured = &c
	if fp == g.Fingerprint {
		return ch
	}
	g.Fingerprint = fp
	validated := int32(-1)
	if c.ready {
		validated = g.Topology.Epoch
	}
	g.ValidatedTopologyEpoch = validated
	g.bumpEpoch(&ch)
	return ch
}

// State is the group's state as Describe and ListGroups report it.
func (g *Group) State() string {
	switch {
	case len(g.Members) == 0:
		return StateEmpty
	case g.Topology == nil || g.ValidatedTopologyEpoch < 0:
		return StateNotReady
	case g.Epoch > g.AssignmentEpoch:
		return StateAssigning
	}
	for _, m := range g.Members {
		if m.Epoch != g.AssignmentEpoch || m.State != Stable {
			return StateReconciling
		}
	}
	return StateStable
}

// MemberEpoch returns a member's epoch, which its offset commits and
// fetches must carry.
func (g *Group) MemberEpoch(id string) (int32, bool) {
	m := g.Members[id]
	if m == nil {
		return 0, false
	}
	return m.Epoch, true
}

// SubscribedTo reports whether the topology reads topic (as a source or
// repartition source), which protects its committed offsets from
// OffsetDelete.
func (g *Group) SubscribedTo(topic string) bool {
	if g.Topology == nil || len(g.Members) == 0 {
		return false
	}
	for _, s := range g.Topology.Subtopologies {
		if slices.Contains(s.SourceTopics, topic) || slices.ContainsFunc(s.RepartitionSourceTopics, func(t InternalTopic) bool { return t.Name == topic }) {
			return true
		}
	}
	return false
}

// SortedMemberIDs returns the member ids in order.
func (g *Group) SortedMemberIDs() []string { return slices.Sorted(maps.Keys(g.Members)) }

// endpointsToPartitions maps every member with an endpoint to the input
// partitions of its active and standby tasks, the member asking last.
func (g *Group) endpointsToPartitions(asking string) []kmsg.StreamsGroupHeartbeatResponsePartitionsByUserEndpoint {
	out := []kmsg.StreamsGroupHeartbeatResponsePartitionsByUserEndpoint{}
	if g.Topology == nil || g.configured == nil || g.configured.partitions == nil {
		return out
	}
	ids := g.SortedMemberIDs()
	if i := slices.Index(ids, asking); i >= 0 {
		ids = append(append(ids[:i:i], ids[i+1:]...), asking)
	}
	for _, id := range ids {
		m := g.Members[id]
		if m.UserEndpoint == nil {
			continue
		}
		e := kmsg.NewStreamsGroupHeartbeatResponsePartitionsByUserEndpoint()
		e.UserEndpoint = kmsg.Endpoint{Host: m.UserEndpoint.Host, Port: m.UserEndpoint.Port}
		e.ActivePartitions = []kmsg.StreamsGroupHeartbeatResponsePartitionsByUserEndpointActivePartition{}
		for _, tp := range g.taskPartitions(m.Assigned.Active) {
			e.ActivePartitions = append(e.ActivePartitions, kmsg.StreamsGroupHeartbeatResponsePartitionsByUserEndpointActivePartition{Topic: tp.topic, Partitions: tp.partitions})
		}
		e.StandbyPartitions = []kmsg.StreamsGroupHeartbeatResponsePartitionsByUserEndpointStandbyPartition{}
		for _, tp := range g.taskPartitions(m.Assigned.Standby) {
			e.StandbyPartitions = append(e.StandbyPartitions, kmsg.StreamsGroupHeartbeatResponsePartitionsByUserEndpointStandbyPartition{Topic: tp.topic, Partitions: tp.partitions})
		}
		out = append(out, e)
	}
	return out
}

type topicPartitions struct {
	topic      string
	partitions []int32
}

// taskPartitions returns the input partitions of tasks: task (s, p) reads
// partition p of each source and repartition source topic of s that has
// a partition p.
func (g *Group) taskPartitions(ts Tasks) []topicPartitions {
	by := make(map[string][]int32)
	for _, t := range ts.sorted() {
		s := g.Topology.subtopology(t.Subtopology)
		if s == nil {
			continue
		}
		names := slices.Clone(s.SourceTopics)
		for _, rt := range s.RepartitionSourceTopics {
			names = append(names, rt.Name)
		}
		for _, name := range names {
			if t.Partition < g.configured.partitions[name] {
				by[name] = append(by[name], t.Partition)
			}
		}
	}
	out := make([]topicPartitions, 0, len(by))
	for name, ps := range by {
		slices.Sort(ps)
		out = append(out, topicPartitions{name, slices.Compact(ps)})
	}
	slices.SortFunc(out, func(a, b topicPartitions) int { return strings.Compare(a.topic, b.topic) })
	return out
}
