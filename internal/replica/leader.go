package replica

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	wlog "weir/internal/log"
)

// AppendResult is a leader append: the log's result and the leader epoch
// the batch was stamped with (WaitForHW needs it).
type AppendResult struct {
	wlog.AppendResult
	LeaderEpoch int32
}

// Append appends a producer's batch as leader. acks is the request's acks;
// with acks=-1 the append is refused with NOT_ENOUGH_REPLICAS when the
// committed ISR is smaller than min.insync.replicas, as Kafka does before
// writing. opts.LeaderEpoch is overwritten with the current leader epoch.
// Not leader: NOT_LEADER_OR_FOLLOWER. The caller then waits for what
// its acks promise with WaitAcked (commit.go). An append wakes the
// broker's parked fetches once: OnHighWatermark when it moved the high
// watermark, else OnAppend.
func (r *Replica) Append(batch []byte, acks int16, opts wlog.AppendOptions) (AppendResult, error) {
	return r.leaderAppend(acks, opts, func(opts wlog.AppendOptions) (wlog.AppendResult, error) {
		l, err := r.OwnLog()
		if err != nil {
			return wlog.AppendResult{}, err
		}
		return l.Append(batch, opts)
	})
}

// AppendMarker writes a transaction marker as leader (WriteTxnMarkers):
// log.AppendMarker under the same rules as Append, with acks=-1 as Kafka
// writes markers (NOT_ENOUGH_REPLICAS under min.insync.replicas). opts.Guard
// is the producer state's marker check (producer.State.MarkerGuard). The
// caller then waits with WaitForHW(ctx, res.LeaderEpoch, res.LastOffset+1)
// before answering the coordinator. Followers copy markers like any batch;
// their log applies them to the producer state it drives.
func (r *Replica) AppendMarker(m wlog.TxnMarker, opts wlog.AppendOptions) (AppendResult, error) {
	return r.leaderAppend(-1, opts, func(opts wlog.AppendOptions) (wlog.AppendResult, error) {
		l, err := r.OwnLog()
		if err != nil {
			return wlog.AppendResult{}, err
		}
		return l.AppendMarker(m, opts)
	})
}

// LastStableOffset is the partition's last stable offset: the log's, at
// the replica's high watermark (read_committed reads stop below it,
// ListOffsets latest with read_committed answers it, and Fetch answers
// carry it). On a leader and a follower alike.
func (r *Replica) LastStableOffset() int64 { return r.log().LastStableOffset(r.hw()) }

// leaderAppend runs one append as leader: role and acks checks, the
// leader epoch stamped, the high watermark moved.
func (r *Replica) leaderAppend(acks int16, opts wlog.AppendOptions, write func(wlog.AppendOptions) (wlog.AppendResult, error)) (AppendResult, error) {
	r.roleMu.RLock()
	if r.role != RoleLeader {
		r.roleMu.RUnlock()
		return AppendResult{}, fmt.Errorf("%w: %s is not the leader", kerr.NotLeaderForPartition, r.Topic())
	}
	epoch := r.leaderEpoch
	if acks == -1 {
		r.mu.Lock()
		n := len(r.ls.isr())
		r.mu.Unlock()
		if minISR := int(r.minISR); n < minISR {
			r.roleMu.RUnlock()
			return AppendResult{}, fmt.Errorf("%w: ISR has %d members, min.insync.replicas is %d", kerr.NotEnoughReplicas, n, minISR)
		}
	}
	opts.LeaderEpoch = epoch
	if err := r.cache.assignFirst(epoch); err != nil { // the implied entry (BecomeLeader)
		r.roleMu.RUnlock()
		return AppendResult{}, err
	}
	res, err := write(opts)
	if err != nil {
		r.roleMu.RUnlock()
		return AppendResult{}, err
	}
	moved := r.leaderLEOChanged()
	r.roleMu.RUnlock()
	if moved {
		r.notifyHW(true)
	} else if r.env().OnAppend != nil {
		r.env().OnAppend(r)
	}
	return AppendResult{AppendResult: res, LeaderEpoch: epoch}, nil
}

