package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/server"
)

// ShareGroupDescribe v1: sharegroup.Manager.Describe per group. An
// unknown id gets GROUP_ID_NOT_FOUND, an empty one INVALID_GROUP_ID.
// AuthorizedOperations stays "not provided": weir has no ACLs.
var _ = register(handler{key: 77, min: 1, max: 1, serve: (*Broker).handleShareGroupDescribe})

func (b *Broker) handleShareGroupDescribe(_ context.Context, req *server.Request) *server.Reply {
	r := req.Body.(*kmsg.ShareGroupDescribeRequest)
	resp := r.ResponseKind().(*kmsg.ShareGroupDescribeResponse)
	for _, id := range r.GroupIDs {
		resp.Groups = append(resp.Groups, b.shares.Describe(id))
	}
	return server.Ready(resp)
}
