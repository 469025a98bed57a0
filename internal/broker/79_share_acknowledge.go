package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/server"
)

// ShareAcknowledge v1-2 (v2 adds IsRenewAck and AcquisitionLockTimeoutMs,
// KIP-1222): sharegroup.Manager.Acknowledge, which answers once the
// acknowledgements are durable.
var _ = register(handler{key: 79, min: 1, max: 2, serve: (*Broker).handleShareAcknowledge})

func (b *Broker) handleShareAcknowledge(ctx context.Context, req *server.Request) *server.Reply {
	return server.Ready(b.shares.Acknowledge(ctx, req.Body.(*kmsg.ShareAcknowledgeRequest)))
}
