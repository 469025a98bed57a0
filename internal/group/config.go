package group

import (
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"time"

	"weir/internal/streamsgroup"
)

// Assignor names accepted in ConsumerGroupHeartbeat.ServerAssignor.
const (
	AssignorUniform = "uniform"
	AssignorRange   = "range"
)

// Config configures a Coordinator. Zero fields take the Kafka defaults
// noted on each field; Store is required.
type Config struct {
	Logger *slog.Logger // default: discard
	Clock  Clock        // default: SystemClock()
	Store  Store        // required
	Topics Topics       // default: no topics; commits are then not checked

	// PartitionOf is the __consumer_offsets partition a group's records
	// go to. A transaction marker written to a partition resolves the
	// pending transactional offsets of that partition's groups only. nil:
	// every group is taken to share one partition.
	PartitionOf func(group string) int32

	// Partitions are the __consumer_offsets partitions whose groups this
	// coordinator loaded and serves (Serves); nil: every partition.
	Partitions []int32

	// Shards is the number of owner goroutines; groups are hashed over
	// them. Default 8.
	Shards int

	// InitialRebalanceDelay is group.initial.rebalance.delay.ms (3s): how
	// long the first rebalance of an empty classic group waits for more
	// members. Set NoInitialRebalanceDelay to make it zero.
	InitialRebalanceDelay   time.Duration
	NoInitialRebalanceDelay bool
	// MinSessionTimeout and MaxSessionTimeout bound a classic member's
	// session timeout: group.min.session.timeout.ms (6s) and
	// group.max.session.timeout.ms (30m).
	MinSessionTimeout time.Duration
	MaxSessionTimeout time.Duration
	// NewMemberJoinTimeout bounds how long a new classic member may wait in
	// JoinGroup for the rebalance to finish (5m).
	NewMemberJoinTimeout time.Duration
	// MaxGroupSize is group.max.size for classic groups and
	// group.consumer.max.size for consumer groups (unbounded).
	MaxGroupSize int

	// ConsumerHeartbeatInterval is group.consumer.heartbeat.interval.ms (5s).
	ConsumerHeartbeatInterval time.Duration
	// ConsumerSessionTimeout is group.consumer.session.timeout.ms (45s).
	ConsumerSessionTimeout time.Duration
	// DefaultAssignor is the server assignor used when no member names one:
	// the first of group.consumer.assignors ("uniform").
	DefaultAssignor string
	// MetadataRefreshInterval is how often a consumer group heartbeat
	// re-resolves the group's subscribed topics even without a
	// TopicsChanged call (10s).
	MetadataRefreshInterval time.Duration
	// RegexRefreshInterval is group.consumer.regex.refresh.interval.ms
	// (10m): how old a consumer group's regex resolution may grow before
	// a heartbeat resolves the regexes again, with no topic changed
	// (this is when ACL changes reach a group's regexes).
	RegexRefreshInterval time.Duration

	// OffsetMetadataMaxBytes is offset.metadata.max.bytes (4096).
	OffsetMetadataMaxBytes int
	// OffsetsRetention is offsets.retention.minutes (7 days).
	OffsetsRetention time.Duration
	// OffsetsRetentionCheckInterval is
	// offsets.retention.check.interval.ms (10m).
	OffsetsRetentionCheckInterval time.Duration
	// AppendTimeout bounds one Store.Append: offsets.commit.timeout.ms (5s).
	AppendTimeout time.Duration

	// Random fills b with random bytes for member ids. Default crypto/rand.
	Random func(b []byte)

	// Streams holds the group.streams.* settings of streams groups
	// (KIP-1071); zero fields take Kafka's defaults.
	Streams streamsgroup.Config
}

func (c *Config) withDefaults() (Config, error) {
	cfg := *c
	if cfg.Store == nil {
		return cfg, errors.New("group: Config.Store is required")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Clock == nil {
		cfg.Clock = SystemClock()
	}
	if cfg.Topics == nil {
		cfg.Topics = noTopics{}
	}
	setDefault(&cfg.Shards, 8)
	if cfg.NoInitialRebalanceDelay {
		cfg.InitialRebalanceDelay = 0
	} else {
		setDefault(&cfg.InitialRebalanceDelay, 3*time.Second)
	}
	setDefault(&cfg.MinSessionTimeout, 6*time.Second)
	setDefault(&cfg.MaxSessionTimeout, 30*time.Minute)
	setDefault(&cfg.NewMemberJoinTimeout, 5*time.Minute)
	setDefault(&cfg.MaxGroupSize, math.MaxInt32)
	setDefault(&cfg.ConsumerHeartbeatInterval, 5*time.Second)
	setDefault(&cfg.ConsumerSessionTimeout, 45*time.Second)
	setDefault(&cfg.MetadataRefreshInterval, 10*time.Second)
	setDefault(&cfg.RegexRefreshInterval, 10*time.Minute)
	setDefault(&cfg.OffsetMetadataMaxBytes, 4096)
	setDefault(&cfg.OffsetsRetention, 7*24*time.Hour)
	setDefault(&cfg.OffsetsRetentionCheckInterval, 10*time.Minute)
	setDefault(&cfg.AppendTimeout, 5*time.Second)
	if cfg.DefaultAssignor == "" {
		cfg.DefaultAssignor = AssignorUniform
	}
	if !validAssignor(cfg.DefaultAssignor) {
		return cfg, fmt.Errorf("group: unknown default assignor %q", cfg.DefaultAssignor)
	}
	cfg.Streams = cfg.Streams.WithDefaults()
	if cfg.Random == nil {
		cfg.Random = func(b []byte) { _, _ = rand.Read(b) }
	}
	if cfg.MinSessionTimeout > cfg.MaxSessionTimeout {
		return cfg, fmt.Errorf("group: min session timeout %v above max %v", cfg.MinSessionTimeout, cfg.MaxSessionTimeout)
	}
	return cfg, nil
}

func setDefault[T int | time.Duration](v *T, def T) {
	if *v <= 0 {
		*v = def
	}
}

func validAssignor(name string) bool {
	return name == AssignorUniform || name == AssignorRange
}

func ms(d time.Duration) int32 {
	v := d.Milliseconds()
	if v > math.MaxInt32 {
		return math.MaxInt32
	}
	return int32(v)
}

func msDur(v int32) time.Duration { return time.Duration(v) * time.Millisecond }