// leaderLEOChanged re-derives the high watermark after the leader's log
// grew (a one-replica ISR commits at once). roleMu held, role leader.
func (r *Replica) leaderLEOChanged() bool {
	leo := r.log().EndOffset()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ls == nil {
		return false
	}
	r.ls.minISR = r.minISR
	r.lead().noteLEO(leo, r.lastFetch)
	moved := r.lead().advanceHW(leo, r.now())
	r.afterHWLocked(moved)
	return moved
}

// lastFetch is Config.LastFetch for leaderState.noteLEO; nil without one.
func (r *Replica) lastFetch(id int32) time.Time {
	if r.env().LastFetch == nil {
		return time.Time{}
	}
	return r.env().LastFetch(r, id)
}

// WaitForHW blocks until the high watermark reaches offset (the append's
// last offset + 1), with Kafka's acks=all outcome: nil when it did and the
// committed ISR has at least min.insync.replicas members,
// NOT_ENOUGH_REPLICAS_AFTER_APPEND when it did with a smaller ISR, and
// NOT_LEADER_OR_FOLLOWER when this replica stops leading or leads in
// another epoch than epoch (the offset may then hold other data). It
// returns ctx.Err() when ctx ends first (the broker answers
// REQUEST_TIMED_OUT). It sleeps on a channel closed when the high
// watermark, the ISR or the role changes.
func (r *Replica) WaitForHW(ctx context.Context, epoch int32, offset int64) error {
	for {
		r.mu.Lock()
		done, err := r.hwReachedLocked(epoch, offset)
		var ch chan struct{}
		if !done {
			ch = r.waitChLocked()
		}
		r.mu.Unlock()
		if done {
			return err
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// HWReached is WaitForHW without the wait: done reports whether the
// outcome is known now, and err is then WaitForHW's. A one-replica ISR
// commits during Append, so a produce to it can be answered at once.
func (r *Replica) HWReached(epoch int32, offset int64) (done bool, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.hwReachedLocked(epoch, offset)
}

func (r *Replica) hwReachedLocked(epoch int32, offset int64) (bool, error) {
	ls := r.ls
	switch {
	case ls == nil || ls.leaderEpoch != epoch:
		return true, fmt.Errorf("%w: leadership changed while waiting for replication", kerr.NotLeaderForPartition)
	case ls.hw >= offset:
		if n, minISR := len(ls.isr()), int(ls.minISR); n < minISR {
			return true, fmt.Errorf("%w: ISR has %d members, min.insync.replicas is %d", kerr.NotEnoughReplicasAfterAppend, n, minISR)
		}
		return true, nil
	}
	return false, nil
}

// FollowerFetch is one partition of a follower's Fetch request.
type FollowerFetch struct {
	ReplicaID          int32 // ReplicaState.ID (v15+) or ReplicaID
	BrokerEpoch        int64 // ReplicaState.Epoch (v15+); -1 before
	FetchOffset        int64
	CurrentLeaderEpoch int32 // -1 when absent
	LastFetchedEpoch   int32 // -1 when absent (before v12)
	MaxBytes           int64
}

// FollowerFetchResult is the partition's answer. Err, when set, wraps the
// Kafka error code; DivergingEpoch, when its Epoch >= 0, is the v12+
// DivergingEpoch field (and Ranges is empty).
type FollowerFetchResult struct {
	Err            error
	HighWatermark  int64
	LogStartOffset int64
	LogEndOffset   int64
	DivergingEpoch EpochEntryEnd
	Ranges         []wlog.FileRange
	Bytes          int64
}

// EpochEntryEnd is an (epoch, end offset) pair as OffsetForLeaderEpoch
// and DivergingEpoch carry it.
type EpochEntryEnd struct {
	Epoch     int32
	EndOffset int64
}

// Diverged reports whether the pair is set (the follower must truncate):
// as in Kafka, a DivergingEpoch with a negative epoch is absent.
func (e EpochEntryEnd) Diverged() bool { return e.Epoch >= 0 }

// FetchForFollower serves one partition of a follower's Fetch as leader,
// in Kafka's order: the request's leader epoch is checked first
// (FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH: a follower that learnt of
// this broker's leadership before this broker did gets the latter, which
// the broker holds rather than answers, see doc.go); not leader or not a
// replica: NOT_LEADER_OR_FOLLOWER; with a last fetched epoch, a follower whose log
// diverges gets DivergingEpoch and no records (its progress is not
// recorded); otherwise records from FetchOffset up to the leader's log end
// (OFFSET_OUT_OF_RANGE outside the log), then the follower's progress is
// recorded, which may propose an ISR expansion and move the high
// watermark. The result's high watermark is the one after that update.
// dst is reused for the ranges.
func (r *Replica) FetchForFollower(dst []wlog.FileRange, f FollowerFetch) FollowerFetchResult {
	res := FollowerFetchResult{HighWatermark: r.hw(), LogStartOffset: r.log().StartOffset(), LogEndOffset: r.log().EndOffset(), DivergingEpoch: EpochEntryEnd{UndefinedEpoch, UndefinedOffset}}
	r.roleMu.RLock()
	if err := checkLeaderEpoch(f.CurrentLeaderEpoch, r.leaderEpoch); err != nil {
		r.roleMu.RUnlock()
		res.Err = err
		return res
	}
	if r.role != RoleLeader {
		r.roleMu.RUnlock()
		res.Err = fmt.Errorf("%w: not the leader", kerr.NotLeaderForPartition)
		return res
	}
	r.mu.Lock()
	known := r.lead().isFollower(f.ReplicaID)
	r.mu.Unlock()
	if !known {
		r.roleMu.RUnlock()
		res.Err = fmt.Errorf("%w: broker %d is not a follower of this partition", kerr.NotLeaderForPartition, f.ReplicaID)
		return res
	}
	leo := r.log().EndOffset()
	res.LogEndOffset = leo
	if f.LastFetchedEpoch >= 0 {
		epoch, end := r.endOffsetFor(f.LastFetchedEpoch, leo)
		if epoch < f.LastFetchedEpoch || end < f.FetchOffset {
			r.roleMu.RUnlock()
			res.DivergingEpoch = EpochEntryEnd{epoch, end}
			return res
		}
	}
	read, err := r.log().Read(dst, f.FetchOffset, f.MaxBytes, leo)
	if err != nil {
		r.roleMu.RUnlock()
		res.Err = err
		return res
	}
	res.Ranges, res.Bytes = read.Ranges, read.Bytes
	now := r.now()
	r.mu.Lock()
	change := r.lead().fetched(f.ReplicaID, f.FetchOffset, leo, f.BrokerEpoch, now)
	r.ls.minISR = r.minISR
	moved := r.lead().advanceHW(r.log().EndOffset(), now)
	r.afterHWLocked(moved)
	res.HighWatermark = r.ls.hw
	r.mu.Unlock()
	r.roleMu.RUnlock()
	res.LogStartOffset = r.log().StartOffset()
	r.notifyHW(moved)
	r.proposeISR(change)
	return res
}

// EndOffsetForEpoch answers one partition of OffsetForLeaderEpoch. With
// leaderOnly (clients, and followers as Kafka sends them) a non-leader
// answers NOT_LEADER_OR_FOLLOWER; currentLeaderEpoch is checked as in
// Fetch. The answer is the epoch cache's (EpochCache.EndOffsetFor) against
// the log end offset.
func (r *Replica) EndOffsetForEpoch(currentLeaderEpoch, epoch int32, leaderOnly bool) (EpochEntryEnd, error) {
	r.roleMu.RLock()
	defer r.roleMu.RUnlock()
	if leaderOnly && r.role != RoleLeader {
		return EpochEntryEnd{UndefinedEpoch, UndefinedOffset}, fmt.Errorf("%w: not the leader", kerr.NotLeaderForPartition)
	}
	if err := checkLeaderEpoch(currentLeaderEpoch, r.leaderEpoch); err != nil {
		return EpochEntryEnd{UndefinedEpoch, UndefinedOffset}, err
	}
	e, end := r.endOffsetFor(epoch, r.log().EndOffset())
	return EpochEntryEnd{e, end}, nil
}

// MaybeShrinkISR proposes removing ISR followers that were not caught up
// within replica.lag.time.max.ms (through OnISRChange). The broker calls it
// periodically for every partition it leads; Kafka checks every half lag
// time.
func (r *Replica) MaybeShrinkISR() {
	r.roleMu.RLock()
	if r.role != RoleLeader {
		r.roleMu.RUnlock()
		return
	}
	leo := r.log().EndOffset()
	r.mu.Lock()
	change := r.lead().maybeShrink(leo, r.now())
	r.mu.Unlock()
	r.roleMu.RUnlock()
	r.proposeISR(change)
}

// CompleteISRChange reports the controller's answer to change and says
// whether the broker must send the same change again. A change that is no
// longer the one in flight (leadership or metadata moved on) is ignored.
//
//   - Success commits the returned ISR and partition epoch when they belong
//     to the current leader epoch and are not older than what the replica
//     has (a stale answer leaves the change in flight until metadata
//     arrives), then re-derives the high watermark.
//   - OPERATION_NOT_ATTEMPTED and INELIGIBLE_REPLICA (nothing was
//     committed) drop the change; the next fetch or MaybeShrinkISR proposes
//     again.
//   - UNKNOWN_TOPIC_OR_PARTITION, FENCED_LEADER_EPOCH,
//     INVALID_UPDATE_VERSION, NEW_LEADER_ELECTED and INVALID_REQUEST keep
//     it in flight, blocking new proposals, until metadata arrives
//     (BecomeLeader/BecomeFollower), as Kafka does.
//   - Any other error, a transport failure included, leaves the outcome
//     unknown (the controller may have committed it): the change stays in
//     flight and retry is true; the broker resends it after a back-off,
//     as Kafka's AlterPartition manager does. Dropping it would be unsafe:
//     an expansion the controller committed but the leader forgot would
//     let the high watermark pass an ISR member.
func (r *Replica) CompleteISRChange(change ISRChange, res ISRChangeResult) (retry bool) {
	moved, retry := r.completeISRChange(change, res)
	r.notifyHW(moved)
	return retry
}

func (r *Replica) completeISRChange(change ISRChange, res ISRChangeResult) (hwMoved, retry bool) {
	r.roleMu.RLock()
	defer r.roleMu.RUnlock()
	if r.role != RoleLeader {
		return false, false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	p := r.ls.inFlight()
	if p == nil || p.LeaderEpoch != change.LeaderEpoch || p.PartitionEpoch != change.PartitionEpoch || !slices.Equal(p.NewISR, change.NewISR) {
		return false, false
	}
	var ke *kerr.Error
	errors.As(res.Err, &ke)
	switch {
	case res.Err == nil:
		if res.LeaderEpoch != r.ls.leaderEpoch || res.PartitionEpoch < r.ls.partitionEpoch {
			// Stale answer: stay pending until metadata brings the truth.
			return false, false
		}
		switch {
		case len(res.ISR) < len(r.ls.isr()):
			r.env().counts.isrShrinks.Add(1)
		case len(res.ISR) > len(r.ls.isr()):
			r.env().counts.isrExpands.Add(1)
		}
		r.ls.setISR(res.ISR)
		r.ls.partitionEpoch = res.PartitionEpoch
		r.ls.pending = nil
		moved := r.lead().advanceHW(r.log().EndOffset(), r.now())
		r.afterHWLocked(moved)
		r.wakeLocked() // acks=all waiters re-check the ISR size
		r.info("replica: ISR changed", "isr", res.ISR, "partition_epoch", res.PartitionEpoch, "from", "answer")
		return moved, false
	case ke == kerr.OperationNotAttempted || ke == kerr.IneligibleReplica:
		r.ls.pending = nil
		r.warn("replica: ISR change not attempted; will propose again", "isr", change.NewISR, "err", res.Err)
		return false, false
	case ke == kerr.UnknownTopicOrPartition || ke == kerr.FencedLeaderEpoch || ke == kerr.InvalidUpdateVersion ||
		ke == kerr.NewLeaderElected || ke == kerr.InvalidRequest:
		r.warn("replica: ISR change refused; waiting for metadata", "isr", change.NewISR, "err", res.Err)
		return false, false
	default:
		r.warn("replica: ISR change outcome unknown; resending", "isr", change.NewISR, "err", res.Err)
		return false, true
	}
}
