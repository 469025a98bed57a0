package config

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestNewBrokerErrors(t *testing.T) {
	tests := []struct {
		name  string
		props map[string]string
		want  string
	}{
		{"node.id missing", map[string]string{}, "Missing configuration `node.id`"},
		{"node.id not a number", map[string]string{NodeID: "one"}, "Invalid value one for configuration node.id: Not a number of type INT"},
		{"retention zero", map[string]string{NodeID: "1", "log.retention.ms": "0"}, "log.retention.ms must be unlimited (-1) or, greater than or equal to 1"},
		{"retention zero minutes", map[string]string{NodeID: "1", "log.retention.minutes": "0"}, "log.retention.ms must be unlimited (-1) or, greater than or equal to 1"},
		{"roll zero", map[string]string{NodeID: "1", "log.roll.ms": "0"}, "log.roll.ms must be greater than or equal to 1"},
		{"jitter negative", map[string]string{NodeID: "1", "log.roll.jitter.ms": "-1"}, "log.roll.jitter.ms must be greater than or equal to 0"},
		{"empty log.dirs", map[string]string{NodeID: "1", LogDirs: ""}, "Configuration 'log.dirs' must not be empty"},
		{"bad listener", map[string]string{NodeID: "1", Listeners: "localhost:9092"}, "Unable to parse localhost:9092 to a broker endpoint"},
		{"bad port", map[string]string{NodeID: "1", Listeners: "PLAINTEXT://:70000"}, "port 70000 is out of range"},
		{"duplicate listener", map[string]string{NodeID: "1", Listeners: "PLAINTEXT://:1,plaintext://:2"}, "Each listener must have a different name"},
		{"unmapped listener", map[string]string{NodeID: "1", Listeners: "INTERNAL://:1"}, "No security protocol defined for listener INTERNAL"},
		{"advertised not listening", map[string]string{NodeID: "1", AdvertisedListeners: "SSL://h:1"}, "advertised.listeners listener names must be equal to or a subset"},
		{"bad protocol map", map[string]string{NodeID: "1", ListenerSecurityMap: "PLAINTEXT"}, "is not NAME:PROTOCOL"},
		{"two bad keys", map[string]string{NodeID: "1", NumPartitions: "x", "log.segment.bytes": "1"}, "num.partitions"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewBroker(tt.props)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("NewBroker error = %v, want it to contain %q", err, tt.want)
			}
		})
	}
	_, err := NewBroker(map[string]string{NodeID: "1", NumPartitions: "x", "log.segment.bytes": "1"})
	if !strings.Contains(err.Error(), "log.segment.bytes") {
		t.Fatalf("every bad key should be reported: %v", err)
	}
}

func TestListeners(t *testing.T) {
	b := mustBroker(t, map[string]string{
		Listeners:           "PLAINTEXT://127.0.0.1:19092, INTERNAL://[::1]:19093,EXTERNAL://:0",
		AdvertisedListeners: "PLAINTEXT://broker.example:19092",
		ListenerSecurityMap: "PLAINTEXT:PLAINTEXT,INTERNAL:PLAINTEXT,EXTERNAL:SSL",
	})
	want := []Listener{
		{"PLAINTEXT", "127.0.0.1", 19092, "PLAINTEXT"},
		{"INTERNAL", "::1", 19093, "PLAINTEXT"},
		{"EXTERNAL", "", 0, "SSL"},
	}
	if got := b.Listeners(); !reflect.DeepEqual(got, want) {
		t.Fatalf("Listeners = %+v", got)
	}
	if got := b.Listeners()[1].Addr(); got != "[::1]:19093" {
		t.Fatalf("Addr = %q", got)
	}
	adv := b.AdvertisedListeners()
	if len(adv) != 1 || adv[0].Host != "broker.example" || adv[0].SecurityProtocol != "PLAINTEXT" {
		t.Fatalf("AdvertisedListeners = %+v", adv)
	}
	def := mustBroker(t, nil)
	if got := def.AdvertisedListeners(); len(got) != 1 || got[0].Addr() != ":9092" {
		t.Fatalf("default advertised listeners = %+v, want listeners", got)
	}
}

