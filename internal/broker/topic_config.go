package broker

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"

	"weir/internal/config"
	"weir/internal/configadmin"
	wlog "weir/internal/log"
)

// settings is the broker configuration in force (static properties plus
// dynamic overrides), held by the config service, which replaces it
// whole when a dynamic config changes.
func (b *Broker) settings() *config.Broker { return b.cfgAdmin.Settings() }

// topicLogConfig resolves a topic's log settings from the broker config
// and the topic's overrides.
func (b *Broker) topicLogConfig(overrides map[string]string) (wlog.Config, error) {
	return b.cfgAdmin.TopicLogConfig(overrides)
}

// configError turns a config package error into a Go error carrying its
// Kafka code.
var configError = configadmin.KafkaError

// applyTopicConfigs pushes a topic's resolved settings to its partition
// logs, after its overrides or the broker defaults changed.
func (b *Broker) applyTopicConfigs(t *topic, overrides map[string]string, parts []*partition) error {
	cfg, err := b.topicLogConfig(overrides)
	if err != nil {
		return err
	}
	minISR := b.minISROf(overrides)
	for _, p := range parts {
		if p.rep == nil {
			continue
		}
		if err := p.rep.SetLogConfig(cfg); err != nil {
			return fmt.Errorf("%w: %s-%d: %v", kerr.InvalidConfig, t.name, p.index, err)
		}
		if p.rep != nil {
			p.rep.SetMinISR(minISR)
		}
	}
	return nil
}
