package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/server"
)

// ConsumerGroupDescribe v0-1 (KIP-848): internal/group.
var _ = register(handler{key: 69, min: 0, max: 1, serve: groupCall(func(b *Broker, ctx context.Context, _ *server.Request, r *kmsg.ConsumerGroupDescribeRequest) (kmsg.Response, error) {
	return b.coord().ConsumerGroupDescribe(ctx, r)
})})
