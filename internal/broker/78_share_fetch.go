package broker

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/client/wiretag"
	"weir/internal/config"
	"weir/internal/metadata"
	"weir/internal/server"
	"weir/internal/share"
)

// ShareFetch v1-2 (KIP-932; v2 adds ShareAcquireMode, KIP-1206, and
// IsRenewAck, KIP-1222). In order, as Kafka does:
//
//   - GroupId null or MemberId empty or longer than 36 characters:
//     INVALID_REQUEST; IsRenewAck with MaxBytes, MinBytes, MaxRecords or
//     MaxWaitMs not 0: INVALID_REQUEST; an unknown group:
//     GROUP_ID_NOT_FOUND.
//   - The share session (share_session.go): SHARE_SESSION_NOT_FOUND,
//     INVALID_SHARE_SESSION_EPOCH, INVALID_REQUEST for acknowledgements in
//     the opening request, SHARE_SESSION_LIMIT_REACHED after MaxWaitMs.
//   - Piggy-backed acknowledgements are applied first, durably, and
//     answered in AcknowledgeErrorCode. A final request (epoch -1) then
//     closes the session, releasing what the member holds; a renew
//     request, or one with MaxRecords 0, fetches nothing (the Java
//     client's acknowledgement-only ShareFetch in record_limit mode sets
//     MaxRecords, MaxBytes and MaxWaitMs to 0 for every broker but the
//     one it takes records from that round).
//   - Then the session's partitions are fetched, starting at a different
//     one each time: each share partition acquires from its next fetch
//     offset what MaxRecords (shared by all partitions), BatchSize, the
//     acquire mode, the record lock cap and MaxBytes allow; acquisitions
//     are not written to __share_group_state (as in Kafka; see
//     share.StateRecord.WithoutLocks), what else an acquisition
//     changed is, before the records leave. Log batches acquired whole go
//     out as file ranges; an uncompressed batch acquired in part goes out
//     trimmed to its acquired records (share_trim.go); AcquiredRecords
//     says which offsets are the member's.
//   - With nothing acquired the request parks until an append, an
//     acknowledgement, a release or a lock expiry lets one of its
//     partitions hand out records, or MaxWaitMs passes.
//
// MinBytes is not waited for beyond the first acquired record: acquired
// records are locked, and holding them back would burn their lock
// (Kafka checks the bytes before acquiring; the Java client sends 1).
// The first response of a session lists every partition; later ones only
// those with records, errors or acknowledgement results.
var _ = register(handler{key: 78, min: 1, max: 2, serve: (*Broker).handleShareFetch})

// defaultShareMaxBytes is fetch.max.bytes, the cap when a request names
// none.
const defaultShareMaxBytes = 52428800

