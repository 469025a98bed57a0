package configadmin

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/config"
)

// Host is what the config service needs of the node it runs on. The
// broker implements it over its topic registry, its controller client and
// its metadata loop.
type Host interface {
	// TopicConfigs is a topic's overrides as this node's registry holds
	// them (never modified by the caller); ok is false when the topic
	// does not exist here.
	TopicConfigs(name string) (overrides map[string]string, ok bool)
	// Groups serves GROUP config resources (the share groups' configs).
	Groups() GroupConfigs
	// Forward has the active controller decide a config request (an
	// IncrementalAlterConfigs or AlterConfigs) and returns its answer and
	// the metadata offset the change committed at, -1 when the
	// controller did not say. Its errors wrap the kerr error a client
	// should see.
	Forward(ctx context.Context, req kmsg.Request) (resp kmsg.Response, offset int64, err error)
	// WaitApplied waits until this node has applied the metadata log up
	// to offset, so that the client's next request here sees the change.
	WaitApplied(ctx context.Context, offset int64) error
}

// GroupConfigs is Kafka's GroupConfigManager side of GROUP resources;
// *sharegroup.Manager implements it. Its errors wrap kerr errors.
type GroupConfigs interface {
	// DescribeGroupConfig answers DescribeConfigs for one group.
	DescribeGroupConfig(group string, opts config.DescribeOptions) ([]config.Entry, error)
	// ValidateGroupConfig checks IncrementalAlterConfigs operations
	// against this node's copy of the group's configs.
	ValidateGroupConfig(group string, ops []config.IncrementalOp) error
	// MergeGroupConfigs applies the operations to the group's current
	// overrides (never modified): the controller's decision.
	MergeGroupConfigs(group string, current map[string]string, ops []config.IncrementalOp) (map[string]string, error)
}
