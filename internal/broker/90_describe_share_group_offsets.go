package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/server"
)

// DescribeShareGroupOffsets v0-1 (v1 adds Lag):
// sharegroup.Manager.DescribeOffsets.
var _ = register(handler{key: 90, min: 0, max: 1, serve: (*Broker).handleDescribeShareGroupOffsets})

func (b *Broker) handleDescribeShareGroupOffsets(_ context.Context, req *server.Request) *server.Reply {
	return server.Ready(b.shares.DescribeOffsets(req.Body.(*kmsg.DescribeShareGroupOffsetsRequest)))
}
