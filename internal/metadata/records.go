package metadata

import (
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"
)

// Kind identifies a record type. The values are part of the encoding
// written to the metadata log and to snapshots: never renumber them.
type Kind uint8

// The record kinds.
const (
	KindRegisterBroker     Kind = 1
	KindUnregisterBroker   Kind = 2
	KindFenceBroker        Kind = 3
	KindUnfenceBroker      Kind = 4
	KindControlledShutdown Kind = 5
	KindTopic              Kind = 6
	KindPartition          Kind = 7
	KindPartitionChange    Kind = 8
	KindRemoveTopic        Kind = 9
	KindConfig             Kind = 10
	KindProducerIDs        Kind = 11
	KindACL                Kind = 12
	KindRemoveACL          Kind = 13
	KindScramCredential    Kind = 14
	KindRemoveScram        Kind = 15
	KindClientQuota        Kind = 16
	KindFeatureLevel       Kind = 17
)

var kindNames = [...]string{
	KindRegisterBroker:     "register-broker",
	KindUnregisterBroker:   "unregister-broker",
	KindFenceBroker:        "fence-broker",
	KindUnfenceBroker:      "unfence-broker",
	KindControlledShutdown: "controlled-shutdown",
	KindTopic:              "topic",
	KindPartition:          "partition",
	KindPartitionChange:    "partition-change",
	KindRemoveTopic:        "remove-topic",
	KindConfig:             "config",
	KindProducerIDs:        "producer-ids",
	KindACL:                "acl",
	KindRemoveACL:          "remove-acl",
	KindScramCredential:    "scram-credential",
	KindRemoveScram:        "remove-scram-credential",
	KindClientQuota:        "client-quota",
	KindFeatureLevel:       "feature-level",
}

