package client

import (
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/client/internal/records"
)

// TestAbortedTracker walks a log of two producers where producer 1's first
// transaction is aborted: its batches before the abort marker are skipped,
// its later transaction and producer 2's records are kept.
func TestAbortedTracker(t *testing.T) {
	a := abortedTracker{list: []kmsg.FetchResponseTopicPartitionAbortedTransaction{{ProducerID: 1, FirstOffset: 0}}}
	steps := []struct {
		b    records.Batch
		skip bool
	}{
		{records.Batch{BaseOffset: 0, LastOffset: 1, ProducerID: 1, Transactional: true}, true},
		{records.Batch{BaseOffset: 2, LastOffset: 3, ProducerID: 2, Transactional: true}, false},
		{records.Batch{BaseOffset: 4, LastOffset: 4, ProducerID: 1, Transactional: true}, true},
		{records.Batch{BaseOffset: 5, LastOffset: 5, ProducerID: 1, Transactional: true, Control: true}, true}, // abort marker
		{records.Batch{BaseOffset: 6, LastOffset: 7, ProducerID: 1, Transactional: true}, false},
		{records.Batch{BaseOffset: 8, LastOffset: 8, ProducerID: 3}, false},
	}
	for i, s := range steps {
		if got := a.skip(&s.b); got != s.skip {
			t.Fatalf("step %d (offset %d): skip=%v, want %v", i, s.b.BaseOffset, got, s.skip)
		}
	}
}

func TestConsumerConfigErrors(t *testing.T) {
	tests := []struct {
		props map[string]string
		key   string
	}{
		{map[string]string{"group.protocol": "share"}, "group.protocol"},
		{map[string]string{"partition.assignment.strategy": "com.example.Mine"}, "partition.assignment.strategy"},
		{map[string]string{"auto.offset.reset": "middle"}, "auto.offset.reset"},
		{map[string]string{"max.poll.records": "0"}, "max.poll.records"},
		{map[string]string{"isolation.level": "serializable"}, "isolation.level"},
		{map[string]string{"group.protocol": "consumer", "session.timeout.ms": "10000"}, "session.timeout.ms"},
		{map[string]string{"group.remote.assignor": "uniform"}, "group.remote.assignor"},
		{map[string]string{"heartbeat.interval.ms": "50000"}, "heartbeat.interval.ms"},
		{map[string]string{"fetch.max.wait.ms": "soon"}, "fetch.max.wait.ms"},
	}
	for _, tt := range tests {
		props := map[string]string{"bootstrap.servers": "127.0.0.1:9092"}
		for k, v := range tt.props {
			props[k] = v
		}
		_, err := NewConsumer(props)
		var ce *ConfigError
		if !errors.As(err, &ce) || ce.Key != tt.key {
			t.Errorf("%v: error %v, want a ConfigError naming %s", tt.props, err, tt.key)
		}
	}
}
