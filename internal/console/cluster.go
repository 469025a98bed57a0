package console

import (
	"context"
	"time"
)

// Cluster is everything the console reads from and does to a Kafka
// cluster. Each method is one or a few Kafka admin requests sent as any
// client would send them, so the console sees and may do exactly what
// its connection's principal is authorised for. The implementation over
// weir's client is NewKafkaCluster; tests use fakes.
type Cluster interface {
	// Describe is DescribeCluster: the brokers and the controller.
	Describe(ctx context.Context) (ClusterInfo, error)
	// Quorum is DescribeQuorum of the metadata log; ErrNotServed when
	// the brokers do not serve it.
	Quorum(ctx context.Context) (Quorum, error)
	// Topics is Metadata for the named topics (all when none).
	Topics(ctx context.Context, names ...string) ([]Topic, error)
	// Offsets is ListOffsets for every partition of topic at spec
	// (OffsetEarliest, OffsetLatest or a timestamp in ms).
	Offsets(ctx context.Context, topic string, spec int64) (map[int32]int64, error)
	// LogDirs is DescribeLogDirs on one broker for the partitions given
	// (every one it holds when nil): the size of each replica it holds.
	LogDirs(ctx context.Context, broker int32, parts []TP) (map[TP]int64, error)
	// Configs is DescribeConfigs of a topic, with sources.
	Configs(ctx context.Context, topic string) ([]TopicConfig, error)
	// Groups is ListGroups on every broker.
	Groups(ctx context.Context) ([]GroupListing, error)
	// DescribeGroup describes one group with the API of its type
	// (DescribeGroups, ConsumerGroupDescribe or ShareGroupDescribe).
	DescribeGroup(ctx context.Context, g GroupListing) (GroupDetail, error)
	// Committed is OffsetFetch of a classic or consumer group: every
	// committed offset.
	Committed(ctx context.Context, group string) (map[TP]int64, error)
	// ShareOffsets is DescribeShareGroupOffsets of a share group.
	ShareOffsets(ctx context.Context, group string) (map[TP]ShareOffset, error)
	// Records fetches up to q.Limit records of one partition from
	// q.Offset.
	Records(ctx context.Context, q RecordQuery) ([]Record, error)
	// Produce writes one record (acks=all) and returns where it went.
	Produce(ctx context.Context, r ProduceRecord) (partition int32, offset int64, err error)

	CreateTopic(ctx context.Context, s TopicSpec) error
	DeleteTopic(ctx context.Context, name string) error
	// AlterConfig sets (value non-nil) or deletes one topic config
	// (IncrementalAlterConfigs).
	AlterConfig(ctx context.Context, topic, name string, value *string) error
	// CommitOffsets sets a group's committed offsets (OffsetCommit as a
	// non-member; the coordinator refuses it while the group has
	// members).
	CommitOffsets(ctx context.Context, group string, offsets map[TP]int64) error
	// AlterShareOffsets sets a share group's start offsets
	// (AlterShareGroupOffsets; refused while it has members).
	AlterShareOffsets(ctx context.Context, group string, offsets map[TP]int64) error
	// ElectPreferred runs a preferred leader election (ElectLeaders) on
	// the partitions given, or on every partition when none.
	ElectPreferred(ctx context.Context, parts []TP) (map[TP]error, error)
	// Reassign moves partitions to new replica lists
	// (AlterPartitionAssignments); a nil list cancels a reassignment.
	Reassign(ctx context.Context, moves map[TP][]int32) (map[TP]error, error)
	// Reassignments lists reassignments in progress.
	Reassignments(ctx context.Context) ([]Reassignment, error)
}

// Offset specs for Cluster.Offsets, as on the wire.
const (
	OffsetLatest   int64 = -1
	OffsetEarliest int64 = -2
)

// TP names a partition.
type TP struct {
	Topic     string
	Partition int32
}

// ClusterInfo is DescribeCluster's answer.
type ClusterInfo struct {
	ID         string
	Controller int32
	Brokers    []Broker
}

// Broker is one registered broker.
type Broker struct {
	ID     int32
	Host   string
	Port   int32
	Rack   string
	Fenced bool
}

// Quorum is the metadata quorum as DescribeQuorum tells it.
type Quorum struct {
	Leader        int32
	Epoch         int32
	HighWatermark int64
	Voters        []QuorumReplica
	Observers     []QuorumReplica
}

// QuorumReplica is one voter or observer of the metadata log.
type QuorumReplica struct {
	ID     int32
	LogEnd int64
	// LastCaughtUp is when it last had the leader's log end (zero:
	// unknown).
	LastCaughtUp time.Time
}

// Topic is one topic from Metadata.
type Topic struct {
	Name       string
	ID         [16]byte
	Internal   bool
	Partitions []Partition
	Err        error
}

// Partition is one partition from Metadata.
type Partition struct {
	ID          int32
	Leader      int32
	LeaderEpoch int32
	Replicas    []int32
	ISR         []int32
	Offline     []int32
	Err         error
}

// UnderReplicated says whether the ISR misses a replica.
func (p Partition) UnderReplicated() bool { return len(p.ISR) < len(p.Replicas) }

// OfflinePartition says whether the partition has no leader.
func (p Partition) OfflinePartition() bool { return p.Leader < 0 }

// TopicConfig is one described topic config.
type TopicConfig struct {
	Name      string
	Value     *string
	Source    string // Kafka's source name: DYNAMIC_TOPIC_CONFIG, DEFAULT_CONFIG, ...
	ReadOnly  bool
	Sensitive bool
}

// Group types as ListGroups v5 names them.
const (
	GroupClassic  = "classic"
	GroupConsumer = "consumer"
	GroupShare    = "share"
)

// GroupListing is one group from ListGroups.
type GroupListing struct {
	ID           string
	Type         string
	ProtocolType string
	State        string
	Coordinator  int32
}

// GroupDetail describes a group.
type GroupDetail struct {
	GroupListing
	Protocol string // classic: the assignor chosen
	Epoch    int32  // consumer and share groups
	Assignor string
	Members  []Member
}

// Member is one group member with its assignment.
type Member struct {
	ID, ClientID, Host string
	InstanceID         string
	Epoch              int32
	Assigned           []TP
	Target             []TP // KIP-848: where the member is going
}

// ShareOffset is one share partition's state from
// DescribeShareGroupOffsets.
type ShareOffset struct {
	StartOffset int64
	Lag         int64 // -1: unknown
	Err         error
}

// RecordQuery selects records of one partition.
type RecordQuery struct {
	Topic     string
	Partition int32
	Offset    int64
	Limit     int
}

// Record is one fetched record.
type Record struct {
	Partition int32
	Offset    int64
	Timestamp time.Time
	Key       []byte // nil: null key
	Value     []byte // nil: null value (a tombstone)
	Headers   []Header
}

// Header is one record header.
type Header struct {
	Key   string
	Value []byte
}

// ProduceRecord is a record to produce; Partition -1 lets the
// partitioner choose.
type ProduceRecord struct {
	Topic     string
	Partition int32
	Key       []byte
	Value     []byte
	Headers   []Header
}

// TopicSpec is a topic to create; -1 takes the broker's defaults.
type TopicSpec struct {
	Name              string
	Partitions        int32
	ReplicationFactor int16
	Configs           map[string]string
}

// Reassignment is one partition move in progress.
type Reassignment struct {
	TP
	Replicas, Adding, Removing []int32
}