func (b *Broker) handleShareFetch(ctx context.Context, req *server.Request) *server.Reply {
	r := req.Body.(*kmsg.ShareFetchRequest)
	c := b.shares
	resp := r.ResponseKind().(*kmsg.ShareFetchResponse)
	fail := func(err error) *server.Reply {
		resp.ErrorCode, resp.ErrorMessage = errCode(err), errMessage(err)
		return server.Ready(resp)
	}
	group, member, err := shareRequestIDs(r.GroupID, r.MemberID)
	if err != nil {
		return fail(err)
	}
	renew := r.Version >= 2 && r.IsRenewAck
	if renew && (r.MaxBytes != 0 || r.MinBytes != 0 || r.MaxRecords != 0 || r.MaxWaitMillis != 0) {
		return fail(fmt.Errorf("%w: maxBytes, minBytes, maxRecords and maxWaitMs must be set to 0 if isRenewAck is true.", kerr.InvalidRequest))
	}
	settings, exists := c.settings(group)
	if !exists && !b.coordinates(group) {
		// Another node coordinates the group; this one leads some of its
		// partitions and keeps their share state.
		settings = c.ensureGroup(group)
		exists = true
	}
	if !exists {
		return fail(fmt.Errorf("%w: Share group %s not found.", kerr.GroupIDNotFound, group))
	}
	// The share state of the partitions led here is written here: on a
	// node that does not coordinate the group, this may be the first
	// share request it serves.
	if err := c.ensureStore(); err != nil {
		return fail(err)
	}

	var adds, forgets []sessionPart
	var acks []shareAckPart
	for _, t := range r.Topics {
		for _, p := range t.Partitions {
			tp := sessionPart{t.TopicID, p.Partition}
			adds = append(adds, tp)
			if len(p.AcknowledgementBatches) > 0 {
				a := shareAckPart{tp: tp, batches: make([]share.AckBatch, len(p.AcknowledgementBatches))}
				for i, bt := range p.AcknowledgementBatches {
					a.batches[i] = share.AckBatch{First: bt.FirstOffset, Last: bt.LastOffset, Types: ackTypes(bt.AcknowledgeTypes)}
				}
				acks = append(acks, a)
			}
		}
	}
	for _, t := range r.ForgottenTopicsData {
		for _, p := range t.Partitions {
			forgets = append(forgets, sessionPart{t.TopicID, p})
		}
	}
	parts, rotate, err := c.fetchSession(ctx, group, member, r.ShareSessionEpoch, adds, forgets, len(acks) > 0)
	if errors.Is(err, kerr.ShareSessionLimitReached) {
		// Kafka answers after MaxWaitMs, so that a client does not spin.
		resp.ErrorCode = kerr.ShareSessionLimitReached.Code
		return b.async(ctx, func(ctx context.Context) kmsg.Response {
			select {
			case <-time.After(msDuration(r.MaxWaitMillis)):
				return resp
			case <-ctx.Done():
				return nil
			}
		})
	}
	if err != nil {
		return fail(err)
	}
	resp.AcquisitionLockTimeoutMillis = int32(settings.part.LockDuration / time.Millisecond)

	c.acknowledge(ctx, group, member, acks, r.Version, renew, settings)
	f := &shareFetch{
		c: c, r: r, member: member, group: group, settings: settings,
		parts: parts, rotate: rotate, full: r.ShareSessionEpoch == 0, acks: acks,
	}
	if r.ShareSessionEpoch == -1 {
		c.closeSession(group, member)
		return f.reply(resp, shareFetchResult{})
	}
	if renew || r.MaxRecords <= 0 {
		// MaxRecords 0 asks for no records: the Java client's
		// acknowledgement-only ShareFetch in record_limit mode, sent to
		// every broker but the one it takes records from this round.
		return f.reply(resp, shareFetchResult{})
	}
	res := f.attempt(ctx)
	if res.records > 0 || res.failed() || r.MaxWaitMillis <= 0 || len(parts) == 0 {
		return f.reply(resp, res)
	}
	reply := server.NewPendingReply()
	wctx, cancel := mergeCancel(ctx, b.ctx)
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		defer cancel()
		res, ok := f.wait(wctx)
		if !ok {
			reply.CompleteClose()
			return
		}
		body, err := f.body(resp, res)
		if err != nil {
			b.logger.Error("share fetch response encoding failed", "err", err)
			reply.CompleteClose()
			return
		}
		reply.CompleteBody(body)
	}()
	return reply
}

// shareRequestIDs checks the group and member ids of a ShareFetch or
// ShareAcknowledge as Kafka does: a null group id, or a member id empty or
// longer than a UUID's 36 characters, is INVALID_REQUEST.
func shareRequestIDs(group, member *string) (string, string, error) {
	if group == nil {
		return "", "", fmt.Errorf("%w: Invalid group id in the request.", kerr.InvalidRequest)
	}
	if member == nil || *member == "" || len(*member) > 36 {
		return "", "", fmt.Errorf("%w: Invalid member id in the request.", kerr.InvalidRequest)
	}
	return *group, *member, nil
}

// ackTypes converts wire acknowledgement types; unknown values are kept
// for the state machine to refuse.
func ackTypes(in []int8) []share.AckType {
	out := make([]share.AckType, len(in))
	for i, t := range in {
		out[i] = share.AckType(t)
	}
	return out
}

// shareFetch is one ShareFetch request being served.
type shareFetch struct {
	c        *shareCoordinator
	r        *kmsg.ShareFetchRequest
	member   string
	group    string
	settings groupSettings
	parts    []sessionPart
	rotate   int
	full     bool
	acks     []shareAckPart
}

// shareFetchPart is one partition's fetch result.
type shareFetchPart struct {
	tp     sessionPart
	code   int16
	msg    *string
	ranges []share.AcquiredRange
	recs   *shareRecords
}

type shareFetchResult struct {
	parts   []shareFetchPart
	records int64
}

// failed reports whether a partition has an error, which is answered at
// once as Fetch does.
func (r *shareFetchResult) failed() bool {
	for _, p := range r.parts {
		if p.code != 0 {
			return true
		}
	}
	return false
}

