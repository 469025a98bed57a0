package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/server"
)

// JoinGroup v0-9 (from v0 again, as Kafka 4.1+ does for old librdkafka,
// KAFKA-19444): internal/group; it waits for the other members, so it
// runs off the request path.
var _ = register(handler{key: 11, min: 0, max: 9, serve: waitingGroupCall(func(b *Broker, ctx context.Context, req *server.Request, r *kmsg.JoinGroupRequest) (kmsg.Response, error) {
	return b.coord().JoinGroup(ctx, groupClient(req), r)
})})
