package config

import (
	"maps"
	"slices"
	"time"

	"weir/internal/log"
)

// Topic is a topic's effective configuration: the broker's defaults with
// the topic's overrides applied. It is immutable.
type Topic struct {
	values    map[string]Value
	overrides map[string]string
}

// Topic resolves a topic's overrides (as stored: name to raw value)
// against this broker's defaults. Overrides are normally validated when
// set (ValidateTopicOverrides); one that no longer validates yields an
// INVALID_CONFIG error naming it.
func (b *Broker) Topic(overrides map[string]string) (*Topic, error) {
	values, e := b.topicValues(overrides)
	if e != nil {
		return nil, e
	}
	return &Topic{values: values, overrides: maps.Clone(overrides)}, nil
}

// topicValues applies LogConfig.validate's checks, in Kafka's order:
// names first, then each value in definition order, then the rules that
// span keys.
func (b *Broker) topicValues(overrides map[string]string) (map[string]Value, *Error) {
	for _, name := range slices.Sorted(maps.Keys(overrides)) {
		if _, ok := topicDefs.get(name); !ok {
			return nil, invalidConfig("Unknown topic config name: " + name)
		}
	}
	values := make(map[string]Value, len(topicDefs.list))
	for _, d := range topicDefs.list {
		raw, ok := overrides[d.Name]
		if !ok {
			values[d.Name] = b.topicDefault(d.Name)
			continue
		}
		v, msg := d.parse(raw)
		if msg != "" {
			return nil, invalidConfig(msg)
		}
		values[d.Name] = v
	}
	if lo, hi := values[MinCompactionLagMs].i, values[MaxCompactionLagMs].i; lo > hi {
		return nil, invalidConfig("conflict topic config setting " + MinCompactionLagMs + " (" + itoa(lo) + ") > " + MaxCompactionLagMs + " (" + itoa(hi) + ")")
	}
	if values[RemoteStorageEnable].b {
		// weir has no tiered storage, which is Kafka's answer when the
		// cluster has it switched off.
		return nil, invalidConfig("Tiered Storage functionality is disabled in the broker. Topic cannot be configured with remote log storage.")
	}
	return values, nil
}

// ValidateTopicOverrides checks a topic's complete set of overrides as
// the controller does before storing them (CreateTopics, AlterConfigs,
// IncrementalAlterConfigs): INVALID_CONFIG naming the first unknown name,
// the first bad value with its constraint, or a conflict between keys.
func (b *Broker) ValidateTopicOverrides(overrides map[string]string) *Error {
	_, e := b.topicValues(overrides)
	return e
}

// Value returns a topic config's effective value; false for unknown names.
func (t *Topic) Value(name string) (Value, bool) {
	v, ok := t.values[name]
	return v, ok
}

// Overrides returns a copy of the topic's own settings.
func (t *Topic) Overrides() map[string]string { return maps.Clone(t.overrides) }

// Delete reports whether cleanup.policy contains delete: only then do
// retention.ms and retention.bytes remove data.
func (t *Topic) Delete() bool { return slices.Contains(t.values[CleanupPolicy].list, "delete") }

// Compact reports whether cleanup.policy contains compact: the log
// cleaner keeps the latest record of each key, and records without a key
// are refused.
func (t *Topic) Compact() bool { return slices.Contains(t.values[CleanupPolicy].list, "compact") }

// MinInsyncReplicas is min.insync.replicas.
func (t *Topic) MinInsyncReplicas() int { return int(t.values[MinInsyncReplicas].i) }

// UncleanLeaderElection is unclean.leader.election.enable.
func (t *Topic) UncleanLeaderElection() bool { return t.values[UncleanLeaderElection].b }

// CompressionType is compression.type as configured. weir never
// recompresses: batches are stored and served exactly as the producer
// compressed them, whatever this says.
func (t *Topic) CompressionType() string { return t.values[CompressionType].s }

// LogConfig maps the topic's settings onto the partition log. Settings
// too large for a time.Duration, Kafka's "forever" defaults among them,
// become the log's "unbounded" (-1). Without delete in cleanup.policy the
// log keeps everything, as Kafka does not apply retention to such topics.
// With compact and max.compaction.lag.ms below segment.ms, the active
// segment rolls by the lag so that the cleaner can reach it in time
// (Kafka's LogConfig.maxSegmentMs).
func (t *Topic) LogConfig() log.Config {
	v := t.values
	c := log.Config{
		SegmentBytes:       v[SegmentBytes].i,
		SegmentTime:        msDuration(v[SegmentMs].i),
		IndexIntervalBytes: int(v[IndexIntervalBytes].i),
		MaxMessageBytes:    int(v[MaxMessageBytes].i),
		LogAppendTime:      v[MessageTimestampType].s == "LogAppendTime",
		TimestampBeforeMax: boundedMs(v[MessageTimestampBeforeMs].i),
		TimestampAfterMax:  boundedMs(v[MessageTimestampAfterMs].i),
		RetentionTime:      boundedMs(v[RetentionMs].i),
		RetentionBytes:     v[RetentionBytes].i,
		FlushMessages:      v[FlushMessages].i,
		FlushInterval:      boundedMs(v[FlushMs].i),
		SyncBeforeAck:      v[SyncBeforeAck].b,
		BackgroundSync:     v[BackgroundSync].b,
		Preallocate:        v[Preallocate].b,
		FileDeleteDelay:    msDuration(v[FileDeleteDelayMs].i),
		Compact:            t.Compact(),
		Cleaning: log.Cleaning{
			DeleteRetention:   msDuration(v[DeleteRetentionMs].i),
			MinCompactionLag:  msDuration(v[MinCompactionLagMs].i),
			MaxCompactionLag:  boundedMs(v[MaxCompactionLagMs].i),
			MinCleanableRatio: v[MinCleanableDirtyRatio].f,
		},
	}
	if !t.Delete() {
		c.RetentionTime, c.RetentionBytes = -1, -1
	}
	if lag := c.Cleaning.MaxCompactionLag; c.Compact && lag > 0 && lag < c.SegmentTime {
		c.SegmentTime = lag
	}
	return c
}

// boundedMs is a millisecond limit where negative or too large to
// represent means unbounded (-1).
func boundedMs(ms int64) time.Duration {
	if ms < 0 || ms > infiniteMs {
		return -1
	}
	return time.Duration(ms) * time.Millisecond
}
