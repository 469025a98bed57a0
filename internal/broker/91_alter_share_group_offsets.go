package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/server"
)

// AlterShareGroupOffsets v0: set the start offsets of an empty group's
// share partitions (sharegroup.Manager.AlterOffsets).
var _ = register(handler{key: 91, min: 0, max: 0, serve: (*Broker).handleAlterShareGroupOffsets})

func (b *Broker) handleAlterShareGroupOffsets(ctx context.Context, req *server.Request) *server.Reply {
	return server.Ready(b.shares.AlterOffsets(ctx, req.Body.(*kmsg.AlterShareGroupOffsetsRequest)))
}
