package sharegroup

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/errcode"
	"weir/internal/share"
)

// ackPart is one partition's acknowledgements and their result.
type ackPart struct {
	tp      sessionPart
	batches []share.AckBatch
	code    int16
	msg     *string
}

// Acknowledge answers ShareAcknowledge (v2 adds IsRenewAck and
// AcquisitionLockTimeoutMs, KIP-1222). The session epoch is checked first
// (0 is INVALID_SHARE_SESSION_EPOCH: a session opens only with a
// ShareFetch), then each partition's batches are applied, all or nothing
// per partition, and made durable before the answer: a success promises
// the records are not delivered again. RENEW needs v2, IsRenewAck and the
// group config share.renew.acknowledge.enable. The member's
// acknowledgement writes that earlier ShareFetch requests deferred
// (wiretag.ShareFetchDeferAcks, deferred.go) are waited for as well, and
// a failed one is answered in its partition's ErrorCode, so a success
// covers every acknowledgement the member sent this broker before. A
// final request (epoch -1) closes the session after its
// acknowledgements, releasing what the member still holds in the
// session's partitions.
func (m *Manager) Acknowledge(ctx context.Context, r *kmsg.ShareAcknowledgeRequest) *kmsg.ShareAcknowledgeResponse {
	resp := r.ResponseKind().(*kmsg.ShareAcknowledgeResponse)
	fail := func(err error) *kmsg.ShareAcknowledgeResponse {
		resp.ErrorCode, resp.ErrorMessage = errcode.Of(err), errcode.Message(err)
		return resp
	}
	group, member, err := requestIDs(r.GroupID, r.MemberID)
	if err != nil {
		return fail(err)
	}
	if err := m.ackSession(group, member, r.ShareSessionEpoch); err != nil {
		return fail(err)
	}
	if err := m.state.Ensure(); err != nil {
		return fail(err)
	}
	settings, _ := m.settings(group)
	resp.AcquisitionLockTimeoutMillis = int32(settings.part.LockDuration / time.Millisecond)
	var acks []ackPart
	for _, t := range r.Topics {
		for _, p := range t.Partitions {
			a := ackPart{tp: sessionPart{t.TopicID, p.Partition}, batches: make([]share.AckBatch, len(p.AcknowledgementBatches))}
			for i, bt := range p.AcknowledgementBatches {
				a.batches[i] = share.AckBatch{First: bt.FirstOffset, Last: bt.LastOffset, Types: ackTypes(bt.AcknowledgeTypes)}
			}
			acks = append(acks, a)
		}
	}
	// Writes earlier ShareFetch requests deferred are waited for too, so
	// that the answer covers every acknowledgement before it.
	earlier := m.takeDeferred(group, member, true)
	m.acknowledge(ctx, group, member, acks, r.Version, r.Version >= 2 && r.IsRenewAck, settings)
	failures := m.waitDeferred(ctx, earlier)
	if r.ShareSessionEpoch == -1 {
		m.closeSession(group, member)
	}
	acks = withFailures(acks, failures)
	topicAt := map[[16]byte]int{}
	for _, a := range acks {
		ti, ok := topicAt[a.tp.topicID]
		if !ok {
			ti = len(resp.Topics)
			topicAt[a.tp.topicID] = ti
			t := kmsg.NewShareAcknowledgeResponseTopic()
			t.TopicID = a.tp.topicID
			resp.Topics = append(resp.Topics, t)
		}
		p := kmsg.NewShareAcknowledgeResponseTopicPartition()
		p.Partition, p.ErrorCode, p.ErrorMessage = a.tp.partition, a.code, a.msg
		resp.Topics[ti].Partitions = append(resp.Topics[ti].Partitions, p)
	}
	return resp
}

