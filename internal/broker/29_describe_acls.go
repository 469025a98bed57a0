package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/authz"
	"weir/internal/server"
)

// DescribeAcls v1-3: the ACLs of this node's metadata image that the
// filter matches (authz.DescribeACLs). Authorization (DESCRIBE on the
// cluster; SECURITY_DISABLED without an authorizer) happened before.
var _ = register(handler{key: 29, min: 1, max: 3, serve: func(b *Broker, _ context.Context, req *server.Request) *server.Reply {
	return server.Ready(authz.DescribeACLs(b.img.Load().ACLs(), req.Body.(*kmsg.DescribeACLsRequest)))
}})
