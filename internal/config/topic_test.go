package config

import (
	"math"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"weir/internal/log"
)

func TestValidateTopicOverrides(t *testing.T) {
	invalid := kerr.InvalidConfig.Code
	tests := []struct {
		name      string
		overrides map[string]string
		code      int16
		msg       string
	}{
		{"none", nil, 0, ""},
		{"valid", map[string]string{RetentionMs: "1000", CleanupPolicy: "compact,delete", SyncBeforeAck: "true"}, 0, ""},
		{"unknown name", map[string]string{"retention.msx": "1"}, invalid, "Unknown topic config name: retention.msx"},
		{"removed in 4.0", map[string]string{"message.format.version": "3.0"}, invalid, "Unknown topic config name: message.format.version"},
		{"broker name on topic", map[string]string{"log.retention.ms": "1"}, invalid, "Unknown topic config name: log.retention.ms"},
		{"first unknown in name order", map[string]string{"zz": "1", "aa": "1"}, invalid, "Unknown topic config name: aa"},
		{"unknown before bad value", map[string]string{"zz": "1", RetentionMs: "x"}, invalid, "Unknown topic config name: zz"},
		{"wrong type", map[string]string{RetentionMs: "seven days"}, invalid, "Invalid value seven days for configuration retention.ms: Not a number of type LONG"},
		{"out of range", map[string]string{SegmentBytes: "1024"}, invalid, "Invalid value 1024 for configuration segment.bytes: Value must be at least 1048576"},
		{"first bad value in definition order", map[string]string{MinInsyncReplicas: "0", SegmentBytes: "1"}, invalid, "Invalid value 1 for configuration segment.bytes: Value must be at least 1048576"},
		{"compaction lag conflict", map[string]string{MinCompactionLagMs: "10", MaxCompactionLagMs: "5"}, invalid, "conflict topic config setting min.compaction.lag.ms (10) > max.compaction.lag.ms (5)"},
		{"tiered storage", map[string]string{RemoteStorageEnable: "true"}, invalid, "Tiered Storage functionality is disabled in the broker. Topic cannot be configured with remote log storage."},
		{"tiered storage off", map[string]string{RemoteStorageEnable: "false"}, 0, ""},
		{"empty value", map[string]string{FlushMs: ""}, invalid, "Invalid value  for configuration flush.ms: Not a number of type LONG"},
	}
	b := mustBroker(t, nil)
	for _, tt := range tests {
		wantError(t, tt.name, b.ValidateTopicOverrides(tt.overrides), tt.code, tt.msg)
	}
	// The conflict check sees the broker's default too.
	b2 := mustBroker(t, map[string]string{"log.cleaner.max.compaction.lag.ms": "100"})
	wantError(t, "conflict with broker default", b2.ValidateTopicOverrides(map[string]string{MinCompactionLagMs: "101"}),
		invalid, "conflict topic config setting min.compaction.lag.ms (101) > max.compaction.lag.ms (100)")
}

