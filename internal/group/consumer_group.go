package group

import (
	"maps"
	"regexp"
	"slices"
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Consumer-protocol groups (KIP-848): the coordinator computes a target
// assignment for the whole group whenever the group epoch moves (members or
// subscriptions or topics changed), and each member reconciles toward its
// part of it through its heartbeats (see reconcile.go).

// leftStaticEpoch marks a static member that left with epoch -2: it keeps
// its partitions (no rebalance) until it returns or its session expires.
const leftStaticEpoch = -2

type consumerState int8

const (
	consumerEmpty consumerState = iota
	consumerAssigning
	consumerReconciling
	consumerStable
)

func (s consumerState) String() string {
	switch s {
	case consumerEmpty:
		return "Empty"
	case consumerAssigning:
		return "Assigning"
	case consumerReconciling:
		return "Reconciling"
	default:
		return "Stable"
	}
}

type consumerMember struct {
	id               string
	instanceID       *string
	rackID           *string
	clientID         string
	clientHost       string
	rebalanceTimeout int32    // ms
	names            []string // subscribed topic names, sorted, unique
	regex            string   // subscribed regex, "" for none
	re               *regexp.Regexp
	assignor         string // requested server assignor, "" for none
	assignState
	target tps
}

func newConsumerMember(id string) *consumerMember {
	return &consumerMember{
		id: id,
		assignState: assignState{
			assigned: make(tps),
			pending:  make(tps),
		},
		target: make(tps),
	}
}

func (m *consumerMember) assignmentEpochOf(id topicID, p int32) (int32, bool) {
	if at, ok := m.assigned[id][p]; ok {
		return at, true
	}
	at, ok := m.pending[id][p]
	return at, ok
}

func (m *consumerMember) reconciledTo(epoch int32) bool {
	return m.epoch == epoch && m.state == memberStable
}

// subscribesTo reports whether the member's names or regex cover topic.
func (m *consumerMember) subscribesTo(topic string) bool {
	if containsSorted(m.names, topic) {
		return true
	}
	return m.re != nil && m.re.MatchString(topic)
}

func (m *consumerMember) value() *consumerMemberValue {
	return &consumerMemberValue{
		instanceID:         m.instanceID,
		rackID:             m.rackID,
		clientID:           m.clientID,
		clientHost:         m.clientHost,
		rebalanceTimeoutMs: m.rebalanceTimeout,
		subscribedNames:    m.names,
		regex:              optString(m.regex),
		assignor:           optString(m.assignor),
		epoch:              m.epoch,
		prevEpoch:          m.prevEpoch,
		state:              int8(m.state),
		assigned:           m.assigned.epochTopics(),
		pending:            m.pending.epochTopics(),
		target:             m.target.targetTopics(),
	}
}

// compileRegex compiles a subscription regex. Kafka's RE2/J syntax is the
// same family as Go's; the pattern must match the whole topic name.
func compileRegex(expr string) (*regexp.Regexp, error) {
	return regexp.Compile(`^(?:` + expr + `)$`)
}

type consumerGroup struct {
	epoch           int32 // group epoch
	assignmentEpoch int32 // epoch of the current target assignment

	members map[string]*consumerMember
	static  map[string]string // instance id -> member id
	// holders records which member holds each partition (assigned or
	// pending revocation). It is the single source of truth for "is this
	// partition free"; a partition never has two holders.
	holders map[topicID]map[int32]string

	// subscription is the resolved metadata of every subscribed topic, by
	// name. A change bumps the group epoch.
	subscription  map[string]TopicInfo
	subscribedAt  time.Time
	subscribedSet bool

	// regexes is what each regex the members subscribe to resolved to
	// (Kafka's resolved regular expressions, regex.go): shared by every
	// member subscribed to it, refreshed only by a heartbeat, filtered by
	// that heartbeat's principal. regexesAt is when the last refresh
	// ran, regexesStale that topics changed since.
	regexes      map[string]resolvedRegex
	regexesAt    time.Time
	regexesStale bool

	// Changes not yet persisted.
	dirtyMeta    bool
	dirtyMembers map[string]bool
	goneMembers  map[string]bool
	dirtyRegexes bool // every regex record is written again
	goneRegexes  map[string]bool
}

func newConsumerGroup() *consumerGroup {
	return &consumerGroup{
		members:      make(map[string]*consumerMember),
		static:       make(map[string]string),
		holders:      make(map[topicID]map[int32]string),
		subscription: make(map[string]TopicInfo),
		regexes:      make(map[string]resolvedRegex),
		dirtyMembers: make(map[string]bool),
		goneMembers:  make(map[string]bool),
		goneRegexes:  make(map[string]bool),
	}
}

func (c *consumerGroup) state() consumerState {
	if len(c.members) == 0 {
		return consumerEmpty
	}
	if c.epoch > c.assignmentEpoch {
		return consumerAssigning
	}
	for _, m := range c.members {
		if !m.reconciledTo(c.assignmentEpoch) {
			return consumerReconciling
		}
	}
	return consumerStable
}

func (c *consumerGroup) subscribedTo(topic string) bool {
	for _, m := range c.members {
		if m.subscribesTo(topic) {
			return true
		}
	}
	return false
}

func (c *consumerGroup) sortedMemberIDs() []string {
	ids := make([]string, 0, len(c.members))
	for id := range c.members {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

// preferredAssignor is the server assignor most members asked for (ties:
// the smallest name), or def if none did.
func (c *consumerGroup) preferredAssignor(def string) string {
	counts := make(map[string]int)
	for _, m := range c.members {
		if m.assignor != "" {
			counts[m.assignor]++
		}
	}
	best := ""
	for name, n := range counts {
		if best == "" || n > counts[best] || (n == counts[best] && name < best) {
			best = name
		}
	}
	if best == "" {
		return def
	}
	return best
}

// validateFetch checks the member id and epoch of an OffsetFetch v9+. An
// admin fetch carries neither.
func (c *consumerGroup) validateFetch(memberID *string, epoch int32) int16 {
	return validateMemberFetch(memberID, epoch, func(id string) (int32, bool) {
		m := c.members[id]
		if m == nil {
			return 0, false
		}
		return m.epoch, true
	})
}

// validateMemberFetch checks the member id and epoch of an OffsetFetch
// v9+ against a group whose members' epochs memberEpoch knows: an admin
// fetch carries neither; a member must be known and at its epoch.
func validateMemberFetch(memberID *string, epoch int32, memberEpoch func(string) (int32, bool)) int16 {
	if memberID == nil && epoch < 0 {
		return 0
	}
	if memberID == nil {
		return kerr.UnknownMemberID.Code
	}
	cur, ok := memberEpoch(*memberID)
	if !ok {
		return kerr.UnknownMemberID.Code
	}
	if epoch != cur {
		return kerr.StaleMemberEpoch.Code
	}
	return 0
}

func (c *consumerGroup) holder(id topicID, p int32) string { return c.holders[id][p] }

// release drops a member's hold on partitions it holds in t.
func (c *consumerGroup) release(memberID string, t tps) {
	for id, ps := range t {
		hs := c.holders[id]
		for p := range ps {
			if hs[p] == memberID {
				delete(hs, p)
			}
		}
		if len(hs) == 0 {
			delete(c.holders, id)
		}
	}
}

// hold records memberID as the holder of t's partitions. A partition held
// by another member means reconciliation broke its invariant; the existing
// holder is kept and the conflict reported.
func (c *consumerGroup) hold(memberID string, t tps) (conflicts int) {
	for id, ps := range t {
		hs := c.holders[id]
		if hs == nil {
			hs = make(map[int32]string)
			c.holders[id] = hs
		}
		for p := range ps {
			if h, ok := hs[p]; ok && h != memberID {
				conflicts++
				continue
			}
			hs[p] = memberID
		}
	}
	return conflicts
}

func (c *consumerGroup) markDirty(id string) {
	c.dirtyMembers[id] = true
	delete(c.goneMembers, id)
}

func (c *consumerGroup) markGone(id string) {
	c.goneMembers[id] = true
	delete(c.dirtyMembers, id)
}

// pendingRecords returns the records for every unpersisted change and
// clears the change marks.
func (c *consumerGroup) pendingRecords(groupID string) []Record {
	var recs []Record
	if c.dirtyMeta {
		recs = append(recs, encodeRecord(decodedRecord{kind: recConsumerGroup, group: groupID,
			consumer: &consumerGroupValue{epoch: c.epoch, assignmentEpoch: c.assignmentEpoch}}))
	}
	for _, id := range sortedKeysStr(c.goneMembers) {
		recs = append(recs, encodeRecord(decodedRecord{kind: recConsumerMember, group: groupID, member: id}))
	}
	for _, id := range sortedKeysStr(c.dirtyMembers) {
		if m := c.members[id]; m != nil {
			recs = append(recs, encodeRecord(decodedRecord{kind: recConsumerMember, group: groupID, member: id, cmember: m.value()}))
		}
	}
	recs = append(recs, c.regexRecords(groupID)...)
	c.dirtyMeta = false
	clear(c.dirtyMembers)
	clear(c.goneMembers)
	return recs
}

// tombstones deletes every record of the group (not its offsets).
func (c *consumerGroup) tombstones(groupID string) []Record {
	var recs []Record
	for _, id := range c.sortedMemberIDs() {
		recs = append(recs, encodeRecord(decodedRecord{kind: recConsumerMember, group: groupID, member: id}))
	}
	for _, regex := range slices.Sorted(maps.Keys(c.regexes)) {
		recs = append(recs, encodeRecord(decodedRecord{kind: recConsumerRegex, group: groupID, regex: regex}))
	}
	return append(recs, encodeRecord(decodedRecord{kind: recConsumerGroup, group: groupID}))
}

func sortedKeysStr(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// resolveSubscription looks up every topic the members subscribe to, by
// name or through the resolution of their regex (the topics a regex
// resolved to that still exist). It reports whether the result differs
// from the last one.
func (c *consumerGroup) resolveSubscription(topics Topics, now time.Time) bool {
	sub := make(map[string]TopicInfo)
	lookup := func(names []string) {
		for _, n := range names {
			if _, done := sub[n]; done {
				continue
			}
			if ti, ok := topics.TopicByName(n); ok {
				sub[n] = ti
			}
		}
	}
	for _, m := range c.members {
		lookup(m.names)
		if m.re != nil {
			lookup(c.regexes[m.regex].topics)
		}
	}
	changed := !c.subscribedSet || len(sub) != len(c.subscription)
	if !changed {
		for n, ti := range sub {
			if old, ok := c.subscription[n]; !ok || old != ti {
				changed = true
				break
			}
		}
	}
	c.subscription = sub
	c.subscribedAt = now
	c.subscribedSet = true
	return changed
}

// memberTopics returns the existing topics a member subscribes to, sorted.
func (c *consumerGroup) memberTopics(m *consumerMember) []string {
	var out []string
	for _, n := range m.names {
		if _, ok := c.subscription[n]; ok {
			out = append(out, n)
		}
	}
	if m.re != nil {
		for _, n := range c.regexes[m.regex].topics {
			if _, ok := c.subscription[n]; ok && !containsSorted(m.names, n) {
				out = append(out, n)
			}
		}
	}
	sort.Strings(out)
	return out
}

func (c *consumerGroup) memberTopicIDs(m *consumerMember) map[topicID]bool {
	ids := make(map[topicID]bool)
	for _, n := range c.memberTopics(m) {
		ids[c.subscription[n].ID] = true
	}
	return ids
}

// computeTarget runs the assignor over all members (a member that left
// with epoch -2 keeps its place) and records the new target assignment at
// the group epoch.
func (c *consumerGroup) computeTarget(defaultAssignor string) {
	topics := make(map[string]assignTopic, len(c.subscription))
	for n, ti := range c.subscription {
		topics[n] = assignTopic{name: n, id: ti.ID, partitions: ti.Partitions}
	}
	ids := c.sortedMemberIDs()
	members := make([]assignMember, 0, len(ids))
	for _, id := range ids {
		m := c.members[id]
		am := assignMember{id: id, topics: c.memberTopics(m), current: m.target}
		if m.instanceID != nil {
			am.instanceID = *m.instanceID
		}
		members = append(members, am)
	}
	result := assign(c.preferredAssignor(defaultAssignor), members, topics)
	for _, id := range ids {
		m := c.members[id]
		t := result[id]
		if t == nil {
			t = make(tps)
		}
		if !t.sameKeys(m.target) {
			m.target = t
			c.markDirty(id)
		}
	}
	c.assignmentEpoch = c.epoch
	c.dirtyMeta = true
}
