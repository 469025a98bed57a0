package log

import (
	"math"
	"time"
)

// Config holds the per-partition log settings, named after the Kafka topic
// configs they implement. The zero value is not valid: start from
// DefaultConfig.
type Config struct {
	SegmentBytes       int64         // segment.bytes: roll when the active segment would pass this size
	SegmentTime        time.Duration // segment.ms: roll when the active segment is this old
	IndexIntervalBytes int           // index.interval.bytes: bytes between sparse index entries
	MaxMessageBytes    int           // max.message.bytes: largest batch accepted
	LogAppendTime      bool          // message.timestamp.type=LogAppendTime
	TimestampBeforeMax time.Duration // message.timestamp.before.max.ms; negative = unbounded
	TimestampAfterMax  time.Duration // message.timestamp.after.max.ms; negative = unbounded
	RetentionTime      time.Duration // retention.ms; negative = keep forever
	RetentionBytes     int64         // retention.bytes; negative = unbounded
	FlushMessages      int64         // flush.messages: fsync once this many messages are unflushed
	FlushInterval      time.Duration // flush.ms: fsync at least this often
	// SyncBeforeAck makes durability part of the acknowledgement: callers
	// wait in WaitDurable, and concurrent waiters share one fsync (group
	// commit).
	SyncBeforeAck bool
	// BackgroundSync fsyncs unsynced data about once a second in the
	// background (weir's default). Off, the log fsyncs only on a segment
	// seal, flush.ms, flush.messages, a WaitDurable caller, Flush and
	// Close, as Kafka does (weir.background.sync=false).
	BackgroundSync bool
	// Preallocate reserves the active segment's disk blocks ahead of its
	// end once it holds 1 MiB (as much as it holds, at most 16 MiB), so
	// that appends do not wait for the filesystem to allocate blocks while
	// writeback holds the file (weir.preallocate). Sealed segments give
	// the rest back. It also writes zeros up to 128 KiB ahead of the end
	// once the segment holds 128 KiB (segment.go, fill). Kafka's own
	// preallocate (whole segments) is a different, unhonoured setting.
	Preallocate bool
	// FileDeleteDelay is how long files of a deleted segment stay open so
	// that reads already holding their ranges can finish
	// (file.delete.delay.ms).
	FileDeleteDelay time.Duration
	// Compact is cleanup.policy containing compact: appends of records
	// without a key are refused, and the log cleaner keeps the latest
	// record per key under the Cleaning settings (compact.go).
	Compact  bool
	Cleaning Cleaning
}

// DefaultConfig returns Kafka's defaults for the settings above.
func DefaultConfig() Config {
	return Config{
		SegmentBytes:       1 << 30,
		SegmentTime:        7 * 24 * time.Hour,
		IndexIntervalBytes: 4096,
		MaxMessageBytes:    1048588,
		TimestampBeforeMax: -1,
		TimestampAfterMax:  time.Hour,
		RetentionTime:      7 * 24 * time.Hour,
		RetentionBytes:     -1,
		FlushMessages:      math.MaxInt64,
		FlushInterval:      -1,
		BackgroundSync:     true,
		Preallocate:        true,
		FileDeleteDelay:    time.Minute,
		Cleaning:           DefaultCleaning(),
	}
}

func (c *Config) rules() ValidationRules {
	return ValidationRules{
		MaxBatchBytes:      c.MaxMessageBytes,
		LogAppendTime:      c.LogAppendTime,
		TimestampBeforeMax: c.TimestampBeforeMax,
		TimestampAfterMax:  c.TimestampAfterMax,
	}
}
