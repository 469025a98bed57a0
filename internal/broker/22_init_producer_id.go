package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/server"
)

// InitProducerId v0-5, answered by the transaction coordinator
// (internal/txn/coordinator): an idempotent producer gets a fresh
// producer id at epoch 0 from the durable allocator; a transactional id is
// served by the coordinator of its __transaction_state partition (epoch
// bumps, fencing, KIP-360 recovery, NOT_COORDINATOR elsewhere). v6
// (two-phase commit, KIP-939) is not served.
var _ = register(handler{key: 22, min: 0, max: 5, serve: (*Broker).handleInitProducerID})

func (b *Broker) handleInitProducerID(ctx context.Context, req *server.Request) *server.Reply {
	r := req.Body.(*kmsg.InitProducerIDRequest)
	return b.txnCall(ctx, func(ctx context.Context) (kmsg.Response, error) { return b.txn.InitProducerID(ctx, r) })
}
