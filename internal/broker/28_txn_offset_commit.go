package broker

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/config"
	"weir/internal/server"
	"weir/internal/txn"
	"weir/internal/txn/coordinator"
)

// TxnOffsetCommit v0-5: a transactional producer's offset commit for a
// group, written to the group's __consumer_offsets partition as a
// transactional batch and pending until the transaction's marker. The
// transaction is first verified with its coordinator (KIP-890: v0-4 ask
// whether the partition is in it, v5 adds it), then the group
// coordinator checks the generation and member and writes.
var _ = register(handler{key: 28, min: 0, max: 5, serve: (*Broker).handleTxnOffsetCommit})

func (b *Broker) handleTxnOffsetCommit(ctx context.Context, req *server.Request) *server.Reply {
	r := req.Body.(*kmsg.TxnOffsetCommitRequest)
	fail := func(code int16) kmsg.Response {
		resp := r.ResponseKind().(*kmsg.TxnOffsetCommitResponse)
		for _, t := range r.Topics {
			rt := kmsg.NewTxnOffsetCommitResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewTxnOffsetCommitResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p.Partition, code
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp
	}
	p, ok := b.coordinatorPartition(r.Group)
	g := b.coord()
	if !ok || g == nil || !p.isLeader() {
		return server.Ready(fail(kerr.NotCoordinator.Code))
	}
	return b.async(ctx, func(ctx context.Context) kmsg.Response {
		op := coordinator.TxnOffsetCommitOperation(r.Version)
		if op == coordinator.AddPartition || b.settings().Bool(config.TransactionPartitionVerify) {
			tp := txn.TopicPartition{Topic: offsetsTopic, Partition: p.index}
			vctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			res, err := b.txn.VerifyTransaction(vctx, r.TransactionalID, r.ProducerID, r.ProducerEpoch, []txn.TopicPartition{tp}, op)
			cancel()
			if err != nil {
				if ctx.Err() != nil {
					return nil
				}
				return fail(kerr.CoordinatorLoadInProgress.Code)
			}
			if code := res[tp]; code != 0 {
				return fail(coordinator.TxnOffsetCommitError(code))
			}
		}
		resp, err := g.TxnOffsetCommit(ctx, r)
		if err != nil {
			return nil
		}
		return resp
	})
}
