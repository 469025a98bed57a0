package broker

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/server"
)

// DescribeGroups v0-6: internal/group's classic and consumer groups. A
// share group is not a classic group, so Kafka describes it as Dead, with
// GROUP_ID_NOT_FOUND and a message saying so from v6.
var _ = register(handler{key: 15, min: 0, max: 6, serve: groupCall(func(b *Broker, ctx context.Context, _ *server.Request, r *kmsg.DescribeGroupsRequest) (kmsg.Response, error) {
	return b.describeGroups(ctx, r)
})})

// describeGroups is DescribeGroups: a share group is not a classic group,
// so Kafka describes it as Dead, with GROUP_ID_NOT_FOUND from v6.
func (b *Broker) describeGroups(ctx context.Context, r *kmsg.DescribeGroupsRequest) (*kmsg.DescribeGroupsResponse, error) {
	resp, err := b.coord().DescribeGroups(ctx, r)
	if err != nil {
		return nil, err
	}
	for i := range resp.Groups {
		g := &resp.Groups[i]
		if _, ok := b.shares.GroupState(g.Group); ok && r.Version >= 6 && g.ErrorCode == kerr.GroupIDNotFound.Code {
			g.ErrorMessage = kmsg.StringPtr(fmt.Sprintf("Group %s is not a classic group.", g.Group))
		}
	}
	return resp, nil
}
