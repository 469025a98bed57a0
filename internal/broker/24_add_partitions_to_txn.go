package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/server"
)

// AddPartitionsToTxn v0-5: a client adding partitions to its transaction
// (v0-3), or a partition leader's batch of verifications (v4+, KIP-890's
// VerifyOnly), answered by the transaction coordinator.
var _ = register(handler{key: 24, min: 0, max: 5, serve: (*Broker).handleAddPartitionsToTxn})

func (b *Broker) handleAddPartitionsToTxn(ctx context.Context, req *server.Request) *server.Reply {
	r := req.Body.(*kmsg.AddPartitionsToTxnRequest)
	return b.txnCall(ctx, func(ctx context.Context) (kmsg.Response, error) { return b.txn.AddPartitionsToTxn(ctx, r) })
}
