package group

import (
	"encoding/base64"
	"encoding/hex"
	"errors"
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"

	"weir/internal/streamsgroup"
)

// group is everything the coordinator knows under one group id: either a
// classic group (which includes the "simple" groups that only hold
// offsets) or a consumer-protocol group, plus the committed offsets, which
// belong to the id whatever its protocol.
type group struct {
	id       string
	classic  *classicGroup       // non-nil for classic groups
	consumer *consumerGroup      // non-nil for consumer-protocol groups
	streams  *streamsgroup.Group // non-nil for streams groups (KIP-1071)
	// streamsEpoch is the streams group epoch last persisted, to count
	// the bumps a call made.
	streamsEpoch int32
	offsets      map[string]map[int32]*offsetValue
	// recorded is set while replaying if the group's own record (not just
	// offsets) was stored.
	recorded bool
	// openTxns are the producers with uncommitted offsets in the group
	// (the offsets are the shard's, by producer).
	openTxns map[int64]struct{}
}

func newClassicGroupEntry(id string) *group {
	return &group{id: id, classic: newClassicGroup(), offsets: make(map[string]map[int32]*offsetValue)}
}

// Group type names, as ListGroups v5 reports them.
const (
	typeClassic  = "classic"
	typeConsumer = "consumer"
	typeStreams  = "streams"
)

func (g *group) typeName() string {
	if g.streams != nil {
		return typeStreams
	}
	if g.consumer != nil {
		return typeConsumer
	}
	return typeClassic
}

func (g *group) stateName() string {
	if g.streams != nil {
		return g.streams.State()
	}
	if g.consumer != nil {
		return g.consumer.state().String()
	}
	return g.classic.state.String()
}

func (g *group) protocolTypeName() string {
	if g.streams != nil {
		return typeStreams
	}
	if g.consumer != nil {
		return consumerProtocolType
	}
	return g.classic.protocolType
}

// isEmpty reports whether the group has no members, which is when it may
// be deleted or change protocol.
func (g *group) isEmpty() bool {
	if g.streams != nil {
		return len(g.streams.Members) == 0
	}
	if g.consumer != nil {
		return len(g.consumer.members) == 0
	}
	return g.classic.state == classicEmpty
}

// consumerProtocolType is the protocol type of Kafka's consumer embedded
// protocol, the only one consumer-protocol groups speak.
const consumerProtocolType = "consumer"

// subscribedTo reports whether the group's members consume topic, which
// forbids deleting the topic's committed offsets.
func (g *group) subscribedTo(topic string) bool {
	if g.streams != nil {
		return g.streams.SubscribedTo(topic)
	}
	if g.consumer != nil {
		return g.consumer.subscribedTo(topic)
	}
	return g.classic.subscribedTo(topic)
}

func (g *group) offsetCount() int {
	n := 0
	for _, ps := range g.offsets {
		n += len(ps)
	}
	return n
}

// sortedTopics returns the topics with committed offsets, sorted.
func (g *group) sortedTopics() []string {
	ts := make([]string, 0, len(g.offsets))
	for t := range g.offsets {
		ts = append(ts, t)
	}
	sort.Strings(ts)
	return ts
}

func sortedPartitions(ps map[int32]*offsetValue) []int32 {
	out := make([]int32, 0, len(ps))
	for p := range ps {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// newUUID returns 16 random bytes shaped as a version 4 UUID.
func (s *shard) newUUID() [16]byte {
	var u [16]byte
	s.cfg.Random(u[:])
	u[6] = u[6]&0x0f | 0x40
	u[8] = u[8]&0x3f | 0x80
	return u
}

// classicMemberID builds a classic member id the way Kafka does:
// "<group.instance.id or client.id>-<uuid>".
func (s *shard) classicMemberID(clientID string, instanceID *string) string {
	u := s.newUUID()
	var b [36]byte
	hex.Encode(b[0:8], u[0:4])
	b[8] = '-'
	hex.Encode(b[9:13], u[4:6])
	b[13] = '-'
	hex.Encode(b[14:18], u[6:8])
	b[18] = '-'
	hex.Encode(b[19:23], u[8:10])
	b[23] = '-'
	hex.Encode(b[24:], u[10:])
	prefix := clientID
	if instanceID != nil {
		prefix = *instanceID
	}
	return prefix + "-" + string(b[:])
}

// consumerMemberID builds a member id for a ConsumerGroupHeartbeat v0
// client that did not bring one: a random UUID in Kafka's URL-safe base64
// form.
func (s *shard) consumerMemberID() string {
	u := s.newUUID()
	return base64.RawURLEncoding.EncodeToString(u[:])
}

// appendErrorCode maps a Store.Append failure to the code a client sees,
// as Kafka maps log append errors for its coordinator writes.
func appendErrorCode(err error) int16 {
	var ke *kerr.Error
	if errors.As(err, &ke) {
		switch ke {
		case kerr.UnknownTopicOrPartition, kerr.NotEnoughReplicas, kerr.NotEnoughReplicasAfterAppend, kerr.RequestTimedOut:
			return kerr.CoordinatorNotAvailable.Code
		case kerr.NotLeaderForPartition, kerr.KafkaStorageError:
			return kerr.NotCoordinator.Code
		case kerr.MessageTooLarge, kerr.RecordListTooLarge, kerr.InvalidFetchSize:
			return kerr.UnknownServerError.Code
		}
		return ke.Code
	}
	return kerr.CoordinatorNotAvailable.Code
}
