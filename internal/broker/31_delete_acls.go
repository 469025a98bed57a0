package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/metadata"
	"weir/internal/server"
)

// DeleteAcls v1-3: decided by the controller (controller.DeleteAcls);
// answered once this node's image no longer holds the ACLs deleted.
var _ = register(handler{key: 31, min: 1, max: 3, serve: func(b *Broker, ctx context.Context, req *server.Request) *server.Reply {
	return b.forwardThenWait(ctx, req, func(resp kmsg.Response) func() bool {
		var gone []*metadata.ACL
		for _, res := range resp.(*kmsg.DeleteACLsResponse).Results {
			for _, m := range res.MatchingACLs {
				gone = append(gone, &metadata.ACL{ResourceType: int8(m.ResourceType), ResourceName: m.ResourceName, PatternType: int8(m.ResourcePatternType),
					Principal: m.Principal, Host: m.Host, Operation: int8(m.Operation), PermissionType: int8(m.PermissionType)})
			}
		}
		return func() bool {
			acls := b.img.Load().ACLs()
			for _, a := range gone {
				if _, ok := acls.Find(a); ok {
					return false
				}
			}
			return true
		}
	})
}})
