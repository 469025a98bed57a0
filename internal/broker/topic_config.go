package broker

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	wlog "weir/internal/log"
)

// topicLogConfig resolves a topic's log settings from the broker defaults
// and the topic's overrides.
func (b *Broker) topicLogConfig(overrides map[string]string) (wlog.Config, error) {
	cfg := b.cfg.LogDefaults
	_ = overrides // resolved by internal/config once topic configs are wired
	return cfg, nil
}

// validateTopicConfigs checks topic config overrides.
func (b *Broker) validateTopicConfigs(configs map[string]string) error {
	_, err := b.topicLogConfig(configs)
	return err
}

// describeTopicConfigsForCreate lists a new topic's configs for a
// CreateTopics v5+ response.
func (b *Broker) describeTopicConfigsForCreate(configs map[string]string) []kmsg.CreateTopicsResponseTopicConfig {
	return nil
}
