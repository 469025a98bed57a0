package broker

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The group administration APIs answer for share groups as well as for
// the group coordinator's classic and consumer groups; group ids are one
// namespace.

// describeGroups is DescribeGroups: a share group is not a classic group,
// so Kafka describes it as Dead, with GROUP_ID_NOT_FOUND from v6.
func (b *Broker) describeGroups(ctx context.Context, r *kmsg.DescribeGroupsRequest) (*kmsg.DescribeGroupsResponse, error) {
	resp, err := b.coord().DescribeGroups(ctx, r)
	if err != nil {
		return nil, err
	}
	for i := range resp.Groups {
		g := &resp.Groups[i]
		if _, ok := b.shares.groupState(g.Group); ok && r.Version >= 6 && g.ErrorCode == kerr.GroupIDNotFound.Code {
			g.ErrorMessage = kmsg.StringPtr(fmt.Sprintf("Group %s is not a classic group.", g.Group))
		}
	}
	return resp, nil
}

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
	for _, g := range b.shares.listGroups() {
		if (r.Version < 4 || match(r.StatesFilter, g.GroupState)) && (r.Version < 5 || match(r.TypesFilter, g.GroupType)) {
			resp.Groups = append(resp.Groups, g)
		}
	}
	sort.Slice(resp.Groups, func(i, j int) bool { return resp.Groups[i].Group < resp.Groups[j].Group })
	return resp, nil
}

// deleteGroups is DeleteGroups: share groups are deleted here (empty
// ones, with their share partitions' state), the rest by the group
// coordinator; answers keep the request's order.
func (b *Broker) deleteGroups(ctx context.Context, r *kmsg.DeleteGroupsRequest) (*kmsg.DeleteGroupsResponse, error) {
	var others []string
	shared := map[string]bool{}
	for _, id := range r.Groups {
		if _, ok := b.shares.groupState(id); ok {
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
		if err := b.shares.deleteGroup(ctx, id); err != nil {
			g.ErrorCode = errCode(err)
			if r.Version >= 3 {
				g.ErrorMessage = errMessage(err)
			}
		}
		resp.Groups = append(resp.Groups, g)
	}
	return resp, nil
}
