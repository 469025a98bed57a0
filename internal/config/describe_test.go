package config

import (
	"fmt"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

// show prints an entry compactly: name=value source flags type
// {synonyms}.
func show(e Entry) string {
	var syns []string
	for _, s := range e.ConfigSynonyms {
		syns = append(syns, fmt.Sprintf("%s=%s/%s", s.Name, deref(s.Value), s.Source))
	}
	flags := ""
	if e.ReadOnly {
		flags += " ro"
	}
	if e.IsSensitive {
		flags += " sensitive"
	}
	return fmt.Sprintf("%s=%s %s%s %s {%s}", e.Name, deref(e.Value), e.Source, flags, e.ConfigType, strings.Join(syns, ", "))
}

func find(es []Entry, name string) (Entry, bool) {
	for _, e := range es {
		if e.Name == name {
			return e, true
		}
	}
	return Entry{}, false
}

func TestDescribeTopicSourcesAndSynonyms(t *testing.T) {
	all := DescribeOptions{IncludeSynonyms: true}
	tests := []struct {
		name      string
		static    map[string]string
		dynDef    map[string]string
		dynNode   map[string]string
		overrides map[string]string
		key       string
		want      string
	}{
		{name: "kafka default", key: SegmentBytes,
			want: "segment.bytes=1073741824 DEFAULT_CONFIG INT {log.segment.bytes=1073741824/DEFAULT_CONFIG}"},
		// Kafka lists synonyms only from the first entry for the config's
		// own broker name (log.retention.ms), which has no default.
		{name: "retention with no broker setting", key: RetentionMs,
			want: "retention.ms=604800000 DEFAULT_CONFIG LONG {}"},
		{name: "retention from static hours", static: map[string]string{"log.retention.hours": "24"}, key: RetentionMs,
			want: "retention.ms=86400000 DEFAULT_CONFIG LONG {}"},
		{name: "retention from static ms", static: map[string]string{"log.retention.ms": "1000", "log.retention.hours": "24"}, key: RetentionMs,
			want: "retention.ms=1000 STATIC_BROKER_CONFIG LONG {log.retention.ms=1000/STATIC_BROKER_CONFIG, log.retention.hours=24/STATIC_BROKER_CONFIG, log.retention.hours=168/DEFAULT_CONFIG}"},
		{name: "retention from cluster default", static: map[string]string{"log.retention.ms": "1000"}, dynDef: map[string]string{"log.retention.ms": "2000"}, key: RetentionMs,
			want: "retention.ms=2000 DYNAMIC_DEFAULT_BROKER_CONFIG LONG {log.retention.ms=2000/DYNAMIC_DEFAULT_BROKER_CONFIG, log.retention.ms=1000/STATIC_BROKER_CONFIG, log.retention.hours=168/DEFAULT_CONFIG}"},
		{name: "retention from this node", dynDef: map[string]string{"log.retention.ms": "2000"}, dynNode: map[string]string{"log.retention.ms": "3000"}, key: RetentionMs,
			want: "retention.ms=3000 DYNAMIC_BROKER_CONFIG LONG {log.retention.ms=3000/DYNAMIC_BROKER_CONFIG, log.retention.ms=2000/DYNAMIC_DEFAULT_BROKER_CONFIG, log.retention.hours=168/DEFAULT_CONFIG}"},
		{name: "topic override first", static: map[string]string{"log.retention.ms": "1000"}, overrides: map[string]string{RetentionMs: " 500 "}, key: RetentionMs,
			want: "retention.ms=500 DYNAMIC_TOPIC_CONFIG LONG {retention.ms=500/DYNAMIC_TOPIC_CONFIG, log.retention.ms=1000/STATIC_BROKER_CONFIG, log.retention.hours=168/DEFAULT_CONFIG}"},
		{name: "list printed canonically", overrides: map[string]string{CleanupPolicy: "compact , delete"}, key: CleanupPolicy,
			want: "cleanup.policy=compact,delete DYNAMIC_TOPIC_CONFIG LIST {cleanup.policy=compact,delete/DYNAMIC_TOPIC_CONFIG, log.cleanup.policy=delete/DEFAULT_CONFIG}"},
		{name: "static value shown raw in synonyms", static: map[string]string{"log.cleaner.min.cleanable.ratio": " .25"}, key: "min.cleanable.dirty.ratio",
			want: "min.cleanable.dirty.ratio=0.25 STATIC_BROKER_CONFIG DOUBLE {log.cleaner.min.cleanable.ratio= .25/STATIC_BROKER_CONFIG, log.cleaner.min.cleanable.ratio=0.5/DEFAULT_CONFIG}"},
		{name: "no broker synonym", key: "leader.replication.throttled.replicas",
			want: "leader.replication.throttled.replicas= DEFAULT_CONFIG LIST {}"},
		{name: "segment.ms from roll hours", static: map[string]string{"log.roll.hours": "1"}, key: SegmentMs,
			want: "segment.ms=3600000 DEFAULT_CONFIG LONG {}"},
		{name: "flush.ms scheduler synonym", static: map[string]string{"log.flush.interval.ms": "7"}, key: FlushMs,
			want: "flush.ms=7 STATIC_BROKER_CONFIG LONG {log.flush.interval.ms=7/STATIC_BROKER_CONFIG, log.flush.scheduler.interval.ms=9223372036854775807/DEFAULT_CONFIG}"},
		{name: "weir config", dynDef: map[string]string{WeirLogSyncBeforeAck: "true"}, key: SyncBeforeAck,
			want: "weir.sync.before.ack=true DYNAMIC_DEFAULT_BROKER_CONFIG BOOLEAN {weir.log.sync.before.ack=true/DYNAMIC_DEFAULT_BROKER_CONFIG, weir.log.sync.before.ack=false/DEFAULT_CONFIG}"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, dropped := mustBroker(t, tt.static).WithDynamic(tt.dynDef, tt.dynNode)
			if len(dropped) > 0 {
				t.Fatal(dropped)
			}
			es, e := b.DescribeTopic(tt.overrides, all)
			if e != nil {
				t.Fatal(e)
			}
			got, ok := find(es, tt.key)
			if !ok {
				t.Fatalf("%s not described", tt.key)
			}
			if show(got) != tt.want {
				t.Fatalf("got  %s\nwant %s", show(got), tt.want)
			}
		})
	}
}

