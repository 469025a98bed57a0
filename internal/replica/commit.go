package replica

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"

	wlog "weir/internal/log"
)

// An append is acknowledged once it is what the request's acks promise:
//
//   - acks=0: nothing; acks=1: written to the leader's log;
//   - and, where the topic syncs before acknowledging
//     (weir.sync.before.ack), fsynced on the leader;
//   - acks=-1 (all): also below the high watermark, that is held by every
//     member of the ISR, with at least min.insync.replicas of them.
//
// "Committed" below means the acks=-1 case. Every writer uses these three
// calls (the produce handler, the group coordinator's offsets, the share
// coordinator's state, the transaction log, the cleaner's checkpoints), so
// the rule lives in one place.

// Acked reports whether an append (res, from Append) is acknowledged for
// acks without waiting: done is false while the fsync or the replicas are
// still to come; when done, err is the outcome WaitAcked would return.
func (r *Replica) Acked(res AppendResult, acks int16) (done bool, err error) {
	if acks == 0 {
		return true, nil
	}
	end := res.LastOffset + 1
	if r.log().Config().SyncBeforeAck && r.log().DurableOffset() < end {
		return false, nil
	}
	if acks != -1 {
		return true, nil
	}
	return r.HWReached(res.LeaderEpoch, end)
}

// WaitAcked waits until an append is acknowledged for acks. It returns
// ctx.Err() (wrapped) when ctx ends first, a KAFKA_STORAGE_ERROR when the
// fsync failed, and WaitForHW's outcome for acks=-1
// (NOT_LEADER_OR_FOLLOWER when leadership moved meanwhile,
// NOT_ENOUGH_REPLICAS_AFTER_APPEND under min.insync.replicas).
func (r *Replica) WaitAcked(ctx context.Context, res AppendResult, acks int16) error {
	if acks == 0 {
		return nil
	}
	end := res.LastOffset + 1
	if r.log().Config().SyncBeforeAck {
		if err := r.log().WaitDurable(ctx, end); err != nil {
			if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
				return err
			}
			return fmt.Errorf("%w: %v", kerr.KafkaStorageError, err)
		}
	}
	if acks != -1 {
		return nil
	}
	return r.WaitForHW(ctx, res.LeaderEpoch, end)
}

// Written is the AppendResult of a batch already in the log up to
// lastOffset (a producer's retry of a duplicate), in the current leader
// epoch, so that the retry is answered by Acked and WaitAcked only once
// the original batch is what the retry's acks promise, as Kafka waits for
// it: a batch written but not yet replicated is not acknowledged to
// acks=all by its retry. Not leader: NOT_LEADER_OR_FOLLOWER.
func (r *Replica) Written(lastOffset int64) (AppendResult, error) {
	epoch, ok := r.Leading()
	if !ok {
		return AppendResult{}, fmt.Errorf("%w: not the leader", kerr.NotLeaderForPartition)
	}
	res := AppendResult{LeaderEpoch: epoch}
	res.LastOffset = lastOffset
	return res, nil
}

// AppendCommitted appends batch as leader and waits until it is committed
// (acks=-1, see WaitAcked). Internal topics write this way: the answer
// that depends on the records goes out only once they survive the loss of
// the leader.
func (r *Replica) AppendCommitted(ctx context.Context, batch []byte, opts wlog.AppendOptions) (AppendResult, error) {
	res, err := r.Append(batch, -1, opts)
	if err != nil {
		return res, err
	}
	return res, r.WaitAcked(ctx, res, -1)
}

// Leading returns the leader epoch this replica leads in, and false when
// it does not lead. Fencing by leader epoch (share state, transaction
// markers) reads it here, not from the metadata image, which a replica
// applies a moment later.
func (r *Replica) Leading() (epoch int32, ok bool) {
	r.roleMu.RLock()
	defer r.roleMu.RUnlock()
	if r.role != RoleLeader {
		return UndefinedEpoch, false
	}
	return r.leaderEpoch, true
}
