package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/server"
)

// StreamsGroupDescribe v0 (KIP-1071): internal/group. v1's topology
// description (KIP-1331) is not served: weir stores none.
var _ = register(handler{key: 89, min: 0, max: 0, serve: groupCall(func(b *Broker, ctx context.Context, _ *server.Request, r *kmsg.StreamsGroupDescribeRequest) (kmsg.Response, error) {
	return b.coord().StreamsGroupDescribe(ctx, r)
})})
