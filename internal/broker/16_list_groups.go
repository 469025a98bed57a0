package broker

import (
	"context"
	"slices"
	"sort"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/server"
)

// ListGroups v0-5: internal/group's groups and the share groups
// (sharegroup.Manager.ListGroups), under the same v4 states and v5 types
// filters; group ids are one namespace.
var _ = register(handler{key: 16, min: 0, max: 5, serve: groupCall(func(b *Broker, ctx context.Context, _ *server.Request, r *kmsg.ListGroupsRequest) (kmsg.Response, error) {
	return b.listGroups(ctx, r)
})})

// listGroups is ListGroups with the share groups added (type and protocol
// type "share"), under the same v4 states and v5 types filters.
func (b *Broker) listGroups(ctx context.Context, r *kmsg.ListGroupsRequest) (*kmsg.ListGroupsResponse, error) {
	resp, err := b.coord().ListGroups(ctx, r)
	if err != nil || resp.ErrorCode != 0 {
		return resp, err
	}
	match := func(filter []string, v string) bool {
		return len(filter) == 0 || slices.ContainsFunc(filter, func(f string) bool {
			return strings.EqualFold(strings.TrimSpace(f), v)
		})
	}
	for _, g := range b.shares.ListGroups() {
		if (r.Version < 4 || match(r.StatesFilter, g.GroupState)) && (r.Version < 5 || match(r.TypesFilter, g.GroupType)) {
			resp.Groups = append(resp.Groups, g)
		}
	}
	sort.Slice(resp.Groups, func(i, j int) bool { return resp.Groups[i].Group < resp.Groups[j].Group })
	return resp, nil
}
