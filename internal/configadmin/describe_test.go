package configadmin

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/config"
	"weir/internal/metadata"
)

// TestDescribeSources: each resource is described from the settings in
// force (static properties, then the dynamic configs last applied from
// the image) and, for a topic, its overrides as the host holds them,
// with the source Kafka gives; a topic's name is checked before its
// existence, and an unsupported type or another node's id fails alone.
func TestDescribeSources(t *testing.T) {
	h := &fakeHost{}
	m := newManager(t, map[string]string{"log.flush.interval.ms": "7", "log.retention.ms": "1000"}, h)
	if _, _, changed := m.ApplyBrokerConfigs(image(t,
		brokerConfig("", "log.retention.ms", "2000"),
		brokerConfig("1", "log.segment.bytes", "2097152"),
	)); !changed {
		t.Fatal("dynamic broker configs not applied")
	}
	for _, tc := range []struct {
		name   string
		typ    kmsg.ConfigResourceType
		res    string
		key    string
		code   int16
		value  string
		source kmsg.ConfigSource
	}{
		{name: "topic override", typ: kmsg.ConfigResourceTypeTopic, res: "t", key: config.RetentionMs,
			value: "500", source: kmsg.ConfigSourceDynamicTopicConfig},
		{name: "topic from cluster default", typ: kmsg.ConfigResourceTypeTopic, res: "plain", key: config.RetentionMs,
			value: "2000", source: kmsg.ConfigSourceDynamicDefaultBrokerConfig},
		{name: "topic from this node", typ: kmsg.ConfigResourceTypeTopic, res: "plain", key: config.SegmentBytes,
			value: "2097152", source: kmsg.ConfigSourceDynamicBrokerConfig},
		{name: "topic from static", typ: kmsg.ConfigResourceTypeTopic, res: "plain", key: config.FlushMs,
			value: "7", source: kmsg.ConfigSourceStaticBrokerConfig},
		{name: "topic default", typ: kmsg.ConfigResourceTypeTopic, res: "plain", key: config.CleanupPolicy,
			value: "delete", source: kmsg.ConfigSourceDefaultConfig},
		{name: "this node", typ: kmsg.ConfigResourceTypeBroker, res: "1", key: "log.segment.bytes",
			value: "2097152", source: kmsg.ConfigSourceDynamicBrokerConfig},
		{name: "this node from cluster default", typ: kmsg.ConfigResourceTypeBroker, res: "1", key: "log.retention.ms",
			value: "2000", source: kmsg.ConfigSourceDynamicDefaultBrokerConfig},
		{name: "this node static", typ: kmsg.ConfigResourceTypeBroker, res: "1", key: "log.flush.interval.ms",
			value: "7", source: kmsg.ConfigSourceStaticBrokerConfig},
		{name: "cluster default", typ: kmsg.ConfigResourceTypeBroker, res: "", key: "log.retention.ms",
			value: "2000", source: kmsg.ConfigSourceDynamicDefaultBrokerConfig},
		{name: "group", typ: kmsg.ConfigResourceTypeGroupConfig, res: "g", key: groupKey,
			value: "30000", source: kmsg.ConfigSourceDefaultConfig},
		{name: "unknown topic", typ: kmsg.ConfigResourceTypeTopic, res: "missing", code: kerr.UnknownTopicOrPartition.Code},
		{name: "illegal topic name", typ: kmsg.ConfigResourceTypeTopic, res: "a/b", code: kerr.InvalidTopicException.Code},
		{name: "empty topic name", typ: kmsg.ConfigResourceTypeTopic, res: "", code: kerr.InvalidTopicException.Code},
		{name: "another node", typ: kmsg.ConfigResourceTypeBroker, res: "2", code: kerr.InvalidRequest.Code},
		{name: "broker logger", typ: kmsg.ConfigResourceTypeBrokerLogger, res: "1", code: kerr.InvalidRequest.Code},
		{name: "empty group", typ: kmsg.ConfigResourceTypeGroupConfig, res: "", code: kerr.InvalidRequest.Code},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := kmsg.NewPtrDescribeConfigsRequest()
			req.Version = 4
			// A valid resource before and after: each answers alone.
			for _, name := range []string{"t", tc.res, "plain"} {
				r := kmsg.NewDescribeConfigsRequestResource()
				r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeTopic, name
				if name == tc.res {
					r.ResourceType = tc.typ
					if tc.key != "" {
						r.ConfigNames = []string{tc.key}
					}
				}
				req.Resources = append(req.Resources, r)
			}
			resp := m.Describe(req)
			if len(resp.Resources) != 3 || resp.Resources[0].ErrorCode != 0 || resp.Resources[2].ErrorCode != 0 {
				t.Fatalf("neighbours: %+v", resp.Resources)
			}
			res := resp.Resources[1]
			if res.ResourceType != tc.typ || res.ResourceName != tc.res {
				t.Fatalf("answered %v %q", res.ResourceType, res.ResourceName)
			}
			if res.ErrorCode != tc.code {
				t.Fatalf("code %s (%v), want %s", code(res.ErrorCode), deref(res.ErrorMessage), code(tc.code))
			}
			if tc.code != 0 {
				if len(res.Configs) != 0 {
					t.Fatalf("failed resource lists %d configs", len(res.Configs))
				}
				return
			}
			if len(res.Configs) != 1 {
				t.Fatalf("%d configs, want only %s", len(res.Configs), tc.key)
			}
			e := res.Configs[0]
			if e.Name != tc.key || deref(e.Value) != tc.value || e.Source != tc.source {
				t.Fatalf("%s=%s %v, want %s=%s %v", e.Name, deref(e.Value), e.Source, tc.key, tc.value, tc.source)
			}
		})
	}
}

