package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/server"
)

// DeleteShareGroupOffsets v0: forget the state of an empty group's share
// partitions of the named topics (their next use starts them from
// share.auto.offset.reset). GROUP_ID_NOT_FOUND and NON_EMPTY_GROUP are
// answered for the whole request, UNKNOWN_TOPIC_OR_PARTITION per topic.
var _ = register(handler{key: 92, min: 0, max: 0, serve: (*Broker).handleDeleteShareGroupOffsets})

func (b *Broker) handleDeleteShareGroupOffsets(ctx context.Context, req *server.Request) *server.Reply {
	r := req.Body.(*kmsg.DeleteShareGroupOffsetsRequest)
	resp := r.ResponseKind().(*kmsg.DeleteShareGroupOffsetsResponse)
	if r.GroupID == "" {
		resp.ErrorCode = kerr.InvalidGroupID.Code
		return server.Ready(resp)
	}
	b.shares.deleteOffsets(ctx, r, resp)
	return server.Ready(resp)
}
