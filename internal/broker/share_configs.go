package broker

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/config"
	"weir/internal/server"
)

// Group configs (resource type GROUP, 32) for DescribeConfigs and
// IncrementalAlterConfigs: the share.* configs of Kafka's GroupConfig,
// recorded in the metadata log (GROUP config resources) and applied by
// every broker to the group's share partitions it leads. The
// consumer.* and streams.* group configs are not served: setting one is
// INVALID_CONFIG, describing lists only share.*. Any group id is a valid
// resource, whether or not the group exists, as in Kafka.
//
// The handlers of 32 and 44 answer TOPIC and BROKER resources; this file
// puts a wrapper in front of them that answers GROUP resources and passes
// requests without any through unchanged. (A GROUP case in those handlers
// would make the wrapper unnecessary.)
func init() {
	wrap := func(key int16, serve func(*Broker, context.Context, *server.Request, func(*Broker, context.Context, *server.Request) *server.Reply) *server.Reply) {
		h := handlers[key]
		inner := h.serve
		h.serve = func(b *Broker, ctx context.Context, req *server.Request) *server.Reply {
			return serve(b, ctx, req, inner)
		}
		handlers[key] = h
	}
	wrap(32, (*Broker).describeConfigsWithGroups)
	wrap(44, (*Broker).incrementalAlterConfigsWithGroups)
}

func (b *Broker) describeConfigsWithGroups(ctx context.Context, req *server.Request, inner func(*Broker, context.Context, *server.Request) *server.Reply) *server.Reply {
	r := req.Body.(*kmsg.DescribeConfigsRequest)
	if !hasGroupResource(len(r.Resources), func(i int) kmsg.ConfigResourceType { return r.Resources[i].ResourceType }) {
		return inner(b, ctx, req)
	}
	resp := r.ResponseKind().(*kmsg.DescribeConfigsResponse)
	opts := config.DescribeOptions{IncludeSynonyms: r.IncludeSynonyms, IncludeDocumentation: r.IncludeDocumentation}
	for _, rr := range r.Resources {
		res := kmsg.NewDescribeConfigsResponseResource()
		res.ResourceType, res.ResourceName = rr.ResourceType, rr.ResourceName
		o := opts
		o.Keys = rr.ConfigNames
		var entries []config.Entry
		var err error
		if rr.ResourceType == kmsg.ConfigResourceTypeGroupConfig {
			entries, err = b.shares.describeGroupConfig(rr.ResourceName, o)
		} else {
			entries, err = b.describeResource(rr.ResourceType, rr.ResourceName, o)
		}
		if err != nil {
			res.ErrorCode, res.ErrorMessage = errCode(err), errMessage(err)
		}
		res.Configs = entries
		resp.Resources = append(resp.Resources, res)
	}
	return server.Ready(resp)
}

func (b *Broker) incrementalAlterConfigsWithGroups(ctx context.Context, req *server.Request, inner func(*Broker, context.Context, *server.Request) *server.Reply) *server.Reply {
	r := req.Body.(*kmsg.IncrementalAlterConfigsRequest)
	if !hasGroupResource(len(r.Resources), func(i int) kmsg.ConfigResourceType { return r.Resources[i].ResourceType }) {
		return inner(b, ctx, req)
	}
	resp := r.ResponseKind().(*kmsg.IncrementalAlterConfigsResponse)
	for _, rr := range r.Resources {
		res := kmsg.NewIncrementalAlterConfigsResponseResource()
		res.ResourceType, res.ResourceName = rr.ResourceType, rr.ResourceName
		var err error
		if rr.ResourceType == kmsg.ConfigResourceTypeGroupConfig {
			err = b.shares.alterGroupConfig(ctx, rr.ResourceName, rr.Configs, r.ValidateOnly)
		} else {
			err = b.alterNonGroupResource(rr, r.ValidateOnly)
		}
		res.ErrorCode, res.ErrorMessage = errCode(err), errMessage(err)
		resp.Resources = append(resp.Resources, res)
	}
	return server.Ready(resp)
}

// alterNonGroupResource is what handler 44 does for TOPIC and BROKER
// resources, for requests that mix them with GROUP resources.
func (b *Broker) alterNonGroupResource(rr kmsg.IncrementalAlterConfigsRequestResource, validateOnly bool) error {
	switch rr.ResourceType {
	case kmsg.ConfigResourceTypeTopic:
		return b.alterTopic(rr.ResourceName, validateOnly, func(current map[string]string) (map[string]string, *config.Error) {
			return b.settings().IncrementalAlterTopic(current, rr.Configs)
		})
	case kmsg.ConfigResourceTypeBroker:
		return b.alterBroker(rr.ResourceName, validateOnly, func(st *config.Broker) (map[string]string, *config.Error) {
			return st.IncrementalAlterBroker(rr.ResourceName, rr.Configs)
		})
	}
	return fmt.Errorf("%w: resource type %v is not supported", kerr.InvalidRequest, rr.ResourceType)
}

func hasGroupResource(n int, typ func(int) kmsg.ConfigResourceType) bool {
	for i := range n {
		if typ(i) == kmsg.ConfigResourceTypeGroupConfig {
			return true
		}
	}
	return false
}

// describeGroupConfig answers DescribeConfigs for one GROUP resource.
func (c *shareCoordinator) describeGroupConfig(group string, opts config.DescribeOptions) ([]config.Entry, error) {
	if group == "" {
		return nil, fmt.Errorf("%w: Group name must not be empty", kerr.InvalidRequest)
	}
	return c.cfg.describeGroupConfigs(c.groupConfigs(group), opts), nil
}

// alterGroupConfig applies IncrementalAlterConfigs to one GROUP resource.
func (c *shareCoordinator) alterGroupConfig(ctx context.Context, group string, ops []kmsg.IncrementalAlterConfigsRequestResourceConfig, validateOnly bool) error {
	if group == "" {
		return fmt.Errorf("%w: Group name must not be empty", kerr.InvalidRequest)
	}
	current := c.groupConfigs(group)
	next, err := c.cfg.alterGroupConfigs(current, ops)
	if err != nil || validateOnly {
		return err
	}
	// Recorded in the metadata log, so every broker applies the same
	// group configs (applyGroupConfigs) to the share partitions it leads.
	return c.b.storeConfigs(kmsg.ConfigResourceTypeGroupConfig, group, current, next, func() bool {
		return mapsEqual(c.groupConfigs(group), next)
	})
}

// applyGroupConfigs takes a group's configs from the metadata image,
// which keeps them durable.
func (c *shareCoordinator) applyGroupConfigs(group string, next map[string]string) {
	if mapsEqual(c.groupConfigs(group), next) {
		return
	}
	c.setGroupConfigs(group, next)
}
