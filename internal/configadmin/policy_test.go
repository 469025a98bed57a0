package configadmin

import (
	"maps"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/config"
	"weir/internal/errcode"
	"weir/internal/metadata"
)

// TestPolicy: the controller's decision over the configs it holds: a
// TOPIC's operations or entries checked by internal/config and as a log
// configuration, a BROKER's merged at its level, a GROUP's by the
// host's GroupConfigs; the current overrides are never modified.
func TestPolicy(t *testing.T) {
	p := newManager(t, nil, &fakeHost{}).Policy()
	topicRes := metadata.ConfigResource{Type: metadata.ResourceTopic, Name: "t"}
	nodeRes := BrokerResource("1")
	groupRes := metadata.ConfigResource{Type: metadata.ResourceGroup, Name: "g"}
	ops := func(kv ...string) []kmsg.IncrementalAlterConfigsRequestResourceConfig {
		return incr(topic, "", kv...).Configs
	}
	entries := func(kv ...string) []kmsg.AlterConfigsRequestResourceConfig {
		return legacy(topic, "", kv...).Configs
	}
	for _, tc := range []struct {
		name    string
		res     metadata.ConfigResource
		current map[string]string
		ops     []kmsg.IncrementalAlterConfigsRequestResourceConfig // Incremental when set
		entries []kmsg.AlterConfigsRequestResourceConfig            // else Replace
		want    map[string]string
		code    int16
	}{
		{name: "topic set", res: topicRes, current: map[string]string{config.RetentionMs: "1"},
			ops:  ops(config.SegmentBytes, "1048576"),
			want: map[string]string{config.RetentionMs: "1", config.SegmentBytes: "1048576"}},
		{name: "topic bad value", res: topicRes, ops: ops(config.RetentionMs, "soon"), code: kerr.InvalidConfig.Code},
		{name: "topic keys in conflict with current", res: topicRes, current: map[string]string{config.MaxCompactionLagMs: "5"},
			ops: ops(config.MinCompactionLagMs, "10"), code: kerr.InvalidConfig.Code},
		{name: "topic replace", res: topicRes, current: map[string]string{config.RetentionMs: "1"},
			entries: entries(config.SegmentBytes, "1048576"), want: map[string]string{config.SegmentBytes: "1048576"}},
		{name: "topic replace bad value", res: topicRes, entries: entries(config.SegmentBytes, "big"), code: kerr.InvalidConfig.Code},
		{name: "broker set", res: nodeRes, current: map[string]string{"log.retention.ms": "1"},
			ops:  ops("log.segment.bytes", "1048576"),
			want: map[string]string{"log.retention.ms": "1", "log.segment.bytes": "1048576"}},
		{name: "broker bad value", res: nodeRes, ops: ops("log.retention.ms", "soon"), code: kerr.InvalidRequest.Code},
		{name: "broker replace", res: BrokerResource(""), current: map[string]string{"log.retention.ms": "1"},
			entries: entries("log.segment.bytes", "1048576"), want: map[string]string{"log.segment.bytes": "1048576"}},
		{name: "broker replace read-only", res: nodeRes, entries: entries(config.NodeID, "2"), code: kerr.InvalidRequest.Code},
		{name: "group", res: groupRes, current: map[string]string{"a": "1"}, ops: ops(groupKey, "1000"),
			want: map[string]string{"a": "1", groupKey: "1000"}},
		{name: "group refused", res: metadata.ConfigResource{Type: metadata.ResourceGroup, Name: "bad"}, ops: ops(groupKey, "1000"),
			code: kerr.InvalidConfig.Code},
		{name: "group replace", res: groupRes, entries: entries(groupKey, "1000"), code: kerr.InvalidRequest.Code},
		{name: "unknown type", res: metadata.ConfigResource{Type: 99, Name: "x"}, ops: ops("a", "1"), code: kerr.InvalidRequest.Code},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := maps.Clone(tc.current)
			var got map[string]string
			var err error
			if tc.ops != nil {
				got, err = p.Incremental(tc.res, tc.current, tc.ops)
			} else {
				got, err = p.Replace(tc.res, tc.current, tc.entries)
			}
			if c := codeOf(err); c != tc.code {
				t.Fatalf("%s (%v), want %s", code(c), err, code(tc.code))
			}
			if tc.code == 0 && !maps.Equal(got, tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
			if !maps.Equal(tc.current, before) {
				t.Fatalf("current modified: %v, was %v", tc.current, before)
			}
		})
	}
}

func codeOf(err error) int16 { return errcode.Of(err) }