func (k Kind) String() string {
	if int(k) < len(kindNames) && kindNames[k] != "" {
		return kindNames[k]
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// Special leader values.
const (
	// NoLeader is the leader of a partition that has none (every ISR
	// member is fenced or shutting down).
	NoLeader int32 = -1
	// NoLeaderChange in a PartitionChangeRecord keeps the current leader.
	NoLeaderChange int32 = -2
)

// Leader recovery states (KIP-704): a leader chosen by an unclean
// election is RECOVERING until it has recovered its log; meanwhile its ISR
// may hold only itself.
const (
	Recovered  int8 = 0
	Recovering int8 = 1
	// NoRecoveryChange in a PartitionChangeRecord keeps the current state.
	NoRecoveryChange int8 = -1
)

// ResourceType is a config resource type, with Kafka's numbering.
type ResourceType int8

// The config resource types kept in the image.
const (
	ResourceTopic  ResourceType = 2
	ResourceBroker ResourceType = 4
	// ResourceGroup holds group configs (share.* of share groups).
	ResourceGroup ResourceType = 32
)

func (t ResourceType) String() string {
	switch t {
	case ResourceTopic:
		return "topic"
	case ResourceBroker:
		return "broker"
	case ResourceGroup:
		return "group"
	}
	return fmt.Sprintf("resource(%d)", int8(t))
}

// TopicID is a topic's 16-byte id. The zero id means "no id".
type TopicID [16]byte

// String is Kafka's text form of an id: URL-safe base64 without padding.
func (id TopicID) String() string { return base64.RawURLEncoding.EncodeToString(id[:]) }

// Record is one metadata record. The set of record types is closed: they
// are the exported structs of this package.
type Record interface {
	Kind() Kind
	fmt.Stringer
	encode(w *writer)
	decode(r *reader, version uint8)
}

// Endpoint is one listener of a broker.
type Endpoint struct {
	Listener         string
	Host             string
	Port             uint16
	SecurityProtocol int16
}

// RegisterBrokerRecord registers (or re-registers) a broker. A registration
// with a new incarnation replaces the old one; one with the same
// incarnation amends endpoints and rack. It carries the fencing state so
// that a snapshot can restore a broker with one record.
type RegisterBrokerRecord struct {
	ID                   int32
	Incarnation          [16]byte
	Epoch                int64
	Endpoints            []Endpoint
	Rack                 string
	Fenced               bool
	InControlledShutdown bool
}

// UnregisterBrokerRecord removes a broker's registration.
type UnregisterBrokerRecord struct {
	ID    int32
	Epoch int64
}

// FenceBrokerRecord fences a broker: it may lead nothing and be in no new ISR.
type FenceBrokerRecord struct {
	ID    int32
	Epoch int64
}

// UnfenceBrokerRecord lifts a broker's fence.
type UnfenceBrokerRecord struct {
	ID    int32
	Epoch int64
}

// ControlledShutdownRecord marks a broker as shutting down: it stays
// registered and unfenced but is no longer eligible as leader or as a
// new ISR member.
type ControlledShutdownRecord struct {
	ID    int32
	Epoch int64
}

// TopicRecord creates a topic. Its partitions follow as PartitionRecord records.
type TopicRecord struct {
	Name string
	ID   TopicID
}

// PartitionRecord creates a partition with its full state. Partitions of a
// topic are created in index order.
type PartitionRecord struct {
	TopicID        TopicID
	Partition      int32
	Replicas       []int32
	ISR            []int32
	Adding         []int32
	Removing       []int32
	Leader         int32
	LeaderEpoch    int32
	PartitionEpoch int32
	LeaderRecovery int8
}

// PartitionChangeRecord changes a partition. A nil list and NoLeaderChange /
// NoRecoveryChange keep the current value; an empty, non-nil list clears
// it. The epochs are the partition's new epochs, decided by the
// controller: PartitionEpoch always grows, LeaderEpoch grows whenever the
// leader changes.
type PartitionChangeRecord struct {
	TopicID        TopicID
	Partition      int32
	Leader         int32
	ISR            []int32
	Replicas       []int32
	Adding         []int32
	Removing       []int32
	LeaderRecovery int8
	LeaderEpoch    int32
	PartitionEpoch int32
}

// RemoveTopicRecord deletes a topic, its partitions and its configs.
type RemoveTopicRecord struct {
	ID TopicID
}

// ConfigRecord sets (or, with Delete, removes) one config key of a resource.
// A broker resource's name is the broker id in decimal, or "" for the
// cluster-wide default.
type ConfigRecord struct {
	Resource ResourceType
	Name     string
	Key      string
	Value    string
	Delete   bool
}

// ProducerIDsRecord records that a block of producer ids was handed to a
// broker: ids below Next are never handed out again.
type ProducerIDsRecord struct {
	BrokerID    int32
	BrokerEpoch int64
	Next        int64
}

// FeatureLevelRecord finalizes a feature at a level (Kafka's
// FeatureLevelRecord): the level every broker runs the feature at.
// A feature no record names runs at its default (internal/feature).
type FeatureLevelRecord struct {
	Name  string
	Level int16
}

func (*RegisterBrokerRecord) Kind() Kind     { return KindRegisterBroker }
func (*FeatureLevelRecord) Kind() Kind       { return KindFeatureLevel }
func (*UnregisterBrokerRecord) Kind() Kind   { return KindUnregisterBroker }
func (*FenceBrokerRecord) Kind() Kind        { return KindFenceBroker }
func (*UnfenceBrokerRecord) Kind() Kind      { return KindUnfenceBroker }
func (*ControlledShutdownRecord) Kind() Kind { return KindControlledShutdown }
func (*TopicRecord) Kind() Kind              { return KindTopic }
func (*PartitionRecord) Kind() Kind          { return KindPartition }
func (*PartitionChangeRecord) Kind() Kind    { return KindPartitionChange }
func (*RemoveTopicRecord) Kind() Kind        { return KindRemoveTopic }
func (*ConfigRecord) Kind() Kind             { return KindConfig }
func (*ProducerIDsRecord) Kind() Kind        { return KindProducerIDs }
func (*AccessControlEntryRecord) Kind() Kind { return KindACL }
func (*RemoveAccessControlEntryRecord) Kind() Kind {
	return KindRemoveACL
}
func (*UserScramCredentialRecord) Kind() Kind { return KindScramCredential }
func (*RemoveUserScramCredentialRecord) Kind() Kind {
	return KindRemoveScram
}
func (*ClientQuotaRecord) Kind() Kind { return KindClientQuota }

// newRecord returns an empty record of a kind, or nil for an unknown one.
func newRecord(k Kind) Record {
	switch k {
	case KindRegisterBroker:
		return new(RegisterBrokerRecord)
	case KindUnregisterBroker:
		return new(UnregisterBrokerRecord)
	case KindFenceBroker:
		return new(FenceBrokerRecord)
	case KindUnfenceBroker:
		return new(UnfenceBrokerRecord)
	case KindControlledShutdown:
		return new(ControlledShutdownRecord)
	case KindTopic:
		return new(TopicRecord)
	case KindPartition:
		return new(PartitionRecord)
	case KindPartitionChange:
		return new(PartitionChangeRecord)
	case KindRemoveTopic:
		return new(RemoveTopicRecord)
	case KindConfig:
		return new(ConfigRecord)
	case KindProducerIDs:
		return new(ProducerIDsRecord)
	case KindACL:
		return new(AccessControlEntryRecord)
	case KindRemoveACL:
		return new(RemoveAccessControlEntryRecord)
	case KindScramCredential:
		return new(UserScramCredentialRecord)
	case KindRemoveScram:
		return new(RemoveUserScramCredentialRecord)
	case KindClientQuota:
		return new(ClientQuotaRecord)
	case KindFeatureLevel:
		return new(FeatureLevelRecord)
	}
	return nil
}

// The String forms are for logs and tests: one line, stable field order.

func (r *RegisterBrokerRecord) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "register-broker id=%d epoch=%d incarnation=%s", r.ID, r.Epoch, TopicID(r.Incarnation))
	for _, e := range r.Endpoints {
		fmt.Fprintf(&b, " endpoint=%s://%s:%d/%d", e.Listener, e.Host, e.Port, e.SecurityProtocol)
	}
	if r.Rack != "" {
		fmt.Fprintf(&b, " rack=%s", r.Rack)
	}
	if r.Fenced {
		b.WriteString(" fenced")
	}
	if r.InControlledShutdown {
		b.WriteString(" shutting-down")
	}
	return b.String()
}

