package config

import (
	"math"
	"testing"
)

func TestParseValue(t *testing.T) {
	tests := []struct {
		typ     Type
		raw     string
		want    string // canonical form; "" with null
		wantErr string
	}{
		{Boolean, "true", "true", ""},
		{Boolean, " TRUE\t", "true", ""},
		{Boolean, "False", "false", ""},
		{Boolean, "yes", "", "Expected value to be either true or false"},
		{Boolean, "1", "", "Expected value to be either true or false"},
		{Int, "42", "42", ""},
		{Int, " +42 ", "42", ""},
		{Int, "-2147483648", "-2147483648", ""},
		{Int, "2147483648", "", "Not a number of type INT"},
		{Int, "0x10", "", "Not a number of type INT"},
		{Int, "1_000", "", "Not a number of type INT"},
		{Int, "", "", "Not a number of type INT"},
		{Short, "32767", "32767", ""},
		{Short, "32768", "", "Not a number of type SHORT"},
		{Long, "9223372036854775807", "9223372036854775807", ""},
		{Long, "9223372036854775808", "", "Not a number of type LONG"},
		{Long, "1.5", "", "Not a number of type LONG"},
		{Double, "0.5", "0.5", ""},
		{Double, "1", "1.0", ""},
		{Double, "1e-5", "1.0E-5", ""},
		{Double, "12345678", "1.2345678E7", ""},
		{Double, "0.001", "0.001", ""},
		{Double, "2.5d", "2.5", ""},
		{Double, ".5", "0.5", ""},
		{Double, "-Infinity", "-Infinity", ""},
		{Double, "NaN", "NaN", ""},
		{Double, "1e999", "Infinity", ""},
		{Double, "inf", "", "Not a number of type DOUBLE"},
		{Double, "0x1p3", "", "Not a number of type DOUBLE"},
		{Double, "abc", "", "Not a number of type DOUBLE"},
		{String, "  CreateTime ", "CreateTime", ""},
		{String, "\x01a\x02", "a", ""},
		{List, "", "", ""},
		{List, "  ", "", ""},
		{List, "a,b", "a,b", ""},
		{List, " a ,\tb , c ", "a,b,c", ""},
		{List, "a,", "a,", ""},
		{List, ",a", ",a", ""},
		{Class, "org.example.Policy", "", "Class org.example.Policy could not be found."},
		{Password, " secret ", "secret", ""},
	}
	for _, tt := range tests {
		v, msg := parseValue(tt.typ, tt.raw)
		if msg != tt.wantErr {
			t.Errorf("parseValue(%s, %q) error = %q, want %q", typeName(tt.typ), tt.raw, msg, tt.wantErr)
			continue
		}
		if msg == "" && v.String() != tt.want {
			t.Errorf("parseValue(%s, %q) = %q, want %q", typeName(tt.typ), tt.raw, v.String(), tt.want)
		}
	}
}

func TestListParseKeepsItems(t *testing.T) {
	v, msg := parseValue(List, "delete,,compact")
	if msg != "" {
		t.Fatal(msg)
	}
	if got := v.Strings(); len(got) != 3 || got[1] != "" {
		t.Fatalf("items = %q, want the empty middle item kept", got)
	}
	if got := v.javaString(); got != "[delete, , compact]" {
		t.Fatalf("javaString = %q", got)
	}
}

func TestJavaDouble(t *testing.T) {
	tests := []struct {
		f    float64
		want string
	}{
		{0, "0.0"},
		{math.Copysign(0, -1), "-0.0"},
		{0.5, "0.5"},
		{1, "1.0"},
		{100, "100.0"},
		{0.001, "0.001"},
		{0.0001, "1.0E-4"},
		{9999999, "9999999.0"},
		{1e7, "1.0E7"},
		{1.25e-10, "1.25E-10"},
		{-3.5e20, "-3.5E20"},
		{math.MaxFloat64, "1.7976931348623157E308"},
		{5e-324, "4.9E-324"},
		{1e23, "1.0E23"},
		{0.002, "0.002"},
		{123.45, "123.45"},
		{-0.75, "-0.75"},
		{math.Inf(1), "Infinity"},
		{math.NaN(), "NaN"},
	}
	for _, tt := range tests {
		if got := javaDouble(tt.f); got != tt.want {
			t.Errorf("javaDouble(%v) = %q, want %q", tt.f, got, tt.want)
		}
	}
}

