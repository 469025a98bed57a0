package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/server"
)

// DeleteShareGroupOffsets v0: forget the state of an empty group's share
// partitions of the named topics (sharegroup.Manager.DeleteOffsets).
var _ = register(handler{key: 92, min: 0, max: 0, serve: (*Broker).handleDeleteShareGroupOffsets})

func (b *Broker) handleDeleteShareGroupOffsets(ctx context.Context, req *server.Request) *server.Reply {
	return server.Ready(b.shares.DeleteOffsets(ctx, req.Body.(*kmsg.DeleteShareGroupOffsetsRequest)))
}