func brokerEpochString(name string, id int32, epoch int64) string {
	return fmt.Sprintf("%s id=%d epoch=%d", name, id, epoch)
}

func (r *UnregisterBrokerRecord) String() string {
	return brokerEpochString("unregister-broker", r.ID, r.Epoch)
}
func (r *FenceBrokerRecord) String() string { return brokerEpochString("fence-broker", r.ID, r.Epoch) }
func (r *UnfenceBrokerRecord) String() string {
	return brokerEpochString("unfence-broker", r.ID, r.Epoch)
}
func (r *ControlledShutdownRecord) String() string {
	return brokerEpochString("controlled-shutdown", r.ID, r.Epoch)
}

func (r *TopicRecord) String() string { return fmt.Sprintf("topic name=%s id=%s", r.Name, r.ID) }

func (r *PartitionRecord) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "partition topic=%s p=%d replicas=%s isr=%s leader=%d leader_epoch=%d partition_epoch=%d",
		r.TopicID, r.Partition, FormatIDs(r.Replicas), FormatIDs(r.ISR), r.Leader, r.LeaderEpoch, r.PartitionEpoch)
	if len(r.Adding) > 0 || len(r.Removing) > 0 {
		fmt.Fprintf(&b, " adding=%s removing=%s", FormatIDs(r.Adding), FormatIDs(r.Removing))
	}
	if r.LeaderRecovery == Recovering {
		b.WriteString(" recovering")
	}
	return b.String()
}

func (r *PartitionChangeRecord) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "partition-change topic=%s p=%d", r.TopicID, r.Partition)
	r.formatFields(&b)
	return b.String()
}

