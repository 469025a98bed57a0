package group

import (
	"bytes"
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

type classicState int8

const (
	classicEmpty classicState = iota
	classicPreparingRebalance
	classicCompletingRebalance
	classicStable
	classicDead
)

func (s classicState) String() string {
	switch s {
	case classicEmpty:
		return "Empty"
	case classicPreparingRebalance:
		return "PreparingRebalance"
	case classicCompletingRebalance:
		return "CompletingRebalance"
	case classicStable:
		return "Stable"
	default:
		return "Dead"
	}
}

var notCoordinator = kerr.NotCoordinator.Code

// A parked JoinGroup or SyncGroup: the version to answer in and how.
type joinWaiter struct {
	version int16
	reply   func(*kmsg.JoinGroupResponse)
}

type syncWaiter struct {
	version int16
	reply   func(*kmsg.SyncGroupResponse)
}

type classicMember struct {
	id               string
	instanceID       *string
	clientID         string
	clientHost       string
	rebalanceTimeout int32 // ms
	sessionTimeout   int32 // ms
	protocolType     string
	protocols        []protocolValue
	assignment       []byte

	join  *joinWaiter // non-nil while the member waits in JoinGroup
	sync  *syncWaiter // non-nil while the member waits in SyncGroup
	isNew bool        // joined but has not yet been through a completed join phase
	seq   uint64      // arrival order, so iteration is deterministic
}

// hasSatisfiedHeartbeat reports whether a member whose heartbeat timer
// fired may stay: a member parked in JoinGroup or SyncGroup is alive, unless
// it is new and has waited longer than the new-member join timeout.
func (m *classicMember) hasSatisfiedHeartbeat() bool {
	if m.isNew {
		return false
	}
	return m.join != nil || m.sync != nil
}

// matches reports whether protocols are exactly the member's current ones.
func (m *classicMember) matches(protocols []kmsg.JoinGroupRequestProtocol) bool {
	if len(protocols) != len(m.protocols) {
		return false
	}
	for i, p := range protocols {
		if p.Name != m.protocols[i].name || !bytes.Equal(p.Metadata, m.protocols[i].metadata) {
			return false
		}
	}
	return true
}

func (m *classicMember) metadata(protocol string) []byte {
	for _, p := range m.protocols {
		if p.name == protocol {
			return p.metadata
		}
	}
	return nil
}

// vote returns the member's most preferred protocol among candidates.
func (m *classicMember) vote(candidates map[string]bool) string {
	for _, p := range m.protocols {
		if candidates[p.name] {
			return p.name
		}
	}
	return ""
}

func copyProtocols(ps []kmsg.JoinGroupRequestProtocol) []protocolValue {
	out := make([]protocolValue, len(ps))
	for i, p := range ps {
		out[i] = protocolValue{name: p.Name, metadata: bytes.Clone(p.Metadata)}
	}
	return out
}

type classicGroup struct {
	state     classicState
	stateTime time.Time
	// generation counts completed join phases.
	generation   int32
	protocolType string // "" until a member joins; kept when members leave
	protocol     string // selected protocol, "" when none
	leader       string // "" when none

	members     map[string]*classicMember
	static      map[string]string   // group.instance.id -> member id
	pending     map[string]struct{} // ids handed out with MEMBER_ID_REQUIRED
	pendingSync map[string]struct{} // members that have not sent SyncGroup yet
	protoCount  map[string]int      // protocol name -> members supporting it

	// initialDelay is set while the first rebalance of an empty group is
	// held back by the initial rebalance delay; newMemberAdded records
	// that someone joined during the delay, which extends it.
	initialDelay   bool
	newMemberAdded bool

	// subscribed is the union of the members' subscribed topics, parsed
	// from their consumer-protocol metadata; subscribedKnown is false
	// when it could not be parsed (or the protocol is not "consumer").
	subscribed      map[string]struct{}
	subscribedKnown bool

	nextSeq uint64
}

func newClassicGroup() *classicGroup {
	return &classicGroup{
		members:     make(map[string]*classicMember),
		static:      make(map[string]string),
		pending:     make(map[string]struct{}),
		pendingSync: make(map[string]struct{}),
		protoCount:  make(map[string]int),
	}
}

func (cg *classicGroup) transition(to classicState, now time.Time) {
	cg.state = to
	cg.stateTime = now
}

// sortedMembers returns the members in arrival order.
func (cg *classicGroup) sortedMembers() []*classicMember {
	ms := make([]*classicMember, 0, len(cg.members))
	for _, m := range cg.members {
		ms = append(ms, m)
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].seq < ms[j].seq })
	return ms
}

func (cg *classicGroup) add(m *classicMember) {
	if m.instanceID != nil {
		cg.static[*m.instanceID] = m.id
	}
	if len(cg.members) == 0 {
		cg.protocolType = m.protocolType
	}
	if cg.leader == "" {
		cg.leader = m.id
	}
	cg.nextSeq++
	m.seq = cg.nextSeq
	cg.members[m.id] = m
	for _, p := range m.protocols {
		cg.protoCount[p.name]++
	}
	delete(cg.pending, m.id)
}

