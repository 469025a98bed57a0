package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/server"
)

// ListTransactions v0-2: the transactions of the __transaction_state
// partitions this node leads, filtered by state, producer id, duration
// (v1) and transactional id pattern (v2); admin clients ask every broker.
var _ = register(handler{key: 66, min: 0, max: 2, serve: (*Broker).handleListTransactions})

func (b *Broker) handleListTransactions(ctx context.Context, req *server.Request) *server.Reply {
	r := req.Body.(*kmsg.ListTransactionsRequest)
	return b.txnCall(ctx, func(ctx context.Context) (kmsg.Response, error) { return b.txn.ListTransactions(ctx, r) })
}
