package configadmin

import (
	"bytes"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"weir/internal/config"
	"weir/internal/metadata"
)

// TestApplyBrokerConfigs: the metadata images a node applies in turn;
// each time the settings in force become the static ones with the
// image's cluster-wide defaults and this node's configs (another node's
// are not this node's business), entries that may not be set dynamically
// are dropped and logged, and an image holding what is in force changes
// nothing.
func TestApplyBrokerConfigs(t *testing.T) {
	var logs bytes.Buffer
	st, err := config.NewBroker(map[string]string{config.NodeID: "1", "log.retention.ms": "1000"})
	if err != nil {
		t.Fatal(err)
	}
	m := New(Options{NodeID: 1, Static: st, Host: &fakeHost{}, Logger: logTo(&logs)})
	for _, step := range []struct {
		name      string
		img       *metadata.Image
		changed   bool
		retention time.Duration // a topic's retention.ms with no override
		segment   int64         // and its segment.bytes
		def, node map[string]string
		dropped   string // in the log
	}{
		{name: "empty image", img: image(t), changed: false,
			retention: time.Second, segment: 1 << 30, def: map[string]string{}, node: map[string]string{}},
		{name: "cluster default", img: image(t, brokerConfig("", "log.retention.ms", "2000")), changed: true,
			retention: 2 * time.Second, segment: 1 << 30,
			def: map[string]string{"log.retention.ms": "2000"}, node: map[string]string{}},
		{name: "same again", img: image(t, brokerConfig("", "log.retention.ms", "2000")), changed: false,
			retention: 2 * time.Second, segment: 1 << 30,
			def: map[string]string{"log.retention.ms": "2000"}, node: map[string]string{}},
		{name: "this node over the default", img: image(t,
			brokerConfig("", "log.retention.ms", "2000"),
			brokerConfig("1", "log.retention.ms", "3000"),
			brokerConfig("1", "log.segment.bytes", "2097152"),
			brokerConfig("2", "log.retention.ms", "9000"),
		), changed: true, retention: 3 * time.Second, segment: 2 << 20,
			def: map[string]string{"log.retention.ms": "2000"}, node: map[string]string{"log.retention.ms": "3000", "log.segment.bytes": "2097152"}},
		{name: "another node only", img: image(t,
			brokerConfig("", "log.retention.ms", "2000"),
			brokerConfig("1", "log.retention.ms", "3000"),
			brokerConfig("1", "log.segment.bytes", "2097152"),
			brokerConfig("2", "log.retention.ms", "8000"),
		), changed: false, retention: 3 * time.Second, segment: 2 << 20,
			def: map[string]string{"log.retention.ms": "2000"}, node: map[string]string{"log.retention.ms": "3000", "log.segment.bytes": "2097152"}},
		{name: "read-only config dropped", img: image(t,
			brokerConfig("1", "log.segment.bytes", "2097152"),
			brokerConfig("1", config.NodeID, "5"),
		), changed: true, retention: time.Second, segment: 2 << 20,
			def: map[string]string{}, node: map[string]string{"log.segment.bytes": "2097152"}, dropped: "Cannot update these configs dynamically: [node.id]"},
		{name: "all removed", img: image(t), changed: true,
			retention: time.Second, segment: 1 << 30, def: map[string]string{}, node: map[string]string{}},
	} {
		logs.Reset()
		before := m.Settings()
		prev, next, changed := m.ApplyBrokerConfigs(step.img)
		if changed != step.changed || prev != before || next != m.Settings() || (next == prev) == changed {
			t.Fatalf("%s: changed %v (prev same %v, next in force %v), want %v", step.name, changed, prev == before, next == m.Settings(), step.changed)
		}
		lc, err := m.TopicLogConfig(nil)
		if err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
		if lc.RetentionTime != step.retention || lc.SegmentBytes != step.segment {
			t.Errorf("%s: retention %v segment %d, want %v %d", step.name, lc.RetentionTime, lc.SegmentBytes, step.retention, step.segment)
		}
		if st := m.Settings(); !maps.Equal(st.DynamicConfigs(false), step.def) || !maps.Equal(st.DynamicConfigs(true), step.node) {
			t.Errorf("%s: dynamic %v / %v, want %v / %v", step.name, st.DynamicConfigs(false), st.DynamicConfigs(true), step.def, step.node)
		}
		if got := strings.Contains(logs.String(), "dynamic broker config dropped"); got != (step.dropped != "") || !strings.Contains(logs.String(), step.dropped) {
			t.Errorf("%s: log %q, want a drop %q", step.name, logs.String(), step.dropped)
		}
		if m.Settings().StaticConfigs()["log.retention.ms"] != "1000" {
			t.Fatalf("%s: static configs lost", step.name)
		}
	}
}

// TestTopicLogConfig: a topic's overrides over the settings in force;
// overrides that make no log configuration are INVALID_CONFIG.
func TestTopicLogConfig(t *testing.T) {
	m := newManager(t, map[string]string{"log.retention.ms": "1000"}, &fakeHost{})
	lc, err := m.TopicLogConfig(map[string]string{config.SegmentBytes: "1048576"})
	if err != nil || lc.SegmentBytes != 1<<20 || lc.RetentionTime != time.Second {
		t.Fatalf("got %d %v, %v", lc.SegmentBytes, lc.RetentionTime, err)
	}
	for _, bad := range []map[string]string{
		{config.SegmentBytes: "big"},
		{config.MinCompactionLagMs: "10", config.MaxCompactionLagMs: "5"},
		{"no.such.config": "1"},
	} {
		if _, err := m.TopicLogConfig(bad); codeOf(err) != kerr.InvalidConfig.Code {
			t.Errorf("%v: %v, want INVALID_CONFIG", bad, err)
		}
	}
}
