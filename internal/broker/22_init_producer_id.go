package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/server"
)

// InitProducerId v0-5 for idempotent producers: a fresh producer id with
// epoch 0 from the durable allocator. A transactional id gets the error
// internal/producer chooses (weir has no transaction coordinator yet).
// The v3+ ProducerID/ProducerEpoch of an idempotent producer asking to
// bump its epoch are answered with a new id, which Kafka also does when it
// cannot bump; TransactionTimeoutMillis is unused.
var _ = register(handler{key: 22, min: 0, max: 5, serve: (*Broker).handleInitProducerID})

func (b *Broker) handleInitProducerID(_ context.Context, req *server.Request) *server.Reply {
	r := req.Body.(*kmsg.InitProducerIDRequest)
	resp := r.ResponseKind().(*kmsg.InitProducerIDResponse)
	id, epoch, err := b.producerIDs.InitProducerID(r.TransactionalID)
	resp.ProducerID, resp.ProducerEpoch = id, epoch
	resp.ErrorCode = errCode(err)
	return server.Ready(resp)
}
