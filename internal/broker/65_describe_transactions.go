package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/server"
)

// DescribeTransactions v0: the state of transactional ids this node
// coordinates (NOT_COORDINATOR for the others).
var _ = register(handler{key: 65, min: 0, max: 0, serve: (*Broker).handleDescribeTransactions})

func (b *Broker) handleDescribeTransactions(ctx context.Context, req *server.Request) *server.Reply {
	r := req.Body.(*kmsg.DescribeTransactionsRequest)
	return b.txnCall(ctx, func(ctx context.Context) (kmsg.Response, error) { return b.txn.DescribeTransactions(ctx, r) })
}
