package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/server"
)

// EndTxn v0-5: commit or abort the producer's transaction (v5, KIP-890,
// answers the bumped epoch), answered by the transaction coordinator
// once the prepared state is written; the markers follow.
var _ = register(handler{key: 26, min: 0, max: 5, serve: (*Broker).handleEndTxn})

func (b *Broker) handleEndTxn(ctx context.Context, req *server.Request) *server.Reply {
	r := req.Body.(*kmsg.EndTxnRequest)
	return b.txnCall(ctx, func(ctx context.Context) (kmsg.Response, error) { return b.txn.EndTxn(ctx, r) })
}