func TestDescribeTopicOptions(t *testing.T) {
	b := mustBroker(t, map[string]string{"log.segment.bytes": "2097152"})
	es, e := b.DescribeTopic(map[string]string{RetentionMs: "10"}, DescribeOptions{})
	if e != nil {
		t.Fatal(e)
	}
	if len(es) != len(TopicDefs()) {
		t.Fatalf("described %d configs, want every topic config (%d)", len(es), len(TopicDefs()))
	}
	for i, x := range es {
		if x.ConfigSynonyms != nil || x.Documentation != nil || x.ReadOnly || x.IsSensitive {
			t.Fatalf("%s: synonyms or documentation without asking, or read-only/sensitive: %s", x.Name, show(x))
		}
		if i > 0 && es[i-1].Name >= x.Name {
			t.Fatal("entries are not sorted by name")
		}
	}
	// Without synonyms the source is still reported.
	if x, _ := find(es, SegmentBytes); x.Source != SourceStaticBroker || deref(x.Value) != "2097152" {
		t.Fatalf("segment.bytes: %s", show(x))
	}
	es, _ = b.DescribeTopic(nil, DescribeOptions{Keys: []string{RetentionMs, "no.such.config", CleanupPolicy}, IncludeDocumentation: true})
	if len(es) != 2 || es[0].Name != CleanupPolicy || es[1].Name != RetentionMs {
		t.Fatalf("key filter: got %d entries", len(es))
	}
	if es[1].Documentation == nil || !strings.Contains(*es[1].Documentation, "milliseconds") {
		t.Fatal("documentation missing")
	}
	if es[1].ConfigType != Long || es[0].ConfigType != List {
		t.Fatal("config types")
	}
	_, e = b.DescribeTopic(map[string]string{"bogus": "1"}, DescribeOptions{})
	wantError(t, "stored override that no longer validates", e, kerr.InvalidConfig.Code, "Unknown topic config name: bogus")
}

