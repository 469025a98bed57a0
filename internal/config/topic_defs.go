package config

import (
	"math"
	"time"
)

// Topic config names that weir acts on.
const (
	SegmentBytes             = "segment.bytes"
	SegmentMs                = "segment.ms"
	FlushMessages            = "flush.messages"
	FlushMs                  = "flush.ms"
	RetentionBytes           = "retention.bytes"
	RetentionMs              = "retention.ms"
	MaxMessageBytes          = "max.message.bytes"
	IndexIntervalBytes       = "index.interval.bytes"
	FileDeleteDelayMs        = "file.delete.delay.ms"
	CleanupPolicy            = "cleanup.policy"
	UncleanLeaderElection    = "unclean.leader.election.enable"
	MinInsyncReplicas        = "min.insync.replicas"
	CompressionType          = "compression.type"
	MessageTimestampType     = "message.timestamp.type"
	MessageTimestampBeforeMs = "message.timestamp.before.max.ms"
	MessageTimestampAfterMs  = "message.timestamp.after.max.ms"
	RemoteStorageEnable      = "remote.storage.enable"
	MinCompactionLagMs       = "min.compaction.lag.ms"
	MaxCompactionLagMs       = "max.compaction.lag.ms"
	DeleteRetentionMs        = "delete.retention.ms"
	MinCleanableDirtyRatio   = "min.cleanable.dirty.ratio"
	// SyncBeforeAck is weir's own: fsync (with group commit) before a
	// produce is acknowledged.
	SyncBeforeAck = "weir.sync.before.ack"
	// BackgroundSync is weir's own: fsync unsynced data about once a
	// second (true), or only when Kafka would (false).
	BackgroundSync = "weir.background.sync"
	// Preallocate is weir's own: reserve the active segment's blocks
	// ahead of its end.
	Preallocate = "weir.preallocate"
)

const (
	msPerMinute = 60 * 1000
	msPerHour   = 60 * msPerMinute
	maxLong     = "9223372036854775807"
)

var compressionTypes = oneOf{"uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"}

func syn(names ...string) []Synonym {
	out := make([]Synonym, len(names))
	for i, n := range names {
		out[i] = Synonym{Name: n}
	}
	return out
}

