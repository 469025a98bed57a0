package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/server"
)

// OffsetDelete v0: internal/group.
var _ = register(handler{key: 47, min: 0, max: 0, serve: groupCall(func(b *Broker, ctx context.Context, _ *server.Request, r *kmsg.OffsetDeleteRequest) (kmsg.Response, error) {
	return b.coord().OffsetDelete(ctx, r)
})})
