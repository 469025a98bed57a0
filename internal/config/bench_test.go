package config

import "testing"

// BenchmarkTopicLogConfig measures resolving a topic's overrides into a
// log.Config, done when a partition opens or its topic config changes.
func BenchmarkTopicLogConfig(b *testing.B) {
	br := mustBroker(b, map[string]string{"log.retention.hours": "24"})
	overrides := map[string]string{RetentionMs: "3600000", SegmentBytes: "104857600", CleanupPolicy: "delete"}
	b.ReportAllocs()
	for b.Loop() {
		t, err := br.Topic(overrides)
		if err != nil {
			b.Fatal(err)
		}
		_ = t.LogConfig()
	}
}

// BenchmarkDescribeTopic measures a full DescribeConfigs answer for one
// topic with synonyms and documentation.
func BenchmarkDescribeTopic(b *testing.B) {
	br := mustBroker(b, map[string]string{"log.retention.ms": "1000"})
	overrides := map[string]string{RetentionMs: "3600000"}
	o := DescribeOptions{IncludeSynonyms: true, IncludeDocumentation: true}
	b.ReportAllocs()
	for b.Loop() {
		if _, e := br.DescribeTopic(overrides, o); e != nil {
			b.Fatal(e)
		}
	}
}
