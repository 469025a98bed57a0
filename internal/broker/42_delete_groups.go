package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/server"
)

// DeleteGroups v0-3: share groups are deleted by the share-group service
// (empty ones, with their share partitions' state), the rest by
// internal/group; answers keep the request's order.
var _ = register(handler{key: 42, min: 0, max: 3, serve: groupCall(func(b *Broker, ctx context.Context, _ *server.Request, r *kmsg.DeleteGroupsRequest) (kmsg.Response, error) {
	return b.deleteGroups(ctx, r)
})})

// deleteGroups is DeleteGroups: share groups are deleted here (empty
// ones, with their share partitions' state), the rest by the group
// coordinator; answers keep the request's order.
func (b *Broker) deleteGroups(ctx context.Context, r *kmsg.DeleteGroupsRequest) (*kmsg.DeleteGroupsResponse, error) {
	var others []string
	shared := map[string]bool{}
	for _, id := range r.Groups {
		if _, ok := b.shares.GroupState(id); ok {
			shared[id] = true
		} else {
			others = append(others, id)
		}
	}
	sub := *r
	sub.Groups = others
	resp, err := b.coord().DeleteGroups(ctx, &sub)
	if err != nil {
		return nil, err
	}
	byID := map[string]kmsg.DeleteGroupsResponseGroup{}
	for _, g := range resp.Groups {
		byID[g.Group] = g
	}
	resp.Groups = resp.Groups[:0]
	for _, id := range r.Groups {
		if !shared[id] {
			resp.Groups = append(resp.Groups, byID[id])
			continue
		}
		g := kmsg.NewDeleteGroupsResponseGroup()
		g.Group = id
		if err := b.shares.DeleteGroup(ctx, id); err != nil {
			g.ErrorCode = errCode(err)
			if r.Version >= 3 {
				g.ErrorMessage = errMessage(err)
			}
		}
		resp.Groups = append(resp.Groups, g)
	}
	return resp, nil
}