// withFailures folds deferred writes' failures into a request's
// acknowledgement results: on the partition's part unless it failed
// already, or as a part of its own.
func withFailures(acks, failures []ackPart) []ackPart {
	for _, f := range failures {
		i := slices.IndexFunc(acks, func(a ackPart) bool { return a.tp == f.tp })
		switch {
		case i < 0:
			acks = append(acks, f)
		case acks[i].code == 0:
			acks[i].code, acks[i].msg = f.code, f.msg
		}
	}
	return acks
}

// acknowledge applies the acknowledgements of a ShareFetch or
// ShareAcknowledge and waits until they are durable, filling each part's
// result. A partition without batches succeeds.
func (m *Manager) acknowledge(ctx context.Context, group, member string, acks []ackPart, version int16, renew bool, st groupSettings) {
	m.waitAcks(ctx, m.applyAcks(ctx, group, member, acks, version, renew, st, false))
}

// ackWrite is the write of one partition's acknowledgements, under way.
// a is the request's part the write's result goes to; nil for a write
// an earlier ShareFetch deferred (deferred.go), whose failure is
// reported on its own.
type ackWrite struct {
	a  *ackPart
	tp sessionPart
	sp *sharePartition
	t  stateWrite // nil when nothing durable changed
}

// applyAcks is acknowledge in two steps: it applies the acknowledgements
// to the share partitions' state at once (so records released or
// accepted count as such for any acquisition that follows) and returns
// their writes, under way, for waitAcks, which fills each part's result.
// A ShareFetch acquires its next records in between, so that a round of
// record_limit waits for one write, not for the acknowledgements' and
// then its own; with wiretag.ShareFetchDeferAcks it does not wait for
// them at all (deferred.go), and gather says so: their changes join
// their partitions' batches (groupcommit.go).
func (m *Manager) applyAcks(ctx context.Context, group, member string, acks []ackPart, version int16, renew bool, st groupSettings, gather bool) []ackWrite {
	var writes []ackWrite
	now := m.host.Now()
	for i := range acks {
		a := &acks[i]
		if len(a.batches) == 0 {
			continue
		}
		err := checkAckRenew(a.batches, version, renew)
		var sp *sharePartition
		if err == nil {
			sp, err = m.ackTarget(group, a.tp)
		}
		var t stateWrite
		if err == nil {
			t, err = sp.acknowledge(ctx, member, a.batches, st.renewAck, st.offsetReset, now, gather)
		}
		if err != nil {
			a.code, a.msg = storageCode(err), errcode.Message(err)
			continue
		}
		writes = append(writes, ackWrite{a: a, tp: a.tp, sp: sp, t: t})
	}
	return writes
}

// waitAcks waits for the acknowledgements' writes and fills each part's
// result; a failed write marks its partition for a restore, so that the
// records roll back.
func (m *Manager) waitAcks(ctx context.Context, writes []ackWrite) {
	for _, w := range writes {
		if w.t == nil {
			continue
		}
		if err := w.t.Wait(ctx); err != nil {
			if ctx.Err() == nil {
				w.sp.failed()
			}
			w.a.code, w.a.msg = kerr.KafkaStorageError.Code, errcode.Message(err)
		}
	}
}

// checkAckRenew refuses acknowledgement types the request may not carry:
// RENEW (4) before v2 or without IsRenewAck, anything past it.
func checkAckRenew(batches []share.AckBatch, version int16, renew bool) error {
	limit := share.AckReject
	if version >= 2 {
		limit = share.AckRenew
	}
	for _, b := range batches {
		for _, t := range b.Types {
			if t > limit || (t == share.AckRenew && !renew) {
				return fmt.Errorf("%w: acknowledgement type %d is not allowed here", kerr.InvalidRequest, t)
			}
		}
	}
	return nil
}

// ackTarget finds the share partition acknowledgements are for.
func (m *Manager) ackTarget(group string, tp sessionPart) (*sharePartition, error) {
	if _, err := m.host.Partition(tp.topicID, tp.partition); err != nil {
		return nil, err
	}
	sp, _, ok := m.partFor(group, tp.topicID, tp.partition)
	if !ok {
		return nil, kerr.GroupIDNotFound
	}
	return sp, nil
}