// formatFields writes the changed fields of a PartitionChange.
func (r *PartitionChangeRecord) formatFields(b *strings.Builder) {
	if r.Leader != NoLeaderChange {
		fmt.Fprintf(b, " leader=%d", r.Leader)
	}
	lists := []struct {
		name string
		ids  []int32
	}{{"isr", r.ISR}, {"replicas", r.Replicas}, {"adding", r.Adding}, {"removing", r.Removing}}
	for _, l := range lists {
		if l.ids != nil {
			fmt.Fprintf(b, " %s=%s", l.name, FormatIDs(l.ids))
		}
	}
	if r.LeaderRecovery != NoRecoveryChange {
		fmt.Fprintf(b, " recovery=%d", r.LeaderRecovery)
	}
	fmt.Fprintf(b, " leader_epoch=%d partition_epoch=%d", r.LeaderEpoch, r.PartitionEpoch)
}

// FormatChange formats a PartitionChangeRecord naming its topic, for logs and
// transcripts that know the name.
func FormatChange(topic string, r *PartitionChangeRecord) string {
	var b strings.Builder
	fmt.Fprintf(&b, "partition-change %s-%d", topic, r.Partition)
	r.formatFields(&b)
	return b.String()
}

func (r *RemoveTopicRecord) String() string { return fmt.Sprintf("remove-topic id=%s", r.ID) }

func (r *ConfigRecord) String() string {
	if r.Delete {
		return fmt.Sprintf("config %s=%q delete %s", r.Resource, r.Name, r.Key)
	}
	return fmt.Sprintf("config %s=%q set %s=%s", r.Resource, r.Name, r.Key, r.Value)
}

func (r *FeatureLevelRecord) String() string {
	return fmt.Sprintf("feature-level %s=%d", r.Name, r.Level)
}

func (r *ProducerIDsRecord) String() string {
	return fmt.Sprintf("producer-ids broker=%d epoch=%d next=%d", r.BrokerID, r.BrokerEpoch, r.Next)
}

// FormatIDs formats a list of broker ids as [1,2,3].
func FormatIDs(ids []int32) string {
	var b strings.Builder
	b.WriteByte('[')
	for i, id := range ids {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprint(&b, id)
	}
	b.WriteByte(']')
	return b.String()
}

// AccessControlEntryRecord adds an ACL: Kafka's record of the same name.
// The codes are Kafka's (internal/authz names them): ResourceType TOPIC
// (2) to USER (7), PatternType LITERAL (3) or PREFIXED (4), Operation
// ALL (2) to TWO_PHASE_COMMIT (15), PermissionType DENY (2) or ALLOW
// (3). Principal is "Type:name" ("User:*" for everyone), Host an address
// or "*". ID is the controller's random id of the ACL; no two ACLs of an
// image share an id or all their other fields.
type AccessControlEntryRecord struct {
	ID             [16]byte
	ResourceType   int8
	ResourceName   string
	PatternType    int8
	Principal      string
	Host           string
	Operation      int8
	PermissionType int8
}

// RemoveAccessControlEntryRecord removes the ACL of an id.
type RemoveAccessControlEntryRecord struct {
	ID [16]byte
}

// SCRAM mechanisms, with Kafka's numbering (the ScramMechanism type of
// AlterUserScramCredentials).
const (
	ScramSHA256 int8 = 1
	ScramSHA512 int8 = 2
)

// ScramMechanismName is a mechanism's SASL name, "" for an unknown one.
func ScramMechanismName(m int8) string {
	switch m {
	case ScramSHA256:
		return "SCRAM-SHA-256"
	case ScramSHA512:
		return "SCRAM-SHA-512"
	}
	return ""
}

// ScramMechanismByName is the number of a mechanism's SASL name.
func ScramMechanismByName(name string) (int8, bool) {
	switch name {
	case "SCRAM-SHA-256":
		return ScramSHA256, true
	case "SCRAM-SHA-512":
		return ScramSHA512, true
	}
	return 0, false
}