// remove drops a member. If it led the group, another member leads.
func (cg *classicGroup) remove(id string) {
	if m, ok := cg.members[id]; ok {
		for _, p := range m.protocols {
			cg.protoCount[p.name]--
			if cg.protoCount[p.name] <= 0 {
				delete(cg.protoCount, p.name)
			}
		}
		if m.instanceID != nil && cg.static[*m.instanceID] == id {
			delete(cg.static, *m.instanceID)
		}
		delete(cg.members, id)
	}
	if cg.leader == id {
		cg.leader = ""
		if ms := cg.sortedMembers(); len(ms) > 0 {
			cg.leader = ms[0].id
		}
	}
	delete(cg.pending, id)
	delete(cg.pendingSync, id)
}

// updateMember replaces a member's protocols and timeouts from a new
// JoinGroup and parks it with w (nil to unpark).
func (cg *classicGroup) updateMember(m *classicMember, protocols []protocolValue, rebalanceTimeout, sessionTimeout int32, w *joinWaiter) {
	for _, p := range m.protocols {
		cg.protoCount[p.name]--
		if cg.protoCount[p.name] <= 0 {
			delete(cg.protoCount, p.name)
		}
	}
	m.protocols = protocols
	for _, p := range m.protocols {
		cg.protoCount[p.name]++
	}
	m.rebalanceTimeout = rebalanceTimeout
	m.sessionTimeout = sessionTimeout
	m.join = w
}

func (cg *classicGroup) hasAllMembersJoined() bool {
	if len(cg.pending) > 0 {
		return false
	}
	for _, m := range cg.members {
		if m.join == nil {
			return false
		}
	}
	return true
}

func (cg *classicGroup) numAwaitingJoin() int {
	n := 0
	for _, m := range cg.members {
		if m.join != nil {
			n++
		}
	}
	return n
}

// rebalanceTimeout is the largest rebalance timeout of the members.
func (cg *classicGroup) rebalanceTimeout() time.Duration {
	var max int32
	for _, m := range cg.members {
		if m.rebalanceTimeout > max {
			max = m.rebalanceTimeout
		}
	}
	return msDur(max)
}

// canRebalance reports whether the group may enter PreparingRebalance.
func (cg *classicGroup) canRebalance() bool {
	switch cg.state {
	case classicStable, classicCompletingRebalance, classicEmpty:
		return true
	}
	return false
}

// supportsProtocols reports whether a member with these protocols may
// join: an empty group takes any non-empty list; otherwise the protocol
// type must match and one protocol must be supported by every member.
func (cg *classicGroup) supportsProtocols(protocolType string, protocols []kmsg.JoinGroupRequestProtocol) bool {
	if cg.state == classicEmpty {
		return protocolType != "" && len(protocols) > 0
	}
	if protocolType != cg.protocolType {
		return false
	}
	for _, p := range protocols {
		if cg.protoCount[p.Name] == len(cg.members) {
			return true
		}
	}
	return false
}

// selectProtocol picks, among the protocols every member supports, the one
// most members prefer. Ties go to the protocol preferred by the member
// that joined first.
func (cg *classicGroup) selectProtocol() string {
	candidates := make(map[string]bool)
	for name, n := range cg.protoCount {
		if n == len(cg.members) {
			candidates[name] = true
		}
	}
	ms := cg.sortedMembers()
	votes := make(map[string]int)
	var order []string
	for _, m := range ms {
		v := m.vote(candidates)
		if v == "" {
			continue
		}
		if votes[v] == 0 {
			order = append(order, v)
		}
		votes[v]++
	}
	best := ""
	for _, name := range order {
		if best == "" || votes[name] > votes[best] {
			best = name
		}
	}
	return best
}

// validateMember checks a request's member id and group.instance.id.
func (cg *classicGroup) validateMember(memberID string, instanceID *string) int16 {
	if instanceID != nil {
		existing, ok := cg.static[*instanceID]
		if !ok {
			return kerr.UnknownMemberID.Code
		}
		if existing != memberID {
			return kerr.FencedInstanceID.Code
		}
	}
	if _, ok := cg.members[memberID]; !ok {
		return kerr.UnknownMemberID.Code
	}
	return 0
}

// computeSubscribed derives the subscribed topics from the members'
// metadata for the selected protocol, if the group speaks the consumer
// protocol. Every consumer-protocol version starts with the v0 layout
// (version, topics), which is all that is read here.
func (cg *classicGroup) computeSubscribed() {
	cg.subscribed, cg.subscribedKnown = nil, false
	if cg.protocolType != consumerProtocolType {
		return
	}
	subs := make(map[string]struct{})
	if len(cg.members) > 0 {
		if cg.protocol == "" {
			return
		}
		for _, m := range cg.members {
			topics, ok := parseSubscriptionTopics(m.metadata(cg.protocol))
			if !ok {
				return
			}
			for _, t := range topics {
				subs[t] = struct{}{}
			}
		}
	}
	cg.subscribed, cg.subscribedKnown = subs, true
}

