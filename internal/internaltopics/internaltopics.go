// Package internaltopics says how each topic the brokers create for
// themselves is made: its partitions, replication factor and configs,
// from the broker's settings, as Kafka makes them. The broker hands the
// result to kraft.AutoTopicCreationManager, which creates it through the
// controller.
//
// It owns the specifications only: __consumer_offsets, __share_group_state,
// __transaction_state and a Kafka Streams group's repartition and
// changelog topics. Creating them, waiting for them and authorizing the
// creation are the callers'.
package internaltopics

import (
	"strconv"

	"weir/internal/config"
	"weir/internal/kraft"
	"weir/internal/sharestate"
	"weir/internal/streamsgroup"
	"weir/internal/txn/coordinator"
)

// Names of the internal topics.
const (
	Offsets          = "__consumer_offsets"
	TransactionState = "__transaction_state"
	ShareState       = sharestate.Topic
)

// MinSegmentBytes is segment.bytes' lower bound: the broker settings for
// the internal topics' segments accept less, as Kafka's do.
const MinSegmentBytes = 1 << 20

// Group is __consumer_offsets or __share_group_state with the given
// partitions: offsets.topic.replication.factor replicas (at most the
// active brokers) and Kafka's topic configs: __consumer_offsets
// compacted, with offsets.topic.segment.bytes segments;
// __share_group_state with cleanup.policy=delete (KIP-932: its
// coordinator trims it, and compaction would keep a key's latest delta
// without the snapshot it applies to) and, unlike Kafka, no time
// retention, since weir's coordinator does not rewrite the snapshots of
// idle share partitions; with three or more replicas it takes
// min.insync.replicas 2, Kafka's share.coordinator.state.topic.min.isr.
func Group(s *config.Broker, name string, partitions int32) kraft.InternalTopic {
	configs := func(rf int16) map[string]string {
		if name != ShareState {
			return map[string]string{
				"cleanup.policy": "compact",
				"segment.bytes":  itoa(max(s.Int(config.OffsetsTopicSegmentBytes), MinSegmentBytes)),
			}
		}
		c := map[string]string{
			"cleanup.policy": "delete",
			"retention.ms":   "-1",
			"segment.bytes":  itoa(max(s.Int(config.ShareStateSegmentBytes), MinSegmentBytes)),
		}
		if rf >= 3 {
			c["min.insync.replicas"] = "2"
		}
		return c
	}
	return kraft.InternalTopic{Name: name, Partitions: partitions, ReplicationFactor: int16(s.Int(config.OffsetsTopicReplication)), Configs: configs}
}

// Transactions is __transaction_state as Kafka creates it:
// transaction.state.log.num.partitions partitions,
// transaction.state.log.replication.factor replicas (at most the active
// brokers), min.insync.replicas transaction.state.log.min.isr (at most
// the replication factor), compacted.
func Transactions(s *config.Broker) kraft.InternalTopic {
	configs := func(rf int16) map[string]string {
		c := coordinator.TopicConfigs()
		c["min.insync.replicas"] = itoa(min(s.Int(config.TransactionStateMinISR), int32(rf)))
		c["segment.bytes"] = itoa(s.Int(config.TransactionStateSegmentBytes))
		return c
	}
	return kraft.InternalTopic{Name: TransactionState, Partitions: s.Int(config.TransactionStatePartitions),
		ReplicationFactor: int16(s.Int(config.TransactionStateReplication)), Configs: configs}
}

// Streams is a streams group's repartition or changelog topic: the
// partitions and configs the topology asks for, default.replication.factor
// replicas unless it names a factor.
func Streams(s *config.Broker, t streamsgroup.NewTopic) kraft.InternalTopic {
	rf := t.ReplicationFactor
	if rf <= 0 {
		rf = int16(s.Int(config.DefaultReplicationFactor))
	}
	configs := make(map[string]string, len(t.Configs))
	for _, c := range t.Configs {
		configs[c.Key] = c.Value
	}
	return kraft.InternalTopic{Name: t.Name, Partitions: t.Partitions, ReplicationFactor: rf,
		Configs: func(int16) map[string]string { return configs }}
}

func itoa(n int32) string { return strconv.Itoa(int(n)) }