func TestDescribeBrokerNode(t *testing.T) {
	b, _ := mustBroker(t, map[string]string{"log.roll.ms": "100", "custom.plugin.key": "secret", MessageMaxBytes: "1000"}).
		WithDynamic(map[string]string{MessageMaxBytes: "2000", "custom.dynamic": "v"}, map[string]string{MessageMaxBytes: "3000"})
	es, e := b.DescribeBroker("1", DescribeOptions{IncludeSynonyms: true, IncludeDocumentation: true})
	if e != nil {
		t.Fatal(e)
	}
	want := map[string]string{
		NodeID:                "node.id=1 STATIC_BROKER_CONFIG ro INT {node.id=1/STATIC_BROKER_CONFIG, node.id=-1/DEFAULT_CONFIG}",
		"log.retention.ms":    "log.retention.ms=<null> DEFAULT_CONFIG LONG {}",
		"log.retention.hours": "log.retention.hours=168 DEFAULT_CONFIG ro INT {log.retention.hours=168/DEFAULT_CONFIG}",
		"log.roll.ms":         "log.roll.ms=100 STATIC_BROKER_CONFIG LONG {log.roll.ms=100/STATIC_BROKER_CONFIG, log.roll.hours=168/DEFAULT_CONFIG}",
		"log.roll.hours":      "log.roll.hours=168 DEFAULT_CONFIG ro INT {log.roll.hours=168/DEFAULT_CONFIG}",
		MessageMaxBytes:       "message.max.bytes=3000 DYNAMIC_BROKER_CONFIG INT {message.max.bytes=3000/DYNAMIC_BROKER_CONFIG, message.max.bytes=2000/DYNAMIC_DEFAULT_BROKER_CONFIG, message.max.bytes=1000/STATIC_BROKER_CONFIG, message.max.bytes=1048588/DEFAULT_CONFIG}",
		"custom.plugin.key":   "custom.plugin.key=<null> STATIC_BROKER_CONFIG ro sensitive UNKNOWN {custom.plugin.key=<null>/STATIC_BROKER_CONFIG}",
		"custom.dynamic":      "custom.dynamic=<null> DYNAMIC_DEFAULT_BROKER_CONFIG ro sensitive UNKNOWN {custom.dynamic=<null>/DYNAMIC_DEFAULT_BROKER_CONFIG}",
		Listeners:             "listeners=PLAINTEXT://:9092 DEFAULT_CONFIG ro STRING {listeners=PLAINTEXT://:9092/DEFAULT_CONFIG}",
		AdvertisedListeners:   "advertised.listeners=<null> DEFAULT_CONFIG ro STRING {}",
		FaultFetchResponseMs:  "weir.fault.fetch.response.delay.ms=0 DEFAULT_CONFIG LONG {weir.fault.fetch.response.delay.ms=0/DEFAULT_CONFIG}",
	}
	for name, w := range want {
		got, ok := find(es, name)
		if !ok {
			t.Errorf("%s not described", name)
			continue
		}
		if show(got) != w {
			t.Errorf("got  %s\nwant %s", show(got), w)
		}
	}
	if len(es) != len(BrokerDefs())+2 {
		t.Fatalf("described %d, want every broker config plus the two unknown keys", len(es))
	}
	if x, _ := find(es, "custom.plugin.key"); x.Documentation != nil {
		t.Fatal("an unknown key has documentation")
	}
	if x, _ := find(es, NodeID); x.Documentation == nil {
		t.Fatal("documentation missing")
	}
}

func TestDescribeBrokerClusterDefault(t *testing.T) {
	b, _ := mustBroker(t, map[string]string{MessageMaxBytes: "1000"}).
		WithDynamic(map[string]string{MessageMaxBytes: " 2000", "log.retention.ms": "5"}, map[string]string{MessageMaxBytes: "3000"})
	es, e := b.DescribeBroker("", DescribeOptions{IncludeSynonyms: true})
	if e != nil {
		t.Fatal(e)
	}
	var got []string
	for _, x := range es {
		got = append(got, show(x))
	}
	want := []string{
		"log.retention.ms=5 DYNAMIC_DEFAULT_BROKER_CONFIG LONG {log.retention.ms=5/DYNAMIC_DEFAULT_BROKER_CONFIG}",
		"message.max.bytes= 2000 DYNAMIC_DEFAULT_BROKER_CONFIG INT {message.max.bytes= 2000/DYNAMIC_DEFAULT_BROKER_CONFIG}",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	es, _ = mustBroker(t, nil).DescribeBroker("", DescribeOptions{})
	if len(es) != 0 {
		t.Fatalf("no cluster defaults set, yet %d described", len(es))
	}
}

func TestDescribeBrokerNames(t *testing.T) {
	b := mustBroker(t, nil)
	_, e := b.DescribeBroker("abc", DescribeOptions{})
	wantError(t, "non-numeric", e, kerr.InvalidRequest.Code, "Broker id must be an integer, but it is: abc")
	_, e = b.DescribeBroker("2", DescribeOptions{})
	wantError(t, "other node", e, kerr.InvalidRequest.Code, "Unexpected broker id, expected 1 or empty string, but received 2")
	es, e := b.DescribeBroker("1", DescribeOptions{Keys: []string{NumPartitions}})
	if e != nil || len(es) != 1 || show(es[0]) != "num.partitions=1 DEFAULT_CONFIG ro INT {}" {
		t.Fatalf("filtered describe: %v %v", es, e)
	}
}