func parseSubscriptionTopics(b []byte) ([]string, bool) {
	d := &decoder{b: b}
	if d.i16(); d.err != nil {
		return nil, false
	}
	n := d.i32()
	if d.err != nil || n < 0 || int(n) > len(d.b)/2 {
		return nil, false
	}
	topics := make([]string, 0, n)
	for range n {
		l := d.i16()
		if l < 0 {
			return nil, false
		}
		topics = append(topics, string(d.take(int(l))))
	}
	if d.err != nil {
		return nil, false
	}
	return topics, true
}

// subscribedTo reports whether a member subscribes to topic. When the
// subscriptions are unknown, a consumer-protocol group is assumed to
// subscribe to everything, so its offsets are never deleted by mistake.
func (cg *classicGroup) subscribedTo(topic string) bool {
	if cg.subscribedKnown {
		_, ok := cg.subscribed[topic]
		return ok
	}
	return cg.protocolType == consumerProtocolType
}

// maybeElectNewJoinedLeader makes sure the leader is among the members
// that rejoined; it reports false if no member rejoined.
func (cg *classicGroup) maybeElectNewJoinedLeader() bool {
	if cg.leader == "" {
		return false
	}
	if l := cg.members[cg.leader]; l != nil && l.join != nil {
		return true
	}
	for _, m := range cg.sortedMembers() {
		if m.join != nil {
			cg.leader = m.id
			return true
		}
	}
	return false
}

// initNextGeneration starts a new generation after a join phase.
func (cg *classicGroup) initNextGeneration(now time.Time) {
	cg.generation++
	if len(cg.members) > 0 {
		cg.protocol = cg.selectProtocol()
		cg.computeSubscribed()
		cg.transition(classicCompletingRebalance, now)
	} else {
		cg.protocol = ""
		cg.computeSubscribed()
		cg.transition(classicEmpty, now)
	}
	clear(cg.pendingSync)
}

// joinResponse is the successful JoinGroup answer for member id in the
// current generation; the leader also gets every member's metadata.
func (cg *classicGroup) joinResponse(version int16, id string, withMembers bool) *kmsg.JoinGroupResponse {
	r := kmsg.NewPtrJoinGroupResponse()
	r.Version = version
	r.Generation = cg.generation
	r.ProtocolType = optString(cg.protocolType)
	r.Protocol = optString(cg.protocol)
	r.LeaderID = cg.leader
	r.MemberID = id
	if withMembers {
		for _, m := range cg.sortedMembers() {
			jm := kmsg.NewJoinGroupResponseMember()
			jm.MemberID = m.id
			jm.InstanceID = m.instanceID
			jm.ProtocolMetadata = m.metadata(cg.protocol)
			r.Members = append(r.Members, jm)
		}
	}
	return r
}

func joinError(version, code int16, memberID string) *kmsg.JoinGroupResponse {
	r := kmsg.NewPtrJoinGroupResponse()
	r.Version = version
	r.ErrorCode = code
	r.MemberID = memberID
	return r
}

func syncError(version, code int16) *kmsg.SyncGroupResponse {
	r := kmsg.NewPtrSyncGroupResponse()
	r.Version = version
	r.ErrorCode = code
	return r
}

// failWaiters answers every parked JoinGroup and SyncGroup with code.
func (cg *classicGroup) failWaiters(code int16) {
	for _, m := range cg.sortedMembers() {
		if w := m.join; w != nil {
			m.join = nil
			w.reply(joinError(w.version, code, m.id))
		}
		if w := m.sync; w != nil {
			m.sync = nil
			w.reply(syncError(w.version, code))
		}
	}
}

// record builds the group's durable record. assignment gives each
// member's assignment; nil means the members' current ones.
func (cg *classicGroup) record(id string, withMembers bool, assignment map[string][]byte) Record {
	v := &classicGroupValue{
		protocolType: cg.protocolType,
		generation:   cg.generation,
		protocol:     optString(cg.protocol),
		leader:       optString(cg.leader),
		stateMs:      cg.stateTime.UnixMilli(),
	}
	if withMembers {
		for _, m := range cg.sortedMembers() {
			a := m.assignment
			if assignment != nil {
				a = assignment[m.id]
			}
			if a == nil {
				a = []byte{}
			}
			v.members = append(v.members, classicMemberValue{
				memberID:           m.id,
				instanceID:         m.instanceID,
				clientID:           m.clientID,
				clientHost:         m.clientHost,
				rebalanceTimeoutMs: m.rebalanceTimeout,
				sessionTimeoutMs:   m.sessionTimeout,
				protocols:          m.protocols,
				assignment:         a,
			})
		}
	}
	return encodeRecord(decodedRecord{kind: recClassicGroup, group: id, classic: v})
}

func optString(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func cloneString(s *string) *string {
	if s == nil {
		return nil
	}
	c := *s
	return &c
}