// attempt fetches every session partition once, acquiring what it can.
func (f *shareFetch) attempt(ctx context.Context) shareFetchResult {
	var res shareFetchResult
	maxRecords := f.r.MaxRecords
	budget := int64(f.r.MaxBytes)
	if budget <= 0 {
		budget = defaultShareMaxBytes
	}
	mode := share.BatchOptimized
	if f.r.Version >= 2 && f.r.ShareAcquireMode == int8(share.RecordLimit) {
		mode = share.RecordLimit
	}
	b := f.c.b
	n := len(f.parts)
	// Acquire everywhere first, then wait for the writes together, so
	// that the partitions' records share the store's appends.
	type held struct {
		i  int
		sp *sharePart
		a  acquired
	}
	var pending []held
	for i := range n {
		tp := f.parts[(i+f.rotate)%n]
		fp := shareFetchPart{tp: tp}
		left := int64(maxRecords) - res.records
		if t := b.lookupTopicID(tp.topicID); t == nil {
			fp.code = kerr.UnknownTopicID.Code
		} else if _, err := b.partitionOf(t, tp.partition); err != nil {
			fp.code = errCode(err)
		} else if left > 0 && budget > 0 {
			sp, _, ok := f.c.partFor(f.group, tp.topicID, tp.partition)
			if !ok {
				fp.code = kerr.GroupIDNotFound.Code
			} else {
				a, err := sp.acquire(acquireArgs{
					member: f.member, maxBytes: budget, maxRecords: int32(left),
					batchSize: f.r.BatchSize, mode: mode, reset: f.settings.offsetReset,
				})
				if err != nil {
					fp.code, fp.msg = shareErrCode(err), errMessage(err)
				} else {
					pending = append(pending, held{len(res.parts), sp, a})
					if a.records > 0 {
						res.records += a.records
						budget -= a.recs.size
					}
				}
			}
		}
		res.parts = append(res.parts, fp)
	}
	for _, h := range pending {
		fp := &res.parts[h.i]
		if err := h.a.ticket.wait(ctx); err != nil {
			if ctx.Err() == nil {
				h.sp.failed()
			}
			fp.code, fp.msg = kerr.KafkaStorageError.Code, errMessage(err)
			res.records -= h.a.records
			continue
		}
		if h.a.records > 0 {
			fp.ranges, fp.recs = h.a.ranges, h.a.recs
		}
	}
	return res
}

// shareErrCode is errCode with storage failures named as such.
func shareErrCode(err error) int16 {
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Code
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return kerr.RequestTimedOut.Code
	}
	return kerr.KafkaStorageError.Code
}

// wait parks the fetch until a partition hands out records or MaxWaitMs
// passes; ok is false when ctx ended first.
func (f *shareFetch) wait(ctx context.Context) (shareFetchResult, bool) {
	b := f.c.b
	w := newFetchWaiter()
	var logs []*partition
	var sps []*sharePart
	for _, tp := range f.parts {
		t := b.lookupTopicID(tp.topicID)
		p, err := b.partitionOf(t, tp.partition)
		if err != nil {
			continue
		}
		if sp, _, ok := f.c.partFor(f.group, tp.topicID, tp.partition); ok {
			sps = append(sps, sp)
		}
		logs = append(logs, p)
	}
	for _, p := range logs {
		p.addWaiter(w)
	}
	for _, sp := range sps {
		sp.addWaiter(w)
	}
	defer func() {
		for _, p := range logs {
			p.removeWaiter(w)
		}
		for _, sp := range sps {
			sp.removeWaiter(w)
		}
	}()
	timer := time.NewTimer(f.c.b.shareFetchWait(f))
	defer timer.Stop()
	start := time.Now()
	// Something may have changed between the first attempt and the
	// waiters' registration: look once more.
	w.wake()
	for {
		select {
		case <-w.ch:
			if res := f.attempt(ctx); res.records > 0 || res.failed() {
				f.c.waits.record(time.Since(start), false)
				return res, true
			}
		case <-timer.C:
			res := f.attempt(ctx)
			f.c.waits.record(time.Since(start), res.records == 0)
			return res, true
		case <-ctx.Done():
			return shareFetchResult{}, false
		}
	}
}

// reply answers at once.
func (f *shareFetch) reply(resp *kmsg.ShareFetchResponse, res shareFetchResult) *server.Reply {
	body, err := f.body(resp, res)
	if err != nil {
		f.c.b.logger.Error("share fetch response encoding failed", "err", err)
		return server.CloseConnection()
	}
	return server.ReadyBody(body)
}

