package broker

import (
	"fmt"

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

// alterTopic computes new overrides for a topic with change from its
// current ones, validates them and, unless validateOnly, has the
// controller record them; every replica applies them from the image.
func (b *Broker) alterTopic(name string, validateOnly bool, change func(current map[string]string) (map[string]string, *config.Error)) error {
	if err := validateTopicName(name); err != nil {
		return err
	}
	b.mu.RLock()
	t := b.topics[name]
	var current map[string]string
	if t != nil {
		current = t.configs
	}
	b.mu.RUnlock()
	next, e := change(current)
	// Kafka reports a bad config before an unknown topic.
	if e != nil {
		return configError(e)
	}
	if t == nil {
		return kerr.UnknownTopicOrPartition
	}
	if _, err := b.topicLogConfig(next); err != nil {
		return err
	}
	if validateOnly {
		return nil
	}
	err := b.storeConfigs(kmsg.ConfigResourceTypeTopic, name, current, next, func() bool {
		b.mu.RLock()
		defer b.mu.RUnlock()
		t := b.topics[name]
		return t == nil || mapsEqual(t.configs, next)
	})
	if err == nil {
		b.logger.Info("topic config changed", "topic", name, "overrides", len(next))
	}
	return err
}

// alterBroker computes new dynamic broker configs for resource name (""
// for cluster defaults, else this node) and, unless validateOnly, has the
// controller record them; brokers apply them (and the topic defaults
// they imply) from the image.
func (b *Broker) alterBroker(name string, validateOnly bool, change func(st *config.Broker) (map[string]string, *config.Error)) error {
	st := b.settings()
	next, e := change(st)
	if e != nil {
		return configError(e)
	}
	if validateOnly {
		return nil
	}
	current := st.DynamicConfigs(name != "")
	err := b.storeConfigs(kmsg.ConfigResourceTypeBroker, name, current, next, func() bool {
		return mapsEqual(b.settings().DynamicConfigs(name != ""), next)
	})
	if err == nil {
		b.logger.Info("broker config changed", "resource", name)
	}
	return err
}

// storeConfigs sends the controller the operations that turn current into
// next and waits (bounded) until applied says this node has them.
func (b *Broker) storeConfigs(typ kmsg.ConfigResourceType, name string, current, next map[string]string, applied func() bool) error {
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName = typ, name
	for _, k := range sortedKeys(next) {
		if v, ok := current[k]; ok && v == next[k] {
			continue
		}
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Name, c.Op, c.Value = k, kmsg.IncrementalAlterConfigOpSet, ptr(next[k])
		res.Configs = append(res.Configs, c)
	}
	for _, k := range sortedKeys(current) {
		if _, ok := next[k]; !ok {
			c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
			c.Name, c.Op = k, kmsg.IncrementalAlterConfigOpDelete
			res.Configs = append(res.Configs, c)
		}
	}
	if len(res.Configs) == 0 {
		return nil
	}
	req.Resources = append(req.Resources, res)
	resp, err := b.admin(b.ctx, req, func(kmsg.Response) func() bool { return applied })
	if err != nil {
		return controllerError(err)
	}
	for _, r := range resp.(*kmsg.IncrementalAlterConfigsResponse).Resources {
		if r.ErrorCode != 0 {
			err := kerr.ErrorForCode(r.ErrorCode)
			if r.ErrorMessage != nil {
				return fmt.Errorf("%w: %s", err, *r.ErrorMessage)
			}
			return err
		}
	}
	return nil
}
