package client

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"weir/client/partitioner"
)

func TestProducerConfigErrors(t *testing.T) {
	tests := []struct {
		name  string
		props map[string]string
		key   string
	}{
		{"unknown key", map[string]string{"batch.sise": "1"}, "batch.sise"},
		{"missing bootstrap", map[string]string{"bootstrap.servers": ""}, "bootstrap.servers"},
		{"bad bootstrap", map[string]string{"bootstrap.servers": "localhost"}, "bootstrap.servers"},
		{"int not a number", map[string]string{"batch.size": "big"}, "batch.size"},
		{"int overflow", map[string]string{"batch.size": "3000000000"}, "batch.size"},
		{"negative linger", map[string]string{"linger.ms": "-1"}, "linger.ms"},
		{"bool", map[string]string{"enable.idempotence": "yes"}, "enable.idempotence"},
		{"acks", map[string]string{"acks": "2"}, "acks"},
		{"compression", map[string]string{"compression.type": "brotli"}, "compression.type"},
		{"in flight zero", map[string]string{"max.in.flight.requests.per.connection": "0"}, "max.in.flight.requests.per.connection"},
		{"availability timeout", map[string]string{"partitioner.availability.timeout.ms": "-5"}, "partitioner.availability.timeout.ms"},
		{"partitioner class", map[string]string{"partitioner.class": "com.example.Nope"}, "partitioner.class"},
		{"gzip level", map[string]string{"compression.gzip.level": "10"}, "compression.gzip.level"},
		{"delivery below linger+request", map[string]string{"delivery.timeout.ms": "1000", "request.timeout.ms": "30000"}, "delivery.timeout.ms"},
		{"idempotence needs acks=all", map[string]string{"enable.idempotence": "true", "acks": "1"}, "acks"},
		{"idempotence needs in-flight <= 5", map[string]string{"enable.idempotence": "true", "max.in.flight.requests.per.connection": "6"}, "max.in.flight.requests.per.connection"},
		{"security protocol", map[string]string{"security.protocol": "TLS"}, "security.protocol"},
		{"SASL with Kerberos", map[string]string{"security.protocol": "SASL_SSL"}, "security.protocol"},
		{"SASL without JAAS", map[string]string{"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN"}, "security.protocol"},
		{"JKS truststore", map[string]string{"security.protocol": "SSL", "ssl.truststore.location": "/nonexistent.jks"}, "security.protocol"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			props := map[string]string{"bootstrap.servers": "127.0.0.1:9092"}
			for k, v := range tt.props {
				props[k] = v
			}
			p, err := NewProducer(props)
			if err == nil {
				p.Close(testCtx(t))
				t.Fatal("construction succeeded")
			}
			var ce *ConfigError
			if !errors.As(err, &ce) || ce.Key != tt.key || !strings.Contains(err.Error(), tt.key) {
				t.Fatalf("error %v (%T), want a ConfigError naming %s", err, err, tt.key)
			}
		})
	}
}

func TestProducerConfigDefaults(t *testing.T) {
	c, err := parseProducerConfig(map[string]string{"bootstrap.servers": "a:1"}, buildOptions(nil))
	if err != nil {
		t.Fatal(err)
	}
	if c.batchSize != 16384 || c.linger != 5*time.Millisecond || c.maxInFlight != 5 || c.acks != -1 || !c.idempotent ||
		c.bufferMemory != 32<<20 || c.deliveryTimeout != 120*time.Second || !c.part.Adaptive || c.part.AvailabilityTimeoutMs != 0 || c.part.IgnoreKeys {
		t.Fatalf("defaults differ from the Java client's: %+v", c)
	}
	// Idempotence on by default quietly yields to acks=1, as in Java.
	c, err = parseProducerConfig(map[string]string{"bootstrap.servers": "a:1", "acks": "1"}, buildOptions(nil))
	if err != nil || c.idempotent {
		t.Fatalf("acks=1 without explicit idempotence: err %v idempotent %v", err, c.idempotent)
	}
}

func TestPartitionerClassSelection(t *testing.T) {
	custom := partitioner.Func(func(partitioner.Record, *partitioner.Topic) int32 { return 0 })
	o := buildOptions([]Option{WithPartitioner("com.example.Mine", custom)})
	for _, tc := range []struct{ class, want string }{
		{"", "<nil>"},
		{RoundRobinPartitionerClass, "partitioner.roundRobin"},
		{"RoundRobinPartitioner", "partitioner.roundRobin"},
		{DefaultPartitionerClass, "partitioner.stickyPerBatch"},
		{UniformStickyPartitionerClass, "partitioner.stickyPerBatch"},
		{"com.example.Mine", "partitioner.Func"},
	} {
		c, err := parseProducerConfig(map[string]string{"bootstrap.servers": "a:1", "partitioner.class": tc.class}, o)
		if err != nil {
			t.Fatalf("%s: %v", tc.class, err)
		}
		p, _ := c.customPartitioner(o)
		if got := typeName(p); got != tc.want {
			t.Errorf("%s: got %s, want %s", tc.class, got, tc.want)
		}
	}
}

func typeName(v any) string {
	if v == nil {
		return "<nil>"
	}
	return strings.TrimPrefix(fmt.Sprintf("%T", v), "*")
}

// FuzzParseProducerConfig feeds arbitrary values to every producer property:
// construction either succeeds or fails with a ConfigError naming a key that
// was given, never a panic.
func FuzzParseProducerConfig(f *testing.F) {
	f.Add("batch.size", "16384", "linger.ms", "5")
	f.Add("acks", "all", "enable.idempotence", "false")
	f.Add("partitioner.class", "RoundRobinPartitioner", "delivery.timeout.ms", "1")
	f.Add("compression.zstd.level", "-131073", "retries", "0")
	f.Fuzz(func(t *testing.T, k1, v1, k2, v2 string) {
		props := map[string]string{"bootstrap.servers": "a:1", k1: v1, k2: v2}
		_, err := parseProducerConfig(props, buildOptions(nil))
		if err == nil {
			return
		}
		var ce *ConfigError
		if !errors.As(err, &ce) {
			t.Fatalf("error %v is not a ConfigError", err)
		}
		if _, ok := props[ce.Key]; !ok && ce.Key != "acks" && ce.Key != "retries" && ce.Key != "max.in.flight.requests.per.connection" {
			t.Fatalf("error names %q, which was not given", ce.Key)
		}
	})
}
