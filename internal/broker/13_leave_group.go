package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/server"
)

// LeaveGroup v0-5: internal/group.
var _ = register(handler{key: 13, min: 0, max: 5, serve: groupCall(func(b *Broker, ctx context.Context, _ *server.Request, r *kmsg.LeaveGroupRequest) (kmsg.Response, error) {
	return b.coord().LeaveGroup(ctx, r)
})})