// TestDescribeOptions: synonyms and documentation only when asked.
func TestDescribeOptions(t *testing.T) {
	m := newManager(t, map[string]string{"log.retention.ms": "1000"}, &fakeHost{})
	for _, tc := range []struct {
		synonyms, docs bool
	}{{false, false}, {true, false}, {false, true}, {true, true}} {
		req := kmsg.NewPtrDescribeConfigsRequest()
		req.Version = 4
		req.IncludeSynonyms, req.IncludeDocumentation = tc.synonyms, tc.docs
		r := kmsg.NewDescribeConfigsRequestResource()
		r.ResourceType, r.ResourceName, r.ConfigNames = kmsg.ConfigResourceTypeTopic, "t", []string{config.RetentionMs}
		req.Resources = append(req.Resources, r)
		e := m.Describe(req).Resources[0].Configs[0]
		if got := len(e.ConfigSynonyms) > 0; got != tc.synonyms {
			t.Errorf("synonyms %v: got %d", tc.synonyms, len(e.ConfigSynonyms))
		}
		if got := e.Documentation != nil; got != tc.docs {
			t.Errorf("documentation %v: got %v", tc.docs, e.Documentation)
		}
	}
}

// TestCreateTopicConfigs: a new topic's configs as CreateTopics v5+
// lists them: its overrides as DYNAMIC_TOPIC_CONFIG, the rest from the
// settings in force.
func TestCreateTopicConfigs(t *testing.T) {
	m := newManager(t, map[string]string{"log.flush.interval.ms": "7"}, &fakeHost{})
	got := map[string]kmsg.CreateTopicsResponseTopicConfig{}
	for _, c := range m.CreateTopicConfigs(map[string]string{config.RetentionMs: "5"}) {
		got[c.Name] = c
	}
	for _, want := range []struct {
		name, value string
		source      kmsg.ConfigSource
	}{
		{config.RetentionMs, "5", kmsg.ConfigSourceDynamicTopicConfig},
		{config.FlushMs, "7", kmsg.ConfigSourceStaticBrokerConfig},
		{config.SegmentBytes, "1073741824", kmsg.ConfigSourceDefaultConfig},
	} {
		c, ok := got[want.name]
		if !ok || deref(c.Value) != want.value || c.Source != int8(want.source) {
			t.Errorf("%s: got %s source %d, want %s %v", want.name, deref(c.Value), c.Source, want.value, want.source)
		}
	}
	if m.CreateTopicConfigs(map[string]string{"no.such.config": "1"}) != nil {
		t.Error("overrides that do not describe listed configs")
	}
}

// TestTopicOverrides: a topic's overrides from the image, nil when it
// has none.
func TestTopicOverrides(t *testing.T) {
	img := image(t,
		&metadata.TopicRecord{Name: "a", ID: metadata.TopicID{1}},
		&metadata.TopicRecord{Name: "b", ID: metadata.TopicID{2}},
		&metadata.ConfigRecord{Resource: metadata.ResourceTopic, Name: "a", Key: config.RetentionMs, Value: "9"},
	)
	if got := TopicOverrides(img, "a"); len(got) != 1 || got[config.RetentionMs] != "9" {
		t.Errorf("a: %v", got)
	}
	if got := TopicOverrides(img, "b"); got != nil {
		t.Errorf("b: %v, want nil", got)
	}
}

func deref(p *string) string {
	if p == nil {
		return "<null>"
	}
	return *p
}
