package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/quota"
	"weir/internal/server"
)

// DescribeClientQuotas v0-1: the quotas of this node's metadata image
// that the filter matches (quota.Describe). Authorization
// (DESCRIBE_CONFIGS on the cluster) happened before.
var _ = register(handler{key: 48, min: 0, max: 1, serve: func(b *Broker, _ context.Context, req *server.Request) *server.Reply {
	return server.Ready(quota.Describe(b.img.Load().ClientQuotas(), req.Body.(*kmsg.DescribeClientQuotasRequest)))
}})
