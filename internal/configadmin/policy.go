package configadmin

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/controller"
	"weir/internal/metadata"
)

// Policy is the active controller's ConfigPolicy on this node (Kafka's
// ControllerConfigurationValidator with the merge of
// ConfigurationControlManager): internal/config's checks for TOPIC and
// BROKER resources (which validate the whole new set of overrides), the
// host's GroupConfigs for GROUP resources, over the configs the
// controller holds, with the settings in force here.
type Policy struct{ m *Manager }

var _ controller.ConfigPolicy = Policy{}

// Policy returns the Manager's ConfigPolicy for the controller.
func (m *Manager) Policy() Policy { return Policy{m} }

// Incremental implements controller.ConfigPolicy.
func (p Policy) Incremental(res metadata.ConfigResource, current map[string]string, ops []kmsg.IncrementalAlterConfigsRequestResourceConfig) (map[string]string, error) {
	st := p.m.Settings()
	switch res.Type {
	case metadata.ResourceTopic:
		next, e := st.IncrementalAlterTopic(current, ops)
		return next, KafkaError(e)
	case metadata.ResourceBroker:
		next, e := st.MergeBrokerOps(res.Name, current, ops)
		return next, KafkaError(e)
	case metadata.ResourceGroup:
		return p.m.host.Groups().MergeGroupConfigs(res.Name, current, ops)
	}
	return nil, fmt.Errorf("%w: resource type %d is not supported", kerr.InvalidRequest, res.Type)
}

// Replace implements controller.ConfigPolicy.
func (p Policy) Replace(res metadata.ConfigResource, _ map[string]string, entries []kmsg.AlterConfigsRequestResourceConfig) (map[string]string, error) {
	st := p.m.Settings()
	switch res.Type {
	case metadata.ResourceTopic:
		next, e := st.AlterTopic(entries)
		return next, KafkaError(e)
	case metadata.ResourceBroker:
		next, e := st.ReplaceBroker(res.Name, entries)
		return next, KafkaError(e)
	}
	return nil, fmt.Errorf("%w: resource type %d is not supported", kerr.InvalidRequest, res.Type)
}
