package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/server"
)

// OffsetFetch v1-10: internal/group.
var _ = register(handler{key: 9, min: 1, max: 10, serve: groupCall(func(b *Broker, ctx context.Context, _ *server.Request, r *kmsg.OffsetFetchRequest) (kmsg.Response, error) {
	return b.coord().OffsetFetch(ctx, r)
})})
