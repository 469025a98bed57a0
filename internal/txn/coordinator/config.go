package coordinator

import (
	"errors"
	"log/slog"
	"time"

	"weir/internal/clock"
	"weir/internal/txn"
)

// Config configures a Coordinator. Zero fields take Kafka's defaults,
// named after the broker config each one is.
type Config struct {
	Host   Host // required
	Logger *slog.Logger
	Clock  clock.Clock

	// Shards is the number of owner goroutines the __transaction_state
	// partitions led here are spread over (partition i goes to shard
	// i % Shards). Default 4.
	Shards int

	// MaxTimeout is transaction.max.timeout.ms (15 min).
	MaxTimeout time.Duration
	// IDExpiration is transactional.id.expiration.ms (7 days).
	IDExpiration time.Duration
	// Version is the cluster's transaction.version feature level (2).
	Version txn.Version
	// AbortInterval is
	// transaction.abort.timed.out.transaction.cleanup.interval.ms (10 s).
	AbortInterval time.Duration
	// ExpirationInterval is
	// transaction.remove.expired.transaction.cleanup.interval.ms (1 h).
	ExpirationInterval time.Duration
	// RequestTimeout bounds one append of state records and one
	// WriteTxnMarkers request: request.timeout.ms (30 s).
	RequestTimeout time.Duration
	// RetryBackoff is how long a marker or a state write that failed
	// waits before it is tried again: retry.backoff.ms (100 ms).
	RetryBackoff time.Duration
}

// Topic defaults: the broker creates __transaction_state with these unless
// configured otherwise, as Kafka does on the first FindCoordinator for a
// transactional id.
const (
	// DefaultTopicPartitions is transaction.state.log.num.partitions.
	DefaultTopicPartitions = 50
	// DefaultTopicReplicationFactor is
	// transaction.state.log.replication.factor (capped at the number of
	// brokers by weir, as for its other internal topics).
	DefaultTopicReplicationFactor = 3
	// DefaultTopicMinISR is transaction.state.log.min.isr.
	DefaultTopicMinISR = 2
	// DefaultTopicSegmentBytes is transaction.state.log.segment.bytes.
	DefaultTopicSegmentBytes = 100 << 20
)

// TopicConfigs are the configs Kafka forces on __transaction_state
// (besides min.insync.replicas, transaction.state.log.min.isr, and
// segment.bytes).
func TopicConfigs() map[string]string {
	return map[string]string{
		"cleanup.policy":                 "compact",
		"compression.type":               "uncompressed",
		"unclean.leader.election.enable": "false",
	}
}

func (c Config) withDefaults() (Config, error) {
	if c.Host == nil {
		return c, errors.New("coordinator: Config.Host is required")
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Clock == nil {
		c.Clock = clock.System()
	}
	if c.Shards <= 0 {
		c.Shards = 4
	}
	if c.MaxTimeout <= 0 {
		c.MaxTimeout = txn.DefaultMaxTimeoutMs * time.Millisecond
	}
	if c.IDExpiration <= 0 {
		c.IDExpiration = txn.DefaultExpirationMs * time.Millisecond
	}
	if c.Version == 0 {
		c.Version = txn.V2
	}
	if c.AbortInterval <= 0 {
		c.AbortInterval = 10 * time.Second
	}
	if c.ExpirationInterval <= 0 {
		c.ExpirationInterval = time.Hour
	}
	if c.RequestTimeout <= 0 {
		c.RequestTimeout = 30 * time.Second
	}
	if c.RetryBackoff <= 0 {
		c.RetryBackoff = 100 * time.Millisecond
	}
	return c, nil
}

func (c *Config) txnConfig(ids txn.IDSource) txn.Config {
	return txn.Config{
		MaxTimeoutMs: int32(min(c.MaxTimeout.Milliseconds(), 1<<31-1)),
		ExpirationMs: c.IDExpiration.Milliseconds(),
		Version:      c.Version,
		IDs:          ids,
	}
}
