package sharegroup

import (
	"time"

	"weir/internal/share"
)

// Config is the broker side of share groups: Kafka's group.share.*
// broker settings (the defaults and bounds of the share.* group configs)
// and the share coordinator's own. A zero field takes Kafka 4.3's value.
// weir's server.properties has no entries for these yet; they are set in
// code (tests shorten the lock bounds, for example).
type Config struct {
	// RecordLockDuration is group.share.record.lock.duration.ms (30 s);
	// MinRecordLockDuration and MaxRecordLockDuration bound the group
	// config share.record.lock.duration.ms (15 s and 60 s).
	RecordLockDuration    time.Duration
	MinRecordLockDuration time.Duration
	MaxRecordLockDuration time.Duration
	// DeliveryCountLimit is group.share.delivery.count.limit (5), within
	// group.share.min/max.delivery.count.limit (2 and 10).
	DeliveryCountLimit    int16
	MinDeliveryCountLimit int16
	MaxDeliveryCountLimit int16
	// PartitionMaxRecordLocks is group.share.partition.max.record.locks
	// (2000), within group.share.min/max.partition.max.record.locks (100
	// and 4000).
	PartitionMaxRecordLocks    int32
	MinPartitionMaxRecordLocks int32
	MaxPartitionMaxRecordLocks int32
	// SessionTimeout is group.share.session.timeout.ms (45 s), within
	// group.share.min/max.session.timeout.ms (45 s and 60 s).
	SessionTimeout    time.Duration
	MinSessionTimeout time.Duration
	MaxSessionTimeout time.Duration
	// HeartbeatInterval is group.share.heartbeat.interval.ms (5 s), within
	// group.share.min/max.heartbeat.interval.ms (5 s and 15 s).
	HeartbeatInterval    time.Duration
	MinHeartbeatInterval time.Duration
	MaxHeartbeatInterval time.Duration
	// MaxGroupSize is group.share.max.size (200 members).
	MaxGroupSize int
	// MaxSessions is group.share.max.share.sessions (2000).
	MaxSessions int
	// AutoOffsetReset is the value of share.auto.offset.reset for groups
	// that do not set it: Kafka has no broker setting for it and starts
	// at "latest"; this lets a whole broker default to another strategy.
	AutoOffsetReset string
	// StatePartitions is the partition count of __share_group_state when
	// the broker creates it; 0 means 1 on a single node and Kafka's
	// share.coordinator.state.topic.num.partitions, 50, in a cluster.
	StatePartitions int32
	// SnapshotEvery is share.coordinator.snapshot.update.records.per.
	// snapshot (500): a share partition writes its whole state after this
	// many deltas, so that a restart replays at most that many.
	SnapshotEvery int
	// StateLogRecords is how many records __share_group_state may hold
	// per partition before the coordinator rewrites stale snapshots and
	// drops the records no share partition needs any more; the broker
	// hands it to internal/sharestate, whose default (DefaultLogRecords)
	// 0 stands for.
	StateLogRecords int64
	// DeferredFlush is how long a share partition gathers the state
	// changes of acknowledgements whose durability a ShareFetch deferred
	// (wiretag.ShareFetchDeferAcks) before writing them as one record
	// (groupcommit.go): 5 ms; negative writes each at once.
	DeferredFlush time.Duration
}

func (c Config) withDefaults() Config {
	durs := []struct {
		v *time.Duration
		d time.Duration
	}{
		{&c.RecordLockDuration, share.DefaultRecordLockDuration},
		{&c.MinRecordLockDuration, 15 * time.Second},
		{&c.MaxRecordLockDuration, 60 * time.Second},
		{&c.SessionTimeout, share.DefaultSessionTimeout},
		{&c.MinSessionTimeout, 45 * time.Second},
		{&c.MaxSessionTimeout, 60 * time.Second},
		{&c.HeartbeatInterval, share.DefaultHeartbeatInterval},
		{&c.MinHeartbeatInterval, 5 * time.Second},
		{&c.MaxHeartbeatInterval, 15 * time.Second},
	}
	for _, d := range durs {
		if *d.v <= 0 {
			*d.v = d.d
		}
	}
	if c.DeliveryCountLimit <= 0 {
		c.DeliveryCountLimit = share.DefaultDeliveryCountLimit
	}
	if c.MinDeliveryCountLimit <= 0 {
		c.MinDeliveryCountLimit = 2
	}
	if c.MaxDeliveryCountLimit <= 0 {
		c.MaxDeliveryCountLimit = 10
	}
	if c.PartitionMaxRecordLocks <= 0 {
		c.PartitionMaxRecordLocks = share.DefaultMaxRecordLocks
	}
	if c.MinPartitionMaxRecordLocks <= 0 {
		c.MinPartitionMaxRecordLocks = 100
	}
	if c.MaxPartitionMaxRecordLocks <= 0 {
		c.MaxPartitionMaxRecordLocks = 4000
	}
	if c.MaxGroupSize <= 0 {
		c.MaxGroupSize = share.DefaultMaxGroupSize
	}
	if c.MaxSessions <= 0 {
		c.MaxSessions = 2000
	}
	if c.AutoOffsetReset == "" {
		c.AutoOffsetReset = "latest"
	}
	if c.SnapshotEvery <= 0 {
		c.SnapshotEvery = 500
	}
	if c.DeferredFlush == 0 {
		c.DeferredFlush = 5 * time.Millisecond
	}
	return c
}
