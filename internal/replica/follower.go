package replica

import (
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"

	wlog "weir/internal/log"
)

// fetchPosition is where a follower fetches from: its log end offset and
// the epoch of its last batch (LastFetchedEpoch, -1 with an empty cache).
func (r *Replica) fetchPosition() (offset int64, lastFetchedEpoch int32) {
	lastFetchedEpoch = UndefinedEpoch
	if e, ok := r.cache.Latest(); ok {
		lastFetchedEpoch = e.Epoch
	}
	return r.log().EndOffset(), lastFetchedEpoch
}

// followerCheck fails unless the replica follows in epoch. roleMu held.
func (r *Replica) followerCheck(epoch int32) error {
	if r.role != RoleFollower || r.leaderEpoch != epoch {
		return fmt.Errorf("%w: replica is %s in epoch %d, fetched in epoch %d", kerr.NotLeaderForPartition, r.role, r.leaderEpoch, epoch)
	}
	return nil
}

// appendFromLeader appends batches fetched from the leader in leader epoch
// epoch (batches wholly below the log end are skipped, a partial batch at
// the end is left for the next fetch), records the epochs they start
// before writing them, then sets the follower high watermark to
// min(leader high watermark, log end offset) and follows the leader's log
// start offset.
func (r *Replica) appendFromLeader(epoch int32, batches []byte, leaderHW, leaderLogStart int64) error {
	moved, err := r.appendFromLeaderLocked(epoch, batches, leaderHW, leaderLogStart)
	var below restartBelow
	if errors.As(err, &below) {
		// The log was restarted at the leader's log start, which lies
		// inside the leader's first batch: start it at that batch's base
		// instead (Kafka does the same), and append again.
		if err = r.truncateFullyAndStartAt(epoch, int64(below)); err == nil {
			moved, err = r.appendFromLeaderLocked(epoch, batches, leaderHW, leaderLogStart)
		}
	}
	r.notifyHW(moved)
	return err
}

// restartBelow is appendFromLeaderLocked's answer when an empty log
// (just restarted at the leader's log start) gets a first batch that
// starts below its end: the log must start at the batch's base offset.
type restartBelow int64

func (e restartBelow) Error() string {
	return fmt.Sprintf("replica: the leader's first batch starts at %d, below the empty log's start", int64(e))
}

// truncateFullyAndStartAt drops the whole log, epoch cache included, and
// starts it empty at offset: a follower whose log ends below the leader's
// log start fetches from there (Kafka's truncateFullyAndStartAt).
func (r *Replica) truncateFullyAndStartAt(epoch int32, offset int64) error {
	r.roleMu.Lock()
	defer r.roleMu.Unlock()
	if err := r.followerCheck(epoch); err != nil {
		return err
	}
	l, err := r.OwnLog()
	if err != nil {
		return err
	}
	before := l.EndOffset()
	if err := l.TruncateFullyAndStartAt(offset); err != nil {
		return err
	}
	if err := r.cache.reset(nil); err != nil {
		return err
	}
	r.setHW(offset)
	r.env().counts.truncations.Add(1)
	r.info("replica: log restarted at the leader's log start", "from", before, "to", offset)
	if r.env().OnTruncate != nil {
		r.env().OnTruncate(r, offset)
	}
	return nil
}

func (r *Replica) appendFromLeaderLocked(epoch int32, batches []byte, leaderHW, leaderLogStart int64) (hwMoved bool, err error) {
	r.roleMu.RLock()
	defer r.roleMu.RUnlock()
	if err := r.followerCheck(epoch); err != nil {
		return false, err
	}
	leo := r.log().EndOffset()
	var start, end int
	var headers []wlog.BatchHeader
	latest, haveLatest := r.cache.Latest()
	for end < len(batches) {
		h, err := wlog.ParseBatchHeader(batches[end:])
		if err != nil {
			return false, err
		}
		if int(h.Length) > len(batches)-end {
			break // partial batch: the leader's size limit cut it
		}
		if h.NextOffset() <= leo && end == start {
			start += int(h.Length)
			end = start
			continue
		}
		if end == start && h.BaseOffset < leo && r.log().StartOffset() == leo && r.log().Size() == 0 {
			return false, restartBelow(h.BaseOffset)
		}
		if h.LeaderEpoch >= 0 && (!haveLatest || h.LeaderEpoch > latest.Epoch) {
			if err := r.cache.Assign(h.LeaderEpoch, h.BaseOffset); err != nil {
				return false, err
			}
			latest, haveLatest = EpochEntry{h.LeaderEpoch, h.BaseOffset}, true
		}
		if r.env().OnFollowerAppend != nil {
			headers = append(headers, h)
		}
		end += int(h.Length)
	}
	if end > start {
		l, err := r.OwnLog()
		if err == nil {
			_, err = l.AppendReplicated(batches[start:end])
		}
		if r.env().OnFollowerAppend != nil {
			// Also on error: the batches before the failing one are in.
			for i := range headers {
				if headers[i].BaseOffset < r.log().EndOffset() {
					r.env().OnFollowerAppend(r, &headers[i])
				}
			}
		}
		if err != nil {
			// Entries assigned for batches that did not make it.
			_ = r.cache.TruncateFromEnd(r.log().EndOffset())
			return false, err
		}
	}
	moved := r.setFollowerHW(leaderHW)
	r.followLogStart(leaderLogStart) // after: the start may not pass the high watermark
	return moved, nil
}