// topicDefs is Kafka 4.3's LogConfig in definition order, plus weir's
// own topic configs at the end. The Synonyms are ServerTopicConfigSynonyms:
// the broker configs a topic falls back to, highest priority first.
var topicDefs = newDefSet([]Def{
	{Name: SegmentBytes, Type: Int, Default: "1073741824", valid: atLeast(1 << 20), Support: Honoured, Synonyms: syn("log.segment.bytes"),
		Doc: "Roll to a new segment file once the active one would grow past this many bytes."},
	{Name: SegmentMs, Type: Long, Default: "604800000", valid: atLeast(1), Support: Honoured, Synonyms: []Synonym{{Name: "log.roll.ms"}, {Name: "log.roll.hours", Scale: msPerHour}},
		Doc: "Roll to a new segment once the active one is this many milliseconds old, so that retention can delete it."},
	{Name: "segment.jitter.ms", Type: Long, Default: "0", valid: atLeast(0), Support: Stored, Synonyms: []Synonym{{Name: "log.roll.jitter.ms"}, {Name: "log.roll.jitter.hours", Scale: msPerHour}},
		Doc: "Random amount subtracted from segment.ms so that partitions do not all roll at once."},
	{Name: "segment.index.bytes", Type: Int, Default: "10485760", valid: atLeast(4), Support: Stored, Synonyms: syn("log.index.size.max.bytes"),
		Doc: "Largest size of a segment's offset index file; weir grows its indexes as needed."},
	{Name: FlushMessages, Type: Long, Default: maxLong, valid: atLeast(1), Support: Honoured, Synonyms: syn("log.flush.interval.messages"),
		Doc: "Force an fsync once this many messages have been appended since the last one."},
	{Name: FlushMs, Type: Long, Default: maxLong, valid: atLeast(0), Support: Honoured, Synonyms: syn("log.flush.interval.ms", "log.flush.scheduler.interval.ms"),
		Doc: "Force an fsync at least this often, in milliseconds."},
	{Name: RetentionBytes, Type: Long, Default: "-1", Support: Honoured, Synonyms: syn("log.retention.bytes"),
		Doc: "Delete the oldest segments while a partition holds more than this many bytes; -1 means no size limit."},
	{Name: RetentionMs, Type: Long, Default: "604800000", valid: atLeast(-1), Support: Honoured, Synonyms: []Synonym{{Name: "log.retention.ms"}, {Name: "log.retention.minutes", Scale: msPerMinute}, {Name: "log.retention.hours", Scale: msPerHour}},
		Doc: "Delete a segment once its newest record is older than this many milliseconds; -1 keeps data forever."},
	{Name: MaxMessageBytes, Type: Int, Default: "1048588", valid: atLeast(0), Support: Honoured, Synonyms: syn("message.max.bytes"),
		Doc: "Largest record batch the partition accepts, after compression."},
	{Name: IndexIntervalBytes, Type: Int, Default: "4096", valid: atLeast(0), Support: Honoured, Synonyms: syn("log.index.interval.bytes"),
		Doc: "Bytes of log between two entries of the sparse offset and time indexes."},
	{Name: DeleteRetentionMs, Type: Long, Default: "86400000", valid: atLeast(0), Support: Honoured, Synonyms: syn("log.cleaner.delete.retention.ms"),
		Doc: "How long a compacted topic keeps a tombstone (and the marker of a transaction whose records are gone) after the cleaning that first kept it."},
	{Name: MinCompactionLagMs, Type: Long, Default: "0", valid: atLeast(0), Support: Honoured, Synonyms: syn("log.cleaner.min.compaction.lag.ms"),
		Doc: "Minimum age of a record before compaction may remove it."},
	{Name: MaxCompactionLagMs, Type: Long, Default: maxLong, valid: atLeast(1), Support: Honoured, Synonyms: syn("log.cleaner.max.compaction.lag.ms"),
		Doc: "Maximum time a record may stay uncompacted: the log is cleaned then whatever its dirty ratio, and its active segment rolls at least this often."},
	{Name: FileDeleteDelayMs, Type: Long, Default: "60000", valid: atLeast(0), Support: Honoured, Synonyms: syn("log.segment.delete.delay.ms"),
		Doc: "How long files of a deleted segment stay open so that reads in flight can finish."},
	{Name: MinCleanableDirtyRatio, Type: Double, Default: "0.5", valid: between(0, 1), Support: Honoured, Synonyms: syn("log.cleaner.min.cleanable.ratio"),
		Doc: "Share of the log not yet compacted past which the cleaner compacts it."},
	{Name: CleanupPolicy, Type: List, Default: "delete", valid: listOf{allowed: oneOf{"compact", "delete"}, emptyOK: true}, Support: Honoured, Synonyms: syn("log.cleanup.policy"),
		Doc: "delete applies retention.ms and retention.bytes; compact keeps the latest record of each key (records without a key are refused); both may be set; an empty list keeps everything."},
	{Name: UncleanLeaderElection, Type: Boolean, Default: "false", Support: Honoured, Synonyms: syn("unclean.leader.election.enable"),
		Doc: "Allow a replica outside the ISR to become leader when no in-sync replica is left, at the cost of losing data."},
	{Name: MinInsyncReplicas, Type: Int, Default: "1", valid: atLeast(1), Support: Honoured, Synonyms: syn("min.insync.replicas"),
		Doc: "Fewest in-sync replicas that must hold a write before an acks=all produce succeeds."},
	{Name: CompressionType, Type: String, Default: "producer", valid: compressionTypes, Support: Stored, Synonyms: syn("compression.type"),
		Doc: "Codec Kafka would recompress to; weir always stores batches as the producer compressed them and reports the configured value."},
	{Name: "compression.gzip.level", Type: Int, Default: "-1", valid: gzipLevel{}, Support: Stored, Synonyms: syn("compression.gzip.level"),
		Doc: "gzip level for broker-side recompression, which weir does not do."},
	{Name: "compression.lz4.level", Type: Int, Default: "9", valid: between(1, 17), Support: Stored, Synonyms: syn("compression.lz4.level"),
		Doc: "lz4 level for broker-side recompression, which weir does not do."},
	{Name: "compression.zstd.level", Type: Int, Default: "3", valid: between(-131072, 22), Support: Stored, Synonyms: syn("compression.zstd.level"),
		Doc: "zstd level for broker-side recompression, which weir does not do."},
	{Name: "preallocate", Type: Boolean, Default: "false", Support: Stored, Synonyms: syn("log.preallocate"),
		Doc: "Preallocate segment files on creation; weir does not."},
	{Name: MessageTimestampType, Type: String, Default: "CreateTime", valid: oneOf{"CreateTime", "LogAppendTime"}, Support: Honoured, Synonyms: syn("log.message.timestamp.type"),
		Doc: "CreateTime keeps producer timestamps; LogAppendTime stamps each batch with the broker clock."},
	{Name: MessageTimestampBeforeMs, Type: Long, Default: maxLong, valid: atLeast(0), Support: Honoured, Synonyms: syn("log.message.timestamp.before.max.ms"),
		Doc: "Reject CreateTime batches whose timestamp is more than this many milliseconds behind the broker clock."},
	{Name: MessageTimestampAfterMs, Type: Long, Default: "3600000", valid: atLeast(0), Support: Honoured, Synonyms: syn("log.message.timestamp.after.max.ms"),
		Doc: "Reject CreateTime batches whose timestamp is more than this many milliseconds ahead of the broker clock."},
	{Name: "leader.replication.throttled.replicas", Type: List, Default: "", valid: throttledReplicas{}, Support: Stored,
		Doc: "Replicas whose leader-side replication is throttled, as partition:broker pairs or *; weir does not throttle."},
	{Name: "follower.replication.throttled.replicas", Type: List, Default: "", valid: throttledReplicas{}, Support: Stored,
		Doc: "Replicas whose follower-side replication is throttled, as partition:broker pairs or *; weir does not throttle."},
	{Name: RemoteStorageEnable, Type: Boolean, Default: "false", Support: Stored,
		Doc: "Tiered storage; weir has none, so true is refused."},
	{Name: "local.retention.ms", Type: Long, Default: "-2", valid: atLeast(-2), Support: Stored, Synonyms: syn("log.local.retention.ms"),
		Doc: "Local retention time under tiered storage; -2 means retention.ms."},
	{Name: "local.retention.bytes", Type: Long, Default: "-2", valid: atLeast(-2), Support: Stored, Synonyms: syn("log.local.retention.bytes"),
		Doc: "Local retention size under tiered storage; -2 means retention.bytes."},
	{Name: "remote.log.copy.disable", Type: Boolean, Default: "false", Support: Stored,
		Doc: "Stop copying segments to tiered storage."},
	{Name: "remote.log.delete.on.disable", Type: Boolean, Default: "false", Support: Stored,
		Doc: "Delete tiered data when tiered storage is turned off for the topic."},
	{Name: SyncBeforeAck, Type: Boolean, Default: "false", Support: Honoured, Synonyms: syn(WeirLogSyncBeforeAck),
		Doc: "weir: fsync before acknowledging a produce; concurrent produces share one fsync (group commit)."},
	{Name: BackgroundSync, Type: Boolean, Default: "true", Support: Honoured, Synonyms: syn(WeirLogBackgroundSync),
		Doc: "weir: fsync data not yet fsynced about once a second in the background. false fsyncs only where Kafka does (segment roll, flush.ms, flush.messages, shutdown): page cache only, for comparisons with Kafka's defaults."},
	{Name: Preallocate, Type: Boolean, Default: "true", Support: Honoured, Synonyms: syn(WeirLogPreallocate),
		Doc: "weir: once the active segment holds 1 MiB, keep as much again (at most 16 MiB) of disk blocks reserved past its end (fallocate, file size unchanged), so that appends do not wait for the filesystem to allocate blocks while writeback holds the file; sealed segments give the rest back. Past 128 KiB it also writes zeros up to 128 KiB ahead of the end, so that small appends overwrite cached pages (the file's size runs ahead of the log; sealing, closing and recovery cut it back). Unlike preallocate, it never reserves a whole segment."},
})

// infiniteMs is the largest millisecond count that still fits a
// time.Duration; longer settings mean "never".
const infiniteMs = math.MaxInt64 / int64(time.Millisecond)
