package broker

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/config"
	wlog "weir/internal/log"
)

// settings is the broker configuration in force (static properties plus
// dynamic overrides); it is replaced whole when a dynamic config changes.
func (b *Broker) settings() *config.Broker { return b.conf.Load() }

// topicLogConfig resolves a topic's log settings from the broker config
// and the topic's overrides.
func (b *Broker) topicLogConfig(overrides map[string]string) (wlog.Config, error) {
	t, err := b.settings().Topic(overrides)
	if err != nil {
		return wlog.Config{}, fmt.Errorf("%w: %v", kerr.InvalidConfig, err)
	}
	return t.LogConfig(), nil
}

// configError turns a config package error into a Go error carrying its
// Kafka code.
func configError(e *config.Error) error {
	if e == nil {
		return nil
	}
	if ke := kerr.TypedErrorForCode(e.Code); ke != nil {
		return fmt.Errorf("%w: %s", ke, e.Message)
	}
	return fmt.Errorf("%w: %s", kerr.InvalidConfig, e.Message)
}

// describeTopicConfigsForCreate lists a new topic's configs for a
// CreateTopics v5+ response.
func (b *Broker) describeTopicConfigsForCreate(overrides map[string]string) []kmsg.CreateTopicsResponseTopicConfig {
	entries, e := b.settings().DescribeTopic(overrides, config.DescribeOptions{})
	if e != nil {
		return nil
	}
	out := make([]kmsg.CreateTopicsResponseTopicConfig, 0, len(entries))
	for _, en := range entries {
		c := kmsg.NewCreateTopicsResponseTopicConfig()
		c.Name, c.Value, c.ReadOnly, c.Source, c.IsSensitive = en.Name, en.Value, en.ReadOnly, int8(en.Source), en.IsSensitive
		out = append(out, c)
	}
	return out
}

// applyTopicConfigs pushes a topic's resolved settings to its partition
// logs, after its overrides or the broker defaults changed.
func (b *Broker) applyTopicConfigs(t *topic, overrides map[string]string, parts []*partition) error {
	cfg, err := b.topicLogConfig(overrides)
	if err != nil {
		return err
	}
	minISR := b.minISROf(overrides)
	for _, p := range parts {
		if p.log == nil {
			continue
		}
		if err := p.log.SetConfig(cfg); err != nil {
			return fmt.Errorf("%w: %s-%d: %v", kerr.InvalidConfig, t.name, p.index, err)
		}
		if p.rep != nil {
			p.rep.SetMinISR(minISR)
		}
	}
	return nil
}
