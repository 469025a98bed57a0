package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/controller"
	"weir/internal/server"
)

// DescribeUserScramCredentials v0: the mechanisms and iterations of this
// node's metadata image (controller.DescribeUserScramCredentials; never
// salts or keys). Authorization (DESCRIBE on the cluster) happened
// before.
var _ = register(handler{key: 50, min: 0, max: 0, serve: func(b *Broker, _ context.Context, req *server.Request) *server.Reply {
	return server.Ready(controller.DescribeUserScramCredentials(b.img.Load(), req.Body.(*kmsg.DescribeUserSCRAMCredentialsRequest)))
}})