// setFollowerHW sets the high watermark to min(leaderHW, log end offset),
// as a Kafka follower does (it follows the leader, down as well as up).
// It reports whether the high watermark rose. roleMu held.
func (r *Replica) setFollowerHW(leaderHW int64) bool {
	hw := min(max(leaderHW, r.log().StartOffset()), r.log().EndOffset())
	rose := r.hw() < hw
	r.setHW(hw)
	return rose
}

// followLogStart raises the local log start offset to the leader's when
// the leader deleted records (retention, DeleteRecords) that the follower
// still has, never past the follower's high watermark. roleMu held.
func (r *Replica) followLogStart(leaderLogStart int64) {
	if leaderLogStart <= r.log().StartOffset() {
		return
	}
	start, err := r.log().AdvanceStartOffset(min(leaderLogStart, r.hw(), r.log().EndOffset()), r.hw())
	if err != nil {
		r.warn("replica: cannot follow the leader's log start offset", "leader_log_start", leaderLogStart, "err", err)
		return
	}
	_ = r.cache.TruncateFromStart(start)
}

// AdvanceStartOffset raises the log start offset (DeleteRecords, or a
// retention pass the broker ran on the log) and cuts the epoch cache
// below it. The broker calls this instead of, or right after, the log's
// own AdvanceStartOffset / EnforceRetention.
func (r *Replica) AdvanceStartOffset(offset int64) (int64, error) {
	before := r.log().StartOffset()
	start, err := r.log().AdvanceStartOffset(offset, r.hw())
	if cerr := r.cache.TruncateFromStart(r.log().StartOffset()); err == nil {
		err = cerr
	}
	r.notifyLogStart(before)
	return start, err
}

// notifyLogStart calls OnLogStart if the log start rose past before.
func (r *Replica) notifyLogStart(before int64) {
	if start := r.log().StartOffset(); start > before && r.env().OnLogStart != nil {
		r.env().OnLogStart(r, start)
	}
}

// EnforceRetention runs the log's retention (retention.ms,
// retention.bytes) below the high watermark and cuts the epoch cache to
// the new log start. It returns how many segments went.
func (r *Replica) EnforceRetention() (int, error) {
	before := r.log().StartOffset()
	n, err := r.log().EnforceRetention(r.hw())
	if cerr := r.cache.TruncateFromStart(r.log().StartOffset()); err == nil {
		err = cerr
	}
	r.notifyLogStart(before)
	return n, err
}

// truncateTo cuts the log at offset (down to the start of the batch that
// holds it), then the epoch cache and the high watermark with it, if the
// replica still follows in epoch.
func (r *Replica) truncateTo(epoch int32, offset int64) error {
	r.roleMu.Lock()
	defer r.roleMu.Unlock()
	if err := r.followerCheck(epoch); err != nil {
		return err
	}
	return r.truncateLocked(offset)
}

// truncateLocked cuts log, epoch cache and high watermark. roleMu held for
// writing.
func (r *Replica) truncateLocked(offset int64) error {
	before := r.log().EndOffset()
	if err := r.log().Truncate(offset); err != nil {
		return err
	}
	leo := r.log().EndOffset()
	if err := r.cache.TruncateFromEnd(leo); err != nil {
		return err
	}
	if r.hw() > leo {
		r.setHW(leo)
	}
	if leo < before {
		r.env().counts.truncations.Add(1)
		r.info("replica: truncated log", "from", before, "to", leo)
		if r.env().OnTruncate != nil {
			r.env().OnTruncate(r, leo)
		}
	}
	return nil
}

// truncationOffset is Kafka's follower rule for where to cut given the
// leader's answer for an epoch (DivergingEpoch, or OffsetForLeaderEpoch)
// and the follower's own log: done is false when the follower must ask
// again with its new last epoch.
//
//   - leader knows no end offset: cut to the high watermark;
//   - leader knows no epoch: cut to min(leader end, log end);
//   - the follower has the leader's epoch: cut to the smaller of the two
//     end offsets for it (and the log end); done;
//   - the follower's largest epoch below it is older: cut to that epoch's
//     end (capped by the leader's end offset); not done;
//   - the follower has no epoch that old: cut to the leader's end; done.
func (r *Replica) truncationOffset(leader EpochEntryEnd) (offset int64, done bool) {
	leo := r.log().EndOffset()
	switch {
	case leader.EndOffset == UndefinedOffset:
		return r.hw(), true
	case leader.Epoch == UndefinedEpoch:
		return min(leader.EndOffset, leo), true
	}
	epoch, end := r.cache.EndOffsetFor(leader.Epoch, leo)
	switch {
	case epoch == leader.Epoch:
		return min(leader.EndOffset, end, leo), true
	case epoch != UndefinedEpoch:
		return min(leader.EndOffset, end, leo), false
	default:
		return min(leader.EndOffset, leo), true
	}
}

// truncateToDivergence applies truncationOffset for the leader's
// DivergingEpoch.
func (r *Replica) truncateToDivergence(epoch int32, leader EpochEntryEnd) error {
	r.roleMu.Lock()
	defer r.roleMu.Unlock()
	if err := r.followerCheck(epoch); err != nil {
		return err
	}
	off, done := r.truncationOffset(leader)
	r.info("replica: log diverges from the leader's", "leader_epoch", leader.Epoch, "leader_end_offset", leader.EndOffset, "truncate_to", off, "done", done)
	return r.truncateLocked(off)
}
