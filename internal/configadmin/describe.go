package configadmin

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/config"
	"weir/internal/errcode"
	"weir/internal/metadata"
)

// Describe answers DescribeConfigs (Kafka's ConfigHelper): TOPIC and
// BROKER resources by internal/config over the settings in force and the
// topic's overrides, GROUP resources by the host's GroupConfigs; other
// types get INVALID_REQUEST. Each resource fails alone.
func (m *Manager) Describe(r *kmsg.DescribeConfigsRequest) *kmsg.DescribeConfigsResponse {
	resp := r.ResponseKind().(*kmsg.DescribeConfigsResponse)
	opts := config.DescribeOptions{IncludeSynonyms: r.IncludeSynonyms, IncludeDocumentation: r.IncludeDocumentation}
	for _, rr := range r.Resources {
		res := kmsg.NewDescribeConfigsResponseResource()
		res.ResourceType, res.ResourceName = rr.ResourceType, rr.ResourceName
		o := opts
		o.Keys = rr.ConfigNames
		entries, err := m.describeResource(rr.ResourceType, rr.ResourceName, o)
		if err != nil {
			res.ErrorCode, res.ErrorMessage = errcode.Of(err), errcode.Message(err)
		}
		res.Configs = entries
		resp.Resources = append(resp.Resources, res)
	}
	return resp
}

// describeResource answers one DescribeConfigs resource: a topic's name
// is checked before its existence, as Kafka does.
func (m *Manager) describeResource(typ kmsg.ConfigResourceType, name string, opts config.DescribeOptions) ([]config.Entry, error) {
	switch typ {
	case kmsg.ConfigResourceTypeTopic:
		if err := checkTopicName(name); err != nil {
			return nil, err
		}
		overrides, ok := m.host.TopicConfigs(name)
		if !ok {
			return nil, kerr.UnknownTopicOrPartition
		}
		entries, e := m.Settings().DescribeTopic(overrides, opts)
		return entries, KafkaError(e)
	case kmsg.ConfigResourceTypeBroker:
		entries, e := m.Settings().DescribeBroker(name, opts)
		return entries, KafkaError(e)
	case kmsg.ConfigResourceTypeGroupConfig:
		return m.host.Groups().DescribeGroupConfig(name, opts)
	}
	return nil, unsupported(typ)
}

// CreateTopicConfigs lists a new topic's configs for a CreateTopics v5+
// response; nil when they cannot be described.
func (m *Manager) CreateTopicConfigs(overrides map[string]string) []kmsg.CreateTopicsResponseTopicConfig {
	entries, e := m.Settings().DescribeTopic(overrides, config.DescribeOptions{})
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

// checkTopicName answers INVALID_TOPIC_EXCEPTION for a name no topic can
// have.
func checkTopicName(name string) error {
	if err := metadata.ValidTopicName(name); err != nil {
		return fmt.Errorf("%w: %v", kerr.InvalidTopicException, err)
	}
	return nil
}

func unsupported(typ kmsg.ConfigResourceType) error {
	return fmt.Errorf("%w: resource type %v is not supported", kerr.InvalidRequest, typ)
}