func TestTopicLogConfig(t *testing.T) {
	forever := time.Duration(-1)
	tests := []struct {
		name      string
		broker    map[string]string
		overrides map[string]string
		check     func(c log.Config) bool
	}{
		{"defaults match the log package", nil, nil, func(c log.Config) bool { return c == log.DefaultConfig() }},
		{"retention", nil, map[string]string{RetentionMs: "1500", RetentionBytes: "4096"},
			func(c log.Config) bool { return c.RetentionTime == 1500*time.Millisecond && c.RetentionBytes == 4096 }},
		{"retention forever", nil, map[string]string{RetentionMs: "-1"}, func(c log.Config) bool { return c.RetentionTime == forever }},
		{"retention too long for a duration", nil, map[string]string{RetentionMs: "9223372036854775"},
			func(c log.Config) bool { return c.RetentionTime == forever }},
		{"compact only keeps everything", nil, map[string]string{CleanupPolicy: "compact", RetentionMs: "1000", RetentionBytes: "10"},
			func(c log.Config) bool { return c.RetentionTime == forever && c.RetentionBytes == -1 }},
		{"empty policy keeps everything", nil, map[string]string{CleanupPolicy: ""},
			func(c log.Config) bool { return c.RetentionTime == forever && c.RetentionBytes == -1 }},
		{"segments", nil, map[string]string{SegmentBytes: "2097152", SegmentMs: "60000", IndexIntervalBytes: "0"},
			func(c log.Config) bool {
				return c.SegmentBytes == 2097152 && c.SegmentTime == time.Minute && c.IndexIntervalBytes == 0
			}},
		{"timestamps", nil, map[string]string{MessageTimestampType: "LogAppendTime", MessageTimestampBeforeMs: "1000", MessageTimestampAfterMs: "9223372036854775807"},
			func(c log.Config) bool {
				return c.LogAppendTime && c.TimestampBeforeMax == time.Second && c.TimestampAfterMax == forever
			}},
		{"flush", nil, map[string]string{FlushMessages: "1", FlushMs: "0"},
			func(c log.Config) bool { return c.FlushMessages == 1 && c.FlushInterval == 0 }},
		{"sync before ack from broker", map[string]string{WeirLogSyncBeforeAck: "true"}, nil,
			func(c log.Config) bool { return c.SyncBeforeAck }},
		{"sync before ack topic override wins", map[string]string{WeirLogSyncBeforeAck: "true"}, map[string]string{SyncBeforeAck: "false"},
			func(c log.Config) bool { return !c.SyncBeforeAck }},
		{"preallocate off from broker", map[string]string{WeirLogPreallocate: "false"}, nil,
			func(c log.Config) bool { return !c.Preallocate }},
		{"preallocate topic override wins", map[string]string{WeirLogPreallocate: "false"}, map[string]string{Preallocate: "true"},
			func(c log.Config) bool { return c.Preallocate }},
		{"max message and delete delay", map[string]string{MessageMaxBytes: "100"}, map[string]string{FileDeleteDelayMs: "0"},
			func(c log.Config) bool { return c.MaxMessageBytes == 100 && c.FileDeleteDelay == 0 }},
		{"delete only does not compact", nil, nil, func(c log.Config) bool { return !c.Compact }},
		{"compaction settings", map[string]string{"log.cleaner.min.cleanable.ratio": "0.3"},
			map[string]string{CleanupPolicy: "compact,delete", DeleteRetentionMs: "5000", MinCompactionLagMs: "7000", MaxCompactionLagMs: "9000000"},
			func(c log.Config) bool {
				return c.Compact && c.RetentionTime == 7*24*time.Hour && c.Cleaning == log.Cleaning{DeleteRetention: 5 * time.Second,
					MinCompactionLag: 7 * time.Second, MaxCompactionLag: 9000 * time.Second, MinCleanableRatio: 0.3}
			}},
		{"max compaction lag rolls the active segment", nil, map[string]string{CleanupPolicy: "compact", MaxCompactionLagMs: "60000", SegmentMs: "3600000"},
			func(c log.Config) bool {
				return c.SegmentTime == time.Minute && c.Cleaning.MaxCompactionLag == time.Minute
			}},
		{"max compaction lag above segment.ms", nil, map[string]string{CleanupPolicy: "compact", MaxCompactionLagMs: "7200000", SegmentMs: "3600000"},
			func(c log.Config) bool { return c.SegmentTime == time.Hour }},
		{"max compaction lag without compact", nil, map[string]string{MaxCompactionLagMs: "60000", SegmentMs: "3600000"},
			func(c log.Config) bool { return c.SegmentTime == time.Hour }},
	}
	for _, tt := range tests {
		b := mustBroker(t, tt.broker)
		topic, err := b.Topic(tt.overrides)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if c := topic.LogConfig(); !tt.check(c) {
			t.Errorf("%s: got %+v", tt.name, c)
		}
	}
}

func TestTopicAccessors(t *testing.T) {
	b := mustBroker(t, map[string]string{"min.insync.replicas": "2", "unclean.leader.election.enable": "true"})
	topic, err := b.Topic(map[string]string{CleanupPolicy: "compact,delete", CompressionType: "zstd"})
	if err != nil {
		t.Fatal(err)
	}
	if !topic.Delete() || !topic.Compact() || topic.MinInsyncReplicas() != 2 || !topic.UncleanLeaderElection() || topic.CompressionType() != "zstd" {
		t.Fatal("accessors do not reflect broker defaults and overrides")
	}
	if v, ok := topic.Value("min.cleanable.dirty.ratio"); !ok || v.Float() != 0.5 {
		t.Fatal("Value")
	}
	if got := topic.Overrides(); len(got) != 2 {
		t.Fatalf("Overrides = %v", got)
	}
	if _, err := b.Topic(map[string]string{"bogus": "1"}); err == nil {
		t.Fatal("Topic accepted an unknown override")
	}
	if msDuration(math.MaxInt64) <= 0 || msDuration(math.MinInt64) >= 0 {
		t.Fatal("msDuration overflowed")
	}
}
