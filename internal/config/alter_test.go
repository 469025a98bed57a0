package config

import (
	"maps"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func op(name string, o kmsg.IncrementalAlterConfigOp, value *string) IncrementalOp {
	return IncrementalOp{Name: name, Op: o, Value: value}
}

var (
	codeInvalidConfig  = kerr.InvalidConfig.Code
	codeInvalidRequest = kerr.InvalidRequest.Code
)

func TestIncrementalAlterTopic(t *testing.T) {
	tests := []struct {
		name    string
		current map[string]string
		ops     []IncrementalOp
		want    map[string]string
		code    int16
		msg     string
	}{
		{name: "set", ops: []IncrementalOp{op(RetentionMs, OpSet, ptr("1000"))}, want: map[string]string{RetentionMs: "1000"}},
		{name: "set keeps others", current: map[string]string{SegmentMs: "5"}, ops: []IncrementalOp{op(RetentionMs, OpSet, ptr("1000"))},
			want: map[string]string{SegmentMs: "5", RetentionMs: "1000"}},
		{name: "set stores the raw value", ops: []IncrementalOp{op(RetentionMs, OpSet, ptr(" 1000 "))}, want: map[string]string{RetentionMs: " 1000 "}},
		{name: "delete", current: map[string]string{RetentionMs: "1", SegmentMs: "5"}, ops: []IncrementalOp{op(RetentionMs, OpDelete, nil)},
			want: map[string]string{SegmentMs: "5"}},
		{name: "delete absent key", ops: []IncrementalOp{op(RetentionMs, OpDelete, nil)}, want: map[string]string{}},
		{name: "delete ignores a value", current: map[string]string{RetentionMs: "1"}, ops: []IncrementalOp{op(RetentionMs, OpDelete, ptr("x"))}, want: map[string]string{}},
		{name: "append to default", ops: []IncrementalOp{op(CleanupPolicy, OpAppend, ptr("compact"))}, want: map[string]string{CleanupPolicy: "delete,compact"}},
		{name: "append present item", current: map[string]string{CleanupPolicy: "compact,delete"}, ops: []IncrementalOp{op(CleanupPolicy, OpAppend, ptr("delete"))},
			want: map[string]string{CleanupPolicy: "compact,delete"}},
		{name: "append to empty list", current: map[string]string{CleanupPolicy: ""}, ops: []IncrementalOp{op(CleanupPolicy, OpAppend, ptr("compact"))},
			want: map[string]string{CleanupPolicy: "compact"}},
		{name: "append several", ops: []IncrementalOp{op("leader.replication.throttled.replicas", OpAppend, ptr("0:1,1:2"))},
			want: map[string]string{"leader.replication.throttled.replicas": "0:1,1:2"}},
		{name: "subtract from default", ops: []IncrementalOp{op(CleanupPolicy, OpSubtract, ptr("delete"))}, want: map[string]string{CleanupPolicy: ""}},
		{name: "subtract absent item", current: map[string]string{CleanupPolicy: "compact"}, ops: []IncrementalOp{op(CleanupPolicy, OpSubtract, ptr("delete"))},
			want: map[string]string{CleanupPolicy: "compact"}},
		{name: "subtract several", current: map[string]string{"follower.replication.throttled.replicas": "0:1,1:2,2:3"},
			ops:  []IncrementalOp{op("follower.replication.throttled.replicas", OpSubtract, ptr("0:1,2:3"))},
			want: map[string]string{"follower.replication.throttled.replicas": "1:2"}},
		{name: "append an invalid item", ops: []IncrementalOp{op(CleanupPolicy, OpAppend, ptr("shred"))},
			code: codeInvalidConfig, msg: "Invalid value shred for configuration cleanup.policy: String must be one of: compact, delete"},
		{name: "append to non-list", ops: []IncrementalOp{op(RetentionMs, OpAppend, ptr("1"))},
			code: codeInvalidConfig, msg: "Can't APPEND to key retention.ms because its type is not LIST."},
		{name: "subtract from unknown", ops: []IncrementalOp{op("nope", OpSubtract, ptr("1"))},
			code: codeInvalidConfig, msg: "Can't SUBTRACT to key nope because its type is not LIST."},
		{name: "unknown name", ops: []IncrementalOp{op("retention.minutes", OpSet, ptr("1"))},
			code: codeInvalidConfig, msg: "Unknown topic config name: retention.minutes"},
		{name: "bad value", ops: []IncrementalOp{op(MinInsyncReplicas, OpSet, ptr("0"))},
			code: codeInvalidConfig, msg: "Invalid value 0 for configuration min.insync.replicas: Value must be at least 1"},
		{name: "existing bad override is revalidated", current: map[string]string{"bogus": "1"}, ops: []IncrementalOp{op(RetentionMs, OpSet, ptr("1"))},
			code: codeInvalidConfig, msg: "Unknown topic config name: bogus"},
		{name: "deleting the bad override repairs", current: map[string]string{"bogus": "1"}, ops: []IncrementalOp{op("bogus", OpDelete, nil)}, want: map[string]string{}},
		{name: "duplicate names", ops: []IncrementalOp{op(RetentionMs, OpSet, ptr("1")), op(RetentionMs, OpDelete, nil)},
			code: codeInvalidRequest, msg: "Error due to duplicate config keys"},
		{name: "null values", ops: []IncrementalOp{op(RetentionMs, OpSet, nil), op(CleanupPolicy, OpAppend, nil)},
			code: codeInvalidRequest, msg: "Null value not supported for : retention.ms, cleanup.policy"},
		{name: "unknown op", ops: []IncrementalOp{op(RetentionMs, 7, ptr("1"))},
			code: codeInvalidRequest, msg: "Unknown operations type 7"},
		{name: "conflict after ops", ops: []IncrementalOp{op(MinCompactionLagMs, OpSet, ptr("9")), op(MaxCompactionLagMs, OpSet, ptr("8"))},
			code: codeInvalidConfig, msg: "conflict topic config setting min.compaction.lag.ms (9) > max.compaction.lag.ms (8)"},
	}
	b := mustBroker(t, map[string]string{"log.cleanup.policy": "compact"}) // the topic default, not the broker's, seeds a list
	for _, tt := range tests {
		before := maps.Clone(tt.current)
		got, e := b.IncrementalAlterTopic(tt.current, tt.ops)
		wantError(t, tt.name, e, tt.code, tt.msg)
		if tt.code == 0 && !maps.Equal(got, tt.want) {
			t.Errorf("%s: got %v, want %v", tt.name, got, tt.want)
		}
		if !maps.Equal(before, tt.current) {
			t.Errorf("%s: the current overrides were modified", tt.name)
		}
	}
}

func TestAlterTopic(t *testing.T) {
	b := mustBroker(t, nil)
	got, e := b.AlterTopic([]AlterEntry{{Name: RetentionMs, Value: ptr("5")}, {Name: CleanupPolicy, Value: ptr("compact")}})
	if e != nil || !maps.Equal(got, map[string]string{RetentionMs: "5", CleanupPolicy: "compact"}) {
		t.Fatalf("AlterTopic = %v, %v", got, e)
	}
	got, e = b.AlterTopic(nil)
	if e != nil || len(got) != 0 {
		t.Fatalf("AlterTopic with no entries should clear every override: %v %v", got, e)
	}
	_, e = b.AlterTopic([]AlterEntry{{Name: RetentionMs, Value: ptr("5")}, {Name: RetentionMs, Value: ptr("6")}})
	wantError(t, "duplicate", e, codeInvalidRequest, "Error due to duplicate config keys")
	_, e = b.AlterTopic([]AlterEntry{{Name: RetentionMs}})
	wantError(t, "null", e, codeInvalidRequest, "Null value not supported for : retention.ms")
	_, e = b.AlterTopic([]AlterEntry{{Name: SegmentBytes, Value: ptr("12")}})
	wantError(t, "bad value", e, codeInvalidConfig, "Invalid value 12 for configuration segment.bytes: Value must be at least 1048576")
}

func TestCreateTopicOverrides(t *testing.T) {
	b := mustBroker(t, nil)
	got, e := b.CreateTopicOverrides([]kmsg.CreateTopicsRequestTopicConfig{{Name: RetentionMs, Value: ptr("1")}, {Name: RetentionMs, Value: ptr("2")}})
	if e != nil || got[RetentionMs] != "2" {
		t.Fatalf("the last value of a repeated name wins: %v %v", got, e)
	}
	_, e = b.CreateTopicOverrides([]kmsg.CreateTopicsRequestTopicConfig{{Name: RetentionMs}, {Name: SegmentMs}})
	wantError(t, "null", e, codeInvalidConfig, "Null value not supported for topic configs: retention.ms,segment.ms")
	_, e = b.CreateTopicOverrides([]kmsg.CreateTopicsRequestTopicConfig{{Name: "nope", Value: ptr("1")}})
	wantError(t, "unknown", e, codeInvalidConfig, "Unknown topic config name: nope")
}

func TestIncrementalAlterBroker(t *testing.T) {
	b, _ := mustBroker(t, nil).WithDynamic(map[string]string{"log.retention.bytes": "10"}, map[string]string{MessageMaxBytes: "2000"})
	tests := []struct {
		name     string
		resource string
		ops      []IncrementalOp
		want     map[string]string
		code     int16
		msg      string
	}{
		{name: "cluster default set", ops: []IncrementalOp{op("log.retention.ms", OpSet, ptr("60000"))},
			want: map[string]string{"log.retention.bytes": "10", "log.retention.ms": "60000"}},
		{name: "node set", resource: "1", ops: []IncrementalOp{op(FaultProduceResponseMs, OpSet, ptr("50"))},
			want: map[string]string{MessageMaxBytes: "2000", FaultProduceResponseMs: "50"}},
		{name: "node delete", resource: "1", ops: []IncrementalOp{op(MessageMaxBytes, OpDelete, nil)}, want: map[string]string{}},
		{name: "custom key kept", ops: []IncrementalOp{op("my.plugin.setting", OpSet, ptr("x"))},
			want: map[string]string{"log.retention.bytes": "10", "my.plugin.setting": "x"}},
		{name: "append to list default", ops: []IncrementalOp{op("log.cleanup.policy", OpAppend, ptr("compact"))},
			want: map[string]string{"log.retention.bytes": "10", "log.cleanup.policy": "delete,compact"}},
		{name: "subtract from list default", ops: []IncrementalOp{op("log.cleanup.policy", OpSubtract, ptr("delete"))},
			want: map[string]string{"log.retention.bytes": "10", "log.cleanup.policy": ""}},
		{name: "read-only", ops: []IncrementalOp{op(NumPartitions, OpSet, ptr("3")), op(NodeID, OpSet, ptr("4")), op("log.retention.hours", OpSet, ptr("1"))},
			code: codeInvalidRequest, msg: "Cannot update these configs dynamically: [log.retention.hours, node.id, num.partitions]"},
		{name: "read-only delete", resource: "1", ops: []IncrementalOp{op(Listeners, OpDelete, nil)}, want: map[string]string{MessageMaxBytes: "2000"}},
		{name: "bad value", ops: []IncrementalOp{op(MessageMaxBytes, OpSet, ptr("-1"))},
			code: codeInvalidRequest, msg: "Invalid value -1 for configuration message.max.bytes: Value must be at least 0"},
		{name: "rule spanning keys", ops: []IncrementalOp{op("log.retention.ms", OpSet, ptr("0"))},
			code: codeInvalidRequest, msg: "log.retention.ms must be unlimited (-1) or, greater than or equal to 1"},
		{name: "append to non-list", ops: []IncrementalOp{op(MessageMaxBytes, OpAppend, ptr("1"))},
			code: codeInvalidConfig, msg: "Config value append is not allowed for config key: message.max.bytes"},
		{name: "subtract from unknown", ops: []IncrementalOp{op("my.list", OpSubtract, ptr("1"))},
			code: codeInvalidConfig, msg: "Unknown config name: my.list"},
		{name: "other node", resource: "2", ops: []IncrementalOp{op(MessageMaxBytes, OpSet, ptr("1"))},
			code: codeInvalidRequest, msg: "Unexpected broker id, expected 1, but received 2"},
		{name: "not a node id", resource: "one", ops: []IncrementalOp{op(MessageMaxBytes, OpSet, ptr("1"))},
			code: codeInvalidRequest, msg: "Node id must be an integer, but it is: one"},
		{name: "null value", ops: []IncrementalOp{op(MessageMaxBytes, OpSet, nil)},
			code: codeInvalidRequest, msg: "Null value not supported for : message.max.bytes"},
		{name: "null value before node id", resource: "7", ops: []IncrementalOp{op(MessageMaxBytes, OpSet, nil)},
			code: codeInvalidRequest, msg: "Null value not supported for : message.max.bytes"},
		{name: "node id before op type", resource: "7", ops: []IncrementalOp{op(MessageMaxBytes, 9, ptr("1"))},
			code: codeInvalidRequest, msg: "Unexpected broker id, expected 1, but received 7"},
		{name: "unknown op", resource: "1", ops: []IncrementalOp{op(MessageMaxBytes, 9, ptr("1"))},
			code: codeInvalidRequest, msg: "Unknown operations type 9"},
	}
	for _, tt := range tests {
		got, e := b.IncrementalAlterBroker(tt.resource, tt.ops)
		wantError(t, tt.name, e, tt.code, tt.msg)
		if tt.code == 0 && !maps.Equal(got, tt.want) {
			t.Errorf("%s: got %v, want %v", tt.name, got, tt.want)
		}
	}
	if got := b.DynamicConfigs(false); !maps.Equal(got, map[string]string{"log.retention.bytes": "10"}) {
		t.Fatalf("the broker config changed: %v", got)
	}
}

func TestAlterBroker(t *testing.T) {
	b, _ := mustBroker(t, nil).WithDynamic(map[string]string{"log.retention.bytes": "10"}, nil)
	got, e := b.AlterBroker("", []AlterEntry{{Name: "min.insync.replicas", Value: ptr("2")}})
	if e != nil || !maps.Equal(got, map[string]string{"min.insync.replicas": "2"}) {
		t.Fatalf("legacy alter replaces the level: %v %v", got, e)
	}
	_, e = b.AlterBroker("1", []AlterEntry{{Name: BrokerRack, Value: ptr("r2")}})
	wantError(t, "read-only", e, codeInvalidRequest, "Cannot update these configs dynamically: [broker.rack]")
	_, e = b.AlterBroker("9", nil)
	wantError(t, "other node", e, codeInvalidRequest, "Unexpected broker id, expected 1, but received 9")
	_, e = b.AlterBroker("", []AlterEntry{{Name: "log.retention.ms"}})
	wantError(t, "null", e, codeInvalidRequest, "Null value not supported for : log.retention.ms")
}

// TestAlterThenDescribe runs the round trip a handler performs: alter,
// store, rebuild, describe.
func TestAlterThenDescribe(t *testing.T) {
	b := mustBroker(t, nil)
	node, e := b.IncrementalAlterBroker("1", []IncrementalOp{op("log.retention.ms", OpSet, ptr("120000"))})
	if e != nil {
		t.Fatal(e)
	}
	b, dropped := b.WithDynamic(nil, node)
	if len(dropped) > 0 {
		t.Fatal(dropped)
	}
	topic, e := b.IncrementalAlterTopic(nil, []IncrementalOp{op(CleanupPolicy, OpAppend, ptr("compact"))})
	if e != nil {
		t.Fatal(e)
	}
	es, e := b.DescribeTopic(topic, DescribeOptions{Keys: []string{RetentionMs, CleanupPolicy}})
	if e != nil {
		t.Fatal(e)
	}
	if show(es[0]) != "cleanup.policy=delete,compact DYNAMIC_TOPIC_CONFIG LIST {}" || show(es[1]) != "retention.ms=120000 DYNAMIC_BROKER_CONFIG LONG {}" {
		t.Fatalf("got %s / %s", show(es[0]), show(es[1]))
	}
}

func TestErrorType(t *testing.T) {
	e := invalidConfig("x")
	if e.Error() != "config: INVALID_CONFIG: x" {
		t.Fatalf("Error() = %q", e.Error())
	}
	if !e.Is(kerr.InvalidConfig) || e.Is(kerr.InvalidRequest) {
		t.Fatal("Is does not match by code")
	}
}
