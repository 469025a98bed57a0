package internaltopics

import (
	"maps"
	"testing"

	"weir/internal/config"
	"weir/internal/streamsgroup"
)

func settings(t *testing.T, kv map[string]string) *config.Broker {
	t.Helper()
	s, err := config.NewBroker(kv)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestSpecs: each internal topic's partitions, replication factor and
// configs, for the replication factor it is created with.
func TestSpecs(t *testing.T) {
	s := settings(t, map[string]string{
		"offsets.topic.replication.factor":         "3",
		"offsets.topic.segment.bytes":              "1024", // below the floor
		"transaction.state.log.num.partitions":     "7",
		"transaction.state.log.replication.factor": "3",
		"transaction.state.log.min.isr":            "2",
		"default.replication.factor":               "2",
		"node.id":                                  "1",
	})
	for _, tc := range []struct {
		name       string
		got        func() (string, int32, int16, map[string]string)
		partitions int32
		rf         int16
		configs    map[string]string
	}{
		{"__consumer_offsets at RF 3", func() (string, int32, int16, map[string]string) {
			it := Group(s, Offsets, 50)
			return it.Name, it.Partitions, it.ReplicationFactor, it.Configs(3)
		}, 50, 3, map[string]string{"cleanup.policy": "compact", "segment.bytes": "1048576"}},
		{"__share_group_state at RF 3", func() (string, int32, int16, map[string]string) {
			it := Group(s, ShareState, 50)
			return it.Name, it.Partitions, it.ReplicationFactor, it.Configs(3)
		}, 50, 3, map[string]string{"cleanup.policy": "delete", "retention.ms": "-1", "segment.bytes": itoa(s.Int(config.ShareStateSegmentBytes)), "min.insync.replicas": "2"}},
		{"__share_group_state at RF 1 (a single node)", func() (string, int32, int16, map[string]string) {
			it := Group(s, ShareState, 50)
			return it.Name, it.Partitions, it.ReplicationFactor, it.Configs(1)
		}, 50, 3, map[string]string{"cleanup.policy": "delete", "retention.ms": "-1", "segment.bytes": itoa(s.Int(config.ShareStateSegmentBytes))}},
		{"__transaction_state at RF 3", func() (string, int32, int16, map[string]string) {
			it := Transactions(s)
			return it.Name, it.Partitions, it.ReplicationFactor, it.Configs(3)
		}, 7, 3, map[string]string{"cleanup.policy": "compact", "compression.type": "uncompressed", "unclean.leader.election.enable": "false",
			"min.insync.replicas": "2", "segment.bytes": itoa(s.Int(config.TransactionStateSegmentBytes))}},
		{"__transaction_state at RF 1: min.insync.replicas capped", func() (string, int32, int16, map[string]string) {
			it := Transactions(s)
			return it.Name, it.Partitions, it.ReplicationFactor, it.Configs(1)
		}, 7, 3, map[string]string{"cleanup.policy": "compact", "compression.type": "uncompressed", "unclean.leader.election.enable": "false",
			"min.insync.replicas": "1", "segment.bytes": itoa(s.Int(config.TransactionStateSegmentBytes))}},
		{"a streams changelog, default replication", func() (string, int32, int16, map[string]string) {
			it := Streams(s, streamsgroup.NewTopic{Name: "app-store-changelog", Partitions: 4, ReplicationFactor: -1,
				Configs: []streamsgroup.TopicConfig{{Key: "cleanup.policy", Value: "compact"}}})
			return it.Name, it.Partitions, it.ReplicationFactor, it.Configs(2)
		}, 4, 2, map[string]string{"cleanup.policy": "compact"}},
	} {
		name, parts, rf, configs := tc.got()
		if parts != tc.partitions || rf != tc.rf || !maps.Equal(configs, tc.configs) {
			t.Errorf("%s: %s %d partitions RF %d %v; want %d, %d, %v", tc.name, name, parts, rf, configs, tc.partitions, tc.rf, tc.configs)
		}
	}
}
