package broker

import (
	"fmt"
	"maps"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/config"
)

// Config resources are answered by internal/config; these helpers find the
// resource, store what changed and apply it.

// describeResource answers one DescribeConfigs resource.
func (b *Broker) describeResource(typ kmsg.ConfigResourceType, name string, opts config.DescribeOptions) ([]config.Entry, error) {
	switch typ {
	case kmsg.ConfigResourceTypeTopic:
		if err := validateTopicName(name); err != nil {
			return nil, err
		}
		t := b.lookupTopic(name)
		if t == nil {
			return nil, kerr.UnknownTopicOrPartition
		}
		b.mu.RLock()
		overrides := t.configs
		b.mu.RUnlock()
		entries, e := b.settings().DescribeTopic(overrides, opts)
		return entries, configError(e)
	case kmsg.ConfigResourceTypeBroker:
		entries, e := b.settings().DescribeBroker(name, opts)
		return entries, configError(e)
	}
	return nil, fmt.Errorf("%w: resource type %v is not supported", kerr.InvalidRequest, typ)
}

// alterTopic stores new overrides for a topic computed by change from its
// current ones, and applies them, unless validateOnly.
func (b *Broker) alterTopic(name string, validateOnly bool, change func(current map[string]string) (map[string]string, *config.Error)) error {
	if err := validateTopicName(name); err != nil {
		return err
	}
	b.mu.Lock()
	t := b.topics[name]
	var current map[string]string
	if t != nil {
		current = t.configs
	}
	next, e := change(current)
	// Kafka reports a bad config before an unknown topic.
	if e != nil {
		b.mu.Unlock()
		return configError(e)
	}
	if t == nil {
		b.mu.Unlock()
		return kerr.UnknownTopicOrPartition
	}
	if _, err := b.topicLogConfig(next); err != nil {
		b.mu.Unlock()
		return err
	}
	if validateOnly {
		b.mu.Unlock()
		return nil
	}
	if len(next) == 0 {
		next = nil
	}
	t.configs = next
	parts := t.partitions
	err := b.saveMetaLocked()
	b.mu.Unlock()
	if err != nil {
		return fmt.Errorf("%w: %v", kerr.KafkaStorageError, err)
	}
	b.logger.Info("topic config changed", "topic", name, "overrides", len(next))
	return b.applyTopicConfigs(t, next, parts)
}

// alterBroker stores new dynamic broker configs for resource name (""
// for cluster defaults, else this node) and applies the resulting topic
// defaults to every partition, unless validateOnly.
func (b *Broker) alterBroker(name string, validateOnly bool, change func(st *config.Broker) (map[string]string, *config.Error)) error {
	b.mu.Lock()
	st := b.settings()
	next, e := change(st)
	if e != nil {
		b.mu.Unlock()
		return configError(e)
	}
	if validateOnly {
		b.mu.Unlock()
		return nil
	}
	cluster, node := st.DynamicConfigs(false), st.DynamicConfigs(true)
	if name == "" {
		cluster = next
	} else {
		node = next
	}
	nst, dropped := st.WithDynamic(cluster, node)
	for _, d := range dropped {
		b.logger.Warn("dynamic broker config dropped", "reason", d)
	}
	b.conf.Store(nst)
	err := b.saveMetaLocked()
	type target struct {
		t         *topic
		overrides map[string]string
		parts     []*partition
	}
	var targets []target
	for _, t := range b.topics {
		targets = append(targets, target{t, maps.Clone(t.configs), t.partitions})
	}
	b.mu.Unlock()
	if err != nil {
		return fmt.Errorf("%w: %v", kerr.KafkaStorageError, err)
	}
	b.logger.Info("broker config changed", "resource", name)
	for _, tg := range targets {
		if err := b.applyTopicConfigs(tg.t, tg.overrides, tg.parts); err != nil {
			b.logger.Warn("could not apply new broker defaults", "topic", tg.t.name, "err", err)
		}
	}
	return nil
}
