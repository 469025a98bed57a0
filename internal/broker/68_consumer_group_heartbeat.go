package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/admission"
	"weir/internal/server"
)

// ConsumerGroupHeartbeat v0-1 (KIP-848): internal/group. The group's
// subscription regexes resolve to the topics the principal may DESCRIBE.
var _ = register(handler{key: 68, min: 0, max: 1, serve: groupCall(func(b *Broker, ctx context.Context, req *server.Request, r *kmsg.ConsumerGroupHeartbeatRequest) (kmsg.Response, error) {
	client := groupClient(req)
	client.Describable = admission.DescribableTopics(ctx)
	return b.coord().ConsumerGroupHeartbeat(ctx, client, r)
})})
