package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/server"
)

// AlterShareGroupOffsets v0: set the start offsets of share partitions.
// The group must be empty (NON_EMPTY_GROUP); an unknown group is created
// empty, as Kafka does. Each partition gets a new state epoch, so records
// of its old state are ignored from then on; unknown topics and
// partitions are UNKNOWN_TOPIC_OR_PARTITION.
var _ = register(handler{key: 91, min: 0, max: 0, serve: (*Broker).handleAlterShareGroupOffsets})

func (b *Broker) handleAlterShareGroupOffsets(ctx context.Context, req *server.Request) *server.Reply {
	r := req.Body.(*kmsg.AlterShareGroupOffsetsRequest)
	resp := r.ResponseKind().(*kmsg.AlterShareGroupOffsetsResponse)
	if r.GroupID == "" {
		resp.ErrorCode = kerr.InvalidGroupID.Code
		return server.Ready(resp)
	}
	b.shares.alterOffsets(ctx, r, resp)
	return server.Ready(resp)
}
