package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/server"
)

// AddOffsetsToTxn v0-4: the group's __consumer_offsets partition joins
// the producer's transaction (its TxnOffsetCommit then writes there),
// answered by the transaction coordinator.
var _ = register(handler{key: 25, min: 0, max: 4, serve: (*Broker).handleAddOffsetsToTxn})

func (b *Broker) handleAddOffsetsToTxn(ctx context.Context, req *server.Request) *server.Reply {
	r := req.Body.(*kmsg.AddOffsetsToTxnRequest)
	p, ok := b.coordinatorPartition(r.Group)
	if !ok {
		b.ensureOffsetsTopicAsync()
		resp := r.ResponseKind().(*kmsg.AddOffsetsToTxnResponse)
		resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
		return server.Ready(resp)
	}
	return b.txnCall(ctx, func(ctx context.Context) (kmsg.Response, error) {
		return b.txn.AddOffsetsToTxn(ctx, r, p.index)
	})
}
