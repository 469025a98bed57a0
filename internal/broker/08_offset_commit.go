package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/server"
)

// OffsetCommit v2-10: internal/group, which writes the offsets to
// __consumer_offsets and answers once they are committed.
var _ = register(handler{key: 8, min: 2, max: 10, serve: groupCall(func(b *Broker, ctx context.Context, _ *server.Request, r *kmsg.OffsetCommitRequest) (kmsg.Response, error) {
	return b.coord().OffsetCommit(ctx, r)
})})