// TestTopicDefaultsFromBroker checks Kafka's resolution of topic defaults
// from broker settings, including the hours and minutes forms.
func TestTopicDefaultsFromBroker(t *testing.T) {
	tests := []struct {
		props map[string]string
		name  string
		want  string
	}{
		{nil, RetentionMs, "604800000"},
		{map[string]string{"log.retention.hours": "1"}, RetentionMs, "3600000"},
		{map[string]string{"log.retention.minutes": "2", "log.retention.hours": "1"}, RetentionMs, "120000"},
		{map[string]string{"log.retention.ms": "5", "log.retention.minutes": "2"}, RetentionMs, "5"},
		{map[string]string{"log.retention.ms": "-7"}, RetentionMs, "-1"},
		{map[string]string{"log.retention.hours": "-1"}, RetentionMs, "-1"},
		{map[string]string{"log.roll.hours": "2"}, SegmentMs, "7200000"},
		{map[string]string{"log.roll.ms": "10", "log.roll.hours": "2"}, SegmentMs, "10"},
		{map[string]string{"log.flush.scheduler.interval.ms": "500"}, FlushMs, "500"},
		{map[string]string{"log.flush.interval.ms": "100", "log.flush.scheduler.interval.ms": "500"}, FlushMs, "100"},
		{map[string]string{"message.max.bytes": "2000"}, MaxMessageBytes, "2000"},
		{map[string]string{"log.segment.delete.delay.ms": "0"}, FileDeleteDelayMs, "0"},
		{map[string]string{"log.cleanup.policy": "compact,delete"}, CleanupPolicy, "compact,delete"},
		{map[string]string{"log.cleaner.min.cleanable.ratio": "0.25"}, "min.cleanable.dirty.ratio", "0.25"},
		{map[string]string{WeirLogSyncBeforeAck: "true"}, SyncBeforeAck, "true"},
	}
	for _, tt := range tests {
		b := mustBroker(t, tt.props)
		if got := b.topicDefault(tt.name).String(); got != tt.want {
			t.Errorf("%v: %s = %s, want %s", tt.props, tt.name, got, tt.want)
		}
	}
}

func TestBrokerAccessors(t *testing.T) {
	b := mustBroker(t, map[string]string{LogDir: "/d1", FaultFetchResponseMs: "250"})
	if got := b.LogDirs(); !reflect.DeepEqual(got, []string{"/d1"}) {
		t.Fatalf("LogDirs falls back to log.dir: %q", got)
	}
	if b.Millis(FaultFetchResponseMs) != 250*time.Millisecond || b.Millis(FaultProduceResponseMs) != 0 {
		t.Fatal("fault delays")
	}
	if b.Int(SocketRequestMaxBytes) != 104857600 || b.Int(OffsetsTopicPartitions) != 50 || b.Int(OffsetsTopicReplication) != 3 {
		t.Fatal("defaults")
	}
	if b.Long("log.flush.interval.messages") != 1<<63-1 || b.Rack() != "" {
		t.Fatal("defaults")
	}
	if v, ok := b.Value(AdvertisedListeners); !ok || !v.IsNull() {
		t.Fatal("advertised.listeners should be a null value")
	}
	if _, ok := b.Value("nope"); ok {
		t.Fatal("unknown name found")
	}
	if got := mustBroker(t, map[string]string{"x.y": "1", "a.b": "2"}).UnknownKeys(); !reflect.DeepEqual(got, []string{"a.b", "x.y"}) {
		t.Fatalf("UnknownKeys = %q", got)
	}
	defer func() {
		if recover() == nil {
			t.Fatal("reading an undefined config should panic: it is a bug in the caller")
		}
	}()
	b.Int("no.such.config")
}

func TestWithDynamic(t *testing.T) {
	b := mustBroker(t, map[string]string{"log.retention.bytes": "100"})
	nb, dropped := b.WithDynamic(
		map[string]string{"log.retention.bytes": "200", "min.insync.replicas": "2", NumPartitions: "3", "custom.key": "x"},
		map[string]string{"log.retention.bytes": "300", "message.max.bytes": "oops"},
	)
	if len(dropped) != 2 || !strings.Contains(dropped[0], "num.partitions") || !strings.Contains(dropped[1], "message.max.bytes") {
		t.Fatalf("dropped = %q", dropped)
	}
	if nb.Long("log.retention.bytes") != 300 || nb.Int("min.insync.replicas") != 2 || nb.Int(NumPartitions) != 1 {
		t.Fatal("layers not applied in order node > cluster > static")
	}
	if b.Long("log.retention.bytes") != 100 {
		t.Fatal("WithDynamic changed the original")
	}
	if got := nb.DynamicConfigs(false); got["custom.key"] != "x" || len(got) != 3 {
		t.Fatalf("cluster dynamic = %v", got)
	}
	if got := nb.StaticConfigs(); got["log.retention.bytes"] != "100" {
		t.Fatalf("static = %v", got)
	}
	// A layer that breaks a rule spanning keys is not applied.
	same, dropped := nb.WithDynamic(map[string]string{"log.retention.ms": "0"}, nil)
	if same != nb || len(dropped) != 1 {
		t.Fatalf("a broken dynamic state was applied: %q", dropped)
	}
}