// body builds the response: fetched partitions grouped by topic, with the
// acknowledgement results folded in, and the records spliced in.
func (f *shareFetch) body(resp *kmsg.ShareFetchResponse, res shareFetchResult) (*server.Body, error) {
	type slot struct{ t, p int }
	at := map[sessionPart]slot{}
	topicAt := map[[16]byte]int{}
	add := func(tp sessionPart) *kmsg.ShareFetchResponseTopicPartition {
		if s, ok := at[tp]; ok {
			return &resp.Topics[s.t].Partitions[s.p]
		}
		ti, ok := topicAt[tp.topicID]
		if !ok {
			ti = len(resp.Topics)
			topicAt[tp.topicID] = ti
			t := kmsg.NewShareFetchResponseTopic()
			t.TopicID = tp.topicID
			resp.Topics = append(resp.Topics, t)
		}
		p := kmsg.NewShareFetchResponseTopicPartition()
		p.Partition = tp.partition
		p.Records = []byte{}
		resp.Topics[ti].Partitions = append(resp.Topics[ti].Partitions, p)
		at[tp] = slot{ti, len(resp.Topics[ti].Partitions) - 1}
		return &resp.Topics[ti].Partitions[at[tp].p]
	}
	byMarker := map[[markerLen]byte]*shareRecords{}
	for _, fp := range res.parts {
		if !f.full && fp.code == 0 && len(fp.ranges) == 0 {
			continue
		}
		p := add(fp.tp)
		p.ErrorCode, p.ErrorMessage = fp.code, fp.msg
		for _, rg := range fp.ranges {
			ar := kmsg.NewShareFetchResponseTopicPartitionAcquiredRecord()
			ar.FirstOffset, ar.LastOffset, ar.DeliveryCount = rg.First, rg.Last, rg.DeliveryCount
			p.AcquiredRecords = append(p.AcquiredRecords, ar)
		}
		if fp.recs != nil {
			p.Records = fp.recs.marker[:]
			byMarker[fp.recs.marker] = fp.recs
		}
	}
	for _, a := range f.acks {
		p := add(a.tp)
		p.AcknowledgeErrorCode, p.AcknowledgeErrorMessage = a.code, a.msg
	}
	// Markers are spliced in the order they appear in the encoding: the
	// order of the topics and partitions built above.
	var recs []*shareRecords
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if len(p.Records) == markerLen {
				if fr, ok := byMarker[[markerLen]byte(p.Records)]; ok {
					recs = append(recs, fr)
				}
			}
		}
	}
	return encodeShareFetchBody(resp, f.r.Version, recs)
}

// shareFetchWait is how long an empty ShareFetch may park: the request's
// MaxWaitMs, except that with weir.share.fetch.elsewhere.wait.ms >= 0 a
// record_limit fetch whose topics have partitions led by other brokers
// waits at most that long. A share consumer in record_limit mode
// (KIP-1206) takes records from one broker at a time, so every empty
// broker it asks costs it a full MaxWaitMs while records wait on the
// others: the seed's collapse. Answering such a fetch early sends it on
// to the next broker. A record_limit consumer with nothing to read
// anywhere then asks a broker every few milliseconds instead of every
// MaxWaitMs: that is the price, bounded by the setting (measured with the
// default 10 ms: about 1.5% of a core on the brokers per idle consumer).
// batch_optimized consumers fetch from every broker at once and keep
// their MaxWaitMs, and so do record_limit consumers that say they ask
// every leader at once (weir's client, wiretag.ShareFetchAllLeaders): for them
// an early answer only makes an idle consumer poll every few ms.
func (b *Broker) shareFetchWait(f *shareFetch) time.Duration {
	wait := msDuration(f.r.MaxWaitMillis)
	if f.r.Version < 2 || f.r.ShareAcquireMode != int8(share.RecordLimit) || wiretag.HasShareFetchAllLeaders(&f.r.UnknownTags) {
		return wait
	}
	early := b.settings().Millis(config.ShareFetchElsewhereWaitMs)
	if early < 0 || early >= wait {
		return wait
	}
	img := b.image()
	seen := map[[16]byte]bool{}
	for _, tp := range f.parts {
		if seen[tp.topicID] {
			continue
		}
		seen[tp.topicID] = true
		t, ok := img.Topic(tp.topicID)
		if !ok {
			continue
		}
		elsewhere := !t.EachPartition(func(_ int32, s metadata.Partition) bool {
			return s.Leader() < 0 || s.Leader() == b.cfg.NodeID
		})
		if elsewhere {
			return early
		}
	}
	return wait
}