// TestDefParse checks the full messages, which name the key, the offending
// value and the constraint as Kafka's ConfigException does.
func TestDefParse(t *testing.T) {
	tests := []struct {
		name, raw, want string
	}{
		{"retention.ms", "abc", "Invalid value abc for configuration retention.ms: Not a number of type LONG"},
		{"retention.ms", " 12 ", ""},
		{"retention.ms", "-1", ""},
		{"retention.ms", "-2", "Invalid value -2 for configuration retention.ms: Value must be at least -1"},
		{"segment.bytes", "1000", "Invalid value 1000 for configuration segment.bytes: Value must be at least 1048576"},
		{"segment.bytes", "1048576", ""},
		{"min.cleanable.dirty.ratio", "1.5", "Invalid value 1.5 for configuration min.cleanable.dirty.ratio: Value must be no more than 1"},
		{"min.cleanable.dirty.ratio", "-0.1", "Invalid value -0.1 for configuration min.cleanable.dirty.ratio: Value must be at least 0"},
		{"compression.type", "GZIP", "Invalid value GZIP for configuration compression.type: String must be one of: uncompressed, zstd, lz4, snappy, gzip, producer"},
		{"compression.type", " zstd ", ""},
		{"compression.gzip.level", "0", "Invalid value 0 for configuration compression.gzip.level: Value must be between 1 and 9 or equal to -1"},
		{"compression.gzip.level", "-1", ""},
		{"compression.zstd.level", "-131073", "Invalid value -131073 for configuration compression.zstd.level: Value must be at least -131072"},
		{"message.timestamp.type", "createtime", "Invalid value createtime for configuration message.timestamp.type: String must be one of: CreateTime, LogAppendTime"},
		{"cleanup.policy", "delete,compact", ""},
		{"cleanup.policy", "", ""},
		{"cleanup.policy", "delete,foo", "Invalid value foo for configuration cleanup.policy: String must be one of: compact, delete"},
		{"cleanup.policy", "delete,delete", "Configuration 'cleanup.policy' values must not be duplicated."},
		{"cleanup.policy", "delete,", "Configuration 'cleanup.policy' values must not be empty."},
		{"unclean.leader.election.enable", "maybe", "Invalid value maybe for configuration unclean.leader.election.enable: Expected value to be either true or false"},
		{"leader.replication.throttled.replicas", "*", ""},
		{"leader.replication.throttled.replicas", "0:1, 1:2", ""},
		{"leader.replication.throttled.replicas", "0-1", "Invalid value [0-1] for configuration leader.replication.throttled.replicas: leader.replication.throttled.replicas must be the literal '*' or a list of replicas in the following format: [partitionId]:[brokerId],[partitionId]:[brokerId],..."},
		{"min.insync.replicas", "0", "Invalid value 0 for configuration min.insync.replicas: Value must be at least 1"},
		{"max.message.bytes", "2147483648", "Invalid value 2147483648 for configuration max.message.bytes: Not a number of type INT"},
	}
	for _, tt := range tests {
		d, ok := topicDefs.get(tt.name)
		if !ok {
			t.Fatalf("no topic config %s", tt.name)
		}
		_, msg := d.parse(tt.raw)
		if msg != tt.want {
			t.Errorf("%s=%q: got %q, want %q", tt.name, tt.raw, msg, tt.want)
		}
	}
	// Broker-only validators.
	brokerTests := []struct{ name, raw, want string }{
		{"log.dir", "", "Configuration 'log.dir' must not be empty. Valid values include: any non-empty value"},
		{"log.dirs", "/a,/a", "Configuration 'log.dirs' values must not be duplicated."},
		{"num.partitions", "0", "Invalid value 0 for configuration num.partitions: Value must be at least 1"},
		{"offsets.topic.replication.factor", "40000", "Invalid value 40000 for configuration offsets.topic.replication.factor: Not a number of type SHORT"},
	}
	for _, tt := range brokerTests {
		d, _ := brokerDefs.get(tt.name)
		if _, msg := d.parse(tt.raw); msg != tt.want {
			t.Errorf("%s=%q: got %q, want %q", tt.name, tt.raw, msg, tt.want)
		}
	}
}

func TestValidValues(t *testing.T) {
	tests := map[string]string{
		"segment.bytes":                         "[1048576,...]",
		"min.cleanable.dirty.ratio":             "[0,...,1]",
		"compression.type":                      "[uncompressed, zstd, lz4, snappy, gzip, producer]",
		"cleanup.policy":                        "[compact, delete] (empty config allowed) (null not allowed)",
		"compression.gzip.level":                "[1,...,9] or -1",
		"retention.bytes":                       "",
		"leader.replication.throttled.replicas": "[partitionId]:[brokerId],[partitionId]:[brokerId],...",
	}
	for name, want := range tests {
		d, _ := TopicDef(name)
		if got := d.ValidValues(); got != want {
			t.Errorf("%s: ValidValues = %q, want %q", name, got, want)
		}
	}
}
