package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/metadata"
	"weir/internal/server"
)

// CreateAcls v1-3: decided by the controller (controller.CreateAcls);
// answered once this node's image holds the ACLs created, so that the
// client's next request here is authorized by them.
var _ = register(handler{key: 30, min: 1, max: 3, serve: func(b *Broker, ctx context.Context, req *server.Request) *server.Reply {
	r := req.Body.(*kmsg.CreateACLsRequest)
	return b.forwardThenWait(ctx, req, func(resp kmsg.Response) func() bool {
		var want []*metadata.ACL
		for i, res := range resp.(*kmsg.CreateACLsResponse).Results {
			if res.ErrorCode == 0 && i < len(r.Creations) {
				c := &r.Creations[i]
				want = append(want, &metadata.ACL{ResourceType: int8(c.ResourceType), ResourceName: c.ResourceName, PatternType: int8(c.ResourcePatternType),
					Principal: c.Principal, Host: c.Host, Operation: int8(c.Operation), PermissionType: int8(c.PermissionType)})
			}
		}
		return func() bool {
			acls := b.img.Load().ACLs()
			for _, a := range want {
				if _, ok := acls.Find(a); !ok {
					return false
				}
			}
			return true
		}
	})
}})
