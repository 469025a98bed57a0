package broker

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"

	"weir/internal/config"
	"weir/internal/producer"
	"weir/internal/replica"
)

// topic is a named set of partitions. The partitions slice and configs
// map are replaced, never modified in place, under Broker.mu, so a reader
// holding a *topic sees a consistent view.
type topic struct {
	name       string
	id         [16]byte
	internal   bool
	self       int32 // this node's id, which partition.isLeader compares
	partitions []*partition
	configs    map[string]string // dynamic overrides (DYNAMIC_TOPIC_CONFIG)
	env        *replica.Env      // the broker's, which its replicas share (partition.ReplicaEnv)
}

// Kafka's rule for legal topic names.
var legalTopic = regexp.MustCompile(`^[a-zA-Z0-9._-]+$`)

func validateTopicName(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("%w: topic name is empty", kerr.InvalidTopicException)
	case name == "." || name == "..":
		return fmt.Errorf("%w: topic name cannot be %q", kerr.InvalidTopicException, name)
	case len(name) > 249:
		return fmt.Errorf("%w: topic name is longer than 249 characters", kerr.InvalidTopicException)
	case !legalTopic.MatchString(name):
		return fmt.Errorf("%w: topic name %q holds characters other than ASCII alphanumerics, '.', '_' and '-'", kerr.InvalidTopicException, name)
	}
	return nil
}

func partitionDir(dataDir, topic string, p int32) string {
	return filepath.Join(dataDir, topic+"-"+strconv.Itoa(int(p)))
}

// producerOptions are the settings the partitions' producer states
// share: one Options while producer.id.expiration.ms stays the same, as
// a partition takes it when opened.
func (b *Broker) producerOptions() *producer.Options {
	exp := b.settings().Millis(config.ProducerIDExpiration)
	if o := b.prodOpts.Load(); o != nil && o.Expiration == exp {
		return o
	}
	o := &producer.Options{Now: b.now, Expiration: exp}
	b.prodOpts.Store(o)
	return o
}

// lookupTopic returns the topic by name.
func (b *Broker) lookupTopic(name string) *topic {
	b.mu.RLock()
	defer b.mu.RUnlock()
	return b.topics[name]
}

func (b *Broker) lookupTopicID(id [16]byte) *topic {
	b.mu.RLock()
	defer b.mu.RUnlock()
	return b.topicsByID[id]
}

// partitionOf finds a partition this node leads, or reports the Kafka
// error for why not: UNKNOWN_TOPIC_OR_PARTITION, or
// NOT_LEADER_OR_FOLLOWER when another node leads it (or none does).
func (b *Broker) partitionOf(t *topic, p int32) (*partition, error) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	if t == nil || p < 0 || int(p) >= len(t.partitions) {
		return nil, kerr.UnknownTopicOrPartition
	}
	part := t.partitions[p]
	// Until Start finished, the image may be the one this node had on
	// disk: it must not act on leaderships the cluster moved meanwhile.
	if !part.isLeader() || !b.started.Load() {
		return nil, kerr.NotLeaderForPartition
	}
	return part, nil
}

// checkPartitionCount refuses counts below 1 or above the per-topic cap.
func (b *Broker) checkPartitionCount(n int32) error {
	if n <= 0 {
		return fmt.Errorf("%w: number of partitions must be larger than 0", kerr.InvalidPartitions)
	}
	if n > b.cfg.MaxPartitionsPerTopic {
		return fmt.Errorf("%w: %d partitions exceed this broker's limit of %d per topic", kerr.InvalidPartitions, n, b.cfg.MaxPartitionsPerTopic)
	}
	return nil
}