// SCRAM iteration bounds: Kafka's minimum for both mechanisms, and the
// most AlterUserScramCredentials accepts.
const (
	ScramMinIterations = 4096
	ScramMaxIterations = 16384
)

// UserScramCredentialRecord sets a user's SCRAM credential for one
// mechanism (Kafka's record of the same name): the salt, the iteration
// count, and the stored and server keys of RFC 5802 derived from the
// salted password. The password and the salted password are never kept.
type UserScramCredentialRecord struct {
	Name       string
	Mechanism  int8
	Salt       []byte
	StoredKey  []byte
	ServerKey  []byte
	Iterations int32
}

// RemoveUserScramCredentialRecord removes a user's credential for one
// mechanism.
type RemoveUserScramCredentialRecord struct {
	Name      string
	Mechanism int8
}

// ClientQuotaRecord sets (or, with Remove, removes) one quota of a client
// quota entity: Kafka's record of the same name, whose entity list of
// (type, nullable name) pairs is a QuotaEntity here.
type ClientQuotaRecord struct {
	Entity QuotaEntity
	Key    string
	Value  float64
	Remove bool
}

// QuotaEntity names what a client quota applies to: a user, a client id,
// a user and a client id, or an IP address. Each part is absent, a name,
// or the <default> (a null name on the wire). It is comparable: use it as
// a map key.
type QuotaEntity struct {
	User     QuotaName
	ClientID QuotaName
	IP       QuotaName
}

// QuotaName is one part of a QuotaEntity.
type QuotaName struct {
	Present bool   // the entity has this part
	Default bool   // the part is <default>; Name is then ""
	Name    string // the user, client id or IP address
}

// Named returns the part naming s.
func Named(s string) QuotaName { return QuotaName{Present: true, Name: s} }

// DefaultName is the <default> part.
var DefaultName = QuotaName{Present: true, Default: true}

// Quota entity types as Kafka spells them.
const (
	QuotaUser     = "user"
	QuotaClientID = "client-id"
	QuotaIP       = "ip"
)

// Parts calls fn for each present part, in the order user, client-id,
// ip, with Kafka's entity type name.
func (e QuotaEntity) Parts(fn func(entityType string, n QuotaName)) {
	for _, p := range [...]struct {
		t string
		n QuotaName
	}{{QuotaUser, e.User}, {QuotaClientID, e.ClientID}, {QuotaIP, e.IP}} {
		if p.n.Present {
			fn(p.t, p.n)
		}
	}
}

// String formats the entity as kafka-configs does, e.g.
// "user=alice,client-id=<default>".
func (e QuotaEntity) String() string {
	var b strings.Builder
	e.Parts(func(t string, n QuotaName) {
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(t + "=")
		if n.Default {
			b.WriteString("<default>")
		} else {
			b.WriteString(n.Name)
		}
	})
	return b.String()
}

func (r *AccessControlEntryRecord) String() string {
	return fmt.Sprintf("acl id=%s resource=%d:%q pattern=%d principal=%q host=%q operation=%d permission=%d",
		TopicID(r.ID), r.ResourceType, r.ResourceName, r.PatternType, r.Principal, r.Host, r.Operation, r.PermissionType)
}

func (r *RemoveAccessControlEntryRecord) String() string {
	return fmt.Sprintf("remove-acl id=%s", TopicID(r.ID))
}

func (r *UserScramCredentialRecord) String() string {
	return fmt.Sprintf("scram-credential user=%q mechanism=%d iterations=%d salt=%d bytes", r.Name, r.Mechanism, r.Iterations, len(r.Salt))
}

func (r *RemoveUserScramCredentialRecord) String() string {
	return fmt.Sprintf("remove-scram-credential user=%q mechanism=%d", r.Name, r.Mechanism)
}

func (r *ClientQuotaRecord) String() string {
	if r.Remove {
		return fmt.Sprintf("client-quota %s remove %s", r.Entity, r.Key)
	}
	return fmt.Sprintf("client-quota %s set %s=%s", r.Entity, r.Key, strconv.FormatFloat(r.Value, 'f', -1, 64))
}
