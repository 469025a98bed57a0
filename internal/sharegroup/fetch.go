package sharegroup

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/errcode"
	"weir/internal/replica"
	"weir/internal/share"
	"weir/internal/wiretag"
)

// defaultMaxBytes is fetch.max.bytes, the cap when a ShareFetch names
// none.
const defaultMaxBytes = 52428800

// Fetch is one ShareFetch being served. ShareFetch does, in order, as
// Kafka does:
//
//   - GroupId null or MemberId empty or longer than 36 characters:
//     INVALID_REQUEST; IsRenewAck with MaxBytes, MinBytes, MaxRecords or
//     MaxWaitMs not 0: INVALID_REQUEST; an unknown group:
//     GROUP_ID_NOT_FOUND.
//   - The share session (session.go): SHARE_SESSION_NOT_FOUND,
//     INVALID_SHARE_SESSION_EPOCH, INVALID_REQUEST for acknowledgements in
//     the opening request, SHARE_SESSION_LIMIT_REACHED after MaxWaitMs.
//   - Piggy-backed acknowledgements are applied first, and answered in
//     AcknowledgeErrorCode once durable; the acquisition below runs while
//     their writes are under way, and the answer waits for both. With
//     weir's tag wiretag.ShareFetchDeferAcks the answer does not wait
//     for the acknowledgements' writes: they stay with the session until
//     a request that waits for them (deferred.go). Without the tag the
//     answer also waits for writes earlier requests deferred; a failure of
//     one is answered in its partition's AcknowledgeErrorCode. A final
//     request (epoch -1) then closes the session, releasing what the
//     member holds; a renew request, or one with MaxRecords 0, fetches
//     nothing (the Java client's acknowledgement-only ShareFetch in
//     record_limit mode sets MaxRecords, MaxBytes and MaxWaitMs to 0 for
//     every broker but the one it takes records from that round).
//   - Then the session's partitions are fetched, starting at a different
//     one each time: each share partition acquires from its next fetch
//     offset what MaxRecords (shared by all partitions), BatchSize, the
//     acquire mode, the record lock cap and MaxBytes allow; acquisitions
//     are not written to __share_group_state (as in Kafka; see
//     share.StateRecord.WithoutLocks), what else an acquisition changed
//     is, before the records leave. Log batches acquired whole go out as
//     file ranges; an uncompressed batch acquired in part goes out
//     trimmed to its acquired records (trim.go); AcquiredRecords says
//     which offsets are the member's.
//   - With nothing acquired the request parks (Wait) until an append, an
//     acknowledgement, a release or a lock expiry lets one of its
//     partitions hand out records, or MaxWaitMs passes.
//
// MinBytes is not waited for beyond the first acquired record: acquired
// records are locked, and holding them back would burn their lock
// (Kafka checks the bytes before acquiring; the Java client sends 1).
// The first response of a session lists every partition; later ones only
// those with records, errors or acknowledgement results.
type Fetch struct {
	m        *Manager
	r        *kmsg.ShareFetchRequest
	resp     *kmsg.ShareFetchResponse
	member   string
	group    string
	settings groupSettings
	parts    []sessionPart
	rotate   int
	full     bool
	acks     []ackPart
	// earlier are failures of acknowledgement writes earlier requests
	// deferred, answered in AcknowledgeErrorCode.
	earlier []ackPart
	res     fetchResult
	ready   bool
	limited bool
}

// fetchPart is one partition's fetch result.
type fetchPart struct {
	tp     sessionPart
	code   int16
	msg    *string
	ranges []share.AcquiredRange
	recs   *Records
}

type fetchResult struct {
	parts   []fetchPart
	records int64
}

// failed reports whether a partition has an error, which is answered at
// once as Fetch does.
func (r *fetchResult) failed() bool {
	for _, p := range r.parts {
		if p.code != 0 {
			return true
		}
	}
	return false
}

// ShareFetch serves a ShareFetch up to its first attempt: the request's
// checks, the session, the acknowledgements and one try at acquiring.
// The answer is then Ready, Refused (answer after a delay), or waits in
// Wait.
func (m *Manager) ShareFetch(ctx context.Context, r *kmsg.ShareFetchRequest) *Fetch {
	f := &Fetch{m: m, r: r, resp: r.ResponseKind().(*kmsg.ShareFetchResponse), ready: true}
	fail := func(err error) *Fetch {
		f.resp.ErrorCode, f.resp.ErrorMessage = errcode.Of(err), errcode.Message(err)
		return f
	}
	group, member, err := requestIDs(r.GroupID, r.MemberID)
	if err != nil {
		return fail(err)
	}
	f.group, f.member = group, member
	renew := r.Version >= 2 && r.IsRenewAck
	if renew && (r.MaxBytes != 0 || r.MinBytes != 0 || r.MaxRecords != 0 || r.MaxWaitMillis != 0) {
		return fail(fmt.Errorf("%w: maxBytes, minBytes, maxRecords and maxWaitMs must be set to 0 if isRenewAck is true.", kerr.InvalidRequest))
	}
	settings, exists := m.settings(group)
	if !exists && !m.host.Coordinates(group) {
		// Another node coordinates the group; this one leads some of its
		// partitions and keeps their share state.
		settings = m.ensureGroup(group)
		exists = true
	}
	if !exists {
		return fail(fmt.Errorf("%w: Share group %s not found.", kerr.GroupIDNotFound, group))
	}
	// The share state of the partitions led here is written here: on a
	// node that does not coordinate the group, this may be the first
	// share request it serves.
	if err := m.state.Ensure(); err != nil {
		return fail(err)
	}
	f.settings = settings

	var adds, forgets []sessionPart
	for _, t := range r.Topics {
		for _, p := range t.Partitions {
			tp := sessionPart{t.TopicID, p.Partition}
			adds = append(adds, tp)
			if len(p.AcknowledgementBatches) > 0 {
				a := ackPart{tp: tp, batches: make([]share.AckBatch, len(p.AcknowledgementBatches))}
				for i, bt := range p.AcknowledgementBatches {
					a.batches[i] = share.AckBatch{First: bt.FirstOffset, Last: bt.LastOffset, Types: ackTypes(bt.AcknowledgeTypes)}
				}
				f.acks = append(f.acks, a)
			}
		}
	}
	for _, t := range r.ForgottenTopicsData {
		for _, p := range t.Partitions {
			forgets = append(forgets, sessionPart{t.TopicID, p})
		}
	}
	f.parts, f.rotate, err = m.fetchSession(ctx, group, member, r.ShareSessionEpoch, adds, forgets, len(f.acks) > 0)
	if errors.Is(err, kerr.ShareSessionLimitReached) {
		// Kafka answers after MaxWaitMs, so that a client does not spin.
		f.resp.ErrorCode = kerr.ShareSessionLimitReached.Code
		f.ready, f.limited = false, true
		return f
	}
	if err != nil {
		return fail(err)
	}
	f.full = r.ShareSessionEpoch == 0
	f.resp.AcquisitionLockTimeoutMillis = int32(settings.part.LockDuration / time.Millisecond)

	deferring := r.ShareSessionEpoch != -1 && wiretag.HasShareFetchDeferAcks(&r.UnknownTags)
	writes := m.applyAcks(ctx, group, member, f.acks, r.Version, renew, settings, deferring)
	if r.ShareSessionEpoch == -1 {
		earlier := m.takeDeferred(group, member, true)
		m.waitAcks(ctx, writes)
		f.earlier = m.waitDeferred(ctx, earlier)
		m.closeSession(group, member)
		return f
	}
	// With wiretag.ShareFetchDeferAcks the acknowledgements' writes stay
	// with the session and the answer reports the earlier ones that
	// failed by now; without it the answer waits for every one of the
	// member's writes (deferred.go).
	var earlier []ackWrite
	if deferring {
		earlier = m.takeDeferred(group, member, false)
		writes = m.deferAcks(group, member, writes)
	} else {
		earlier = m.takeDeferred(group, member, true)
	}
	finish := func() {
		m.waitAcks(ctx, writes)
		f.earlier = m.waitDeferred(ctx, earlier)
	}
	if renew || r.MaxRecords <= 0 {
		// MaxRecords 0 asks for no records: the Java client's
		// acknowledgement-only ShareFetch in record_limit mode, sent to
		// every broker but the one it takes records from this round.
		finish()
		return f
	}
	// The acknowledgements' writes and the acquisition's go to the state
	// store together; the answer waits for both, or, with the deferral,
	// for the acquisition's alone.
	f.res = f.attempt(ctx)
	finish()
	f.ready = f.res.records > 0 || f.res.failed() || r.MaxWaitMillis <= 0 || len(f.parts) == 0
	return f
}

// Ready reports whether the answer can go now.
func (f *Fetch) Ready() bool { return f.ready }

// Refused reports a SHARE_SESSION_LIMIT_REACHED answer, which goes out
// after the request's MaxWaitMs, as Kafka answers it, so that a client
// does not spin.
func (f *Fetch) Refused() (after time.Duration, ok bool) {
	return msDuration(f.r.MaxWaitMillis), f.limited
}

// requestIDs checks the group and member ids of a ShareFetch or
// ShareAcknowledge as Kafka does: a null group id, or a member id empty or
// longer than a UUID's 36 characters, is INVALID_REQUEST.
func requestIDs(group, member *string) (string, string, error) {
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

// attempt fetches every session partition once, acquiring what it can.
func (f *Fetch) attempt(ctx context.Context) fetchResult {
	var res fetchResult
	maxRecords := f.r.MaxRecords
	budget := int64(f.r.MaxBytes)
	if budget <= 0 {
		budget = defaultMaxBytes
	}
	mode := share.BatchOptimized
	if f.r.Version >= 2 && f.r.ShareAcquireMode == int8(share.RecordLimit) {
		mode = share.RecordLimit
	}
	n := len(f.parts)
	// Acquire everywhere first, then wait for the writes together, so
	// that the partitions' records share the store's appends.
	type held struct {
		i  int
		sp *sharePartition
		a  acquired
	}
	var pending []held
	for i := range n {
		tp := f.parts[(i+f.rotate)%n]
		fp := fetchPart{tp: tp}
		left := int64(maxRecords) - res.records
		if _, err := f.m.host.Partition(tp.topicID, tp.partition); err != nil {
			fp.code = errcode.Of(err)
		} else if left > 0 && budget > 0 {
			sp, _, ok := f.m.partFor(f.group, tp.topicID, tp.partition)
			if !ok {
				fp.code = kerr.GroupIDNotFound.Code
			} else {
				a, err := sp.acquire(ctx, acquireArgs{
					member: f.member, maxBytes: budget, maxRecords: int32(left),
					batchSize: f.r.BatchSize, mode: mode, reset: f.settings.offsetReset,
				})
				if err != nil {
					fp.code, fp.msg = storageCode(err), errcode.Message(err)
				} else {
					pending = append(pending, held{len(res.parts), sp, a})
					if a.records > 0 {
						res.records += a.records
						budget -= a.recs.Size
					}
				}
			}
		}
		res.parts = append(res.parts, fp)
	}
	for _, h := range pending {
		fp := &res.parts[h.i]
		if err := h.a.ticket.Wait(ctx); err != nil {
			if ctx.Err() == nil {
				h.sp.failed()
			}
			fp.code, fp.msg = kerr.KafkaStorageError.Code, errcode.Message(err)
			res.records -= h.a.records
			continue
		}
		if h.a.records > 0 {
			fp.ranges, fp.recs = h.a.ranges, h.a.recs
		}
	}
	return res
}

// storageCode is errcode.Of with storage failures named as such.
func storageCode(err error) int16 {
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Code
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return kerr.RequestTimedOut.Code
	}
	return kerr.KafkaStorageError.Code
}

// Wait parks the fetch until a partition hands out records or the wait
// (MaxWaitMs, or less: maxWait) passes; false when ctx ended first.
func (f *Fetch) Wait(ctx context.Context) bool {
	m := f.m
	w := replica.NewWaiter()
	var unpark []func()
	for _, tp := range f.parts {
		lp, err := m.host.Partition(tp.topicID, tp.partition)
		if err != nil {
			continue
		}
		if sp, _, ok := m.partFor(f.group, tp.topicID, tp.partition); ok {
			unpark = append(unpark, sp.park(w))
		}
		unpark = append(unpark, lp.Park(w))
	}
	defer func() {
		for _, u := range unpark {
			u()
		}
	}()
	timer := time.NewTimer(f.maxWait())
	defer timer.Stop()
	start := time.Now()
	// Something may have changed between the first attempt and the
	// waiters' registration: look once more.
	w.Wake()
	for {
		select {
		case <-w.C:
			if res := f.attempt(ctx); res.records > 0 || res.failed() {
				m.waits.record(time.Since(start), false)
				f.res = res
				return true
			}
		case <-timer.C:
			f.res = f.attempt(ctx)
			m.waits.record(time.Since(start), f.res.records == 0)
			return true
		case <-ctx.Done():
			return false
		}
	}
}

// Response builds the answer: fetched partitions grouped by topic, with
// the acknowledgement results folded in. Each partition with records gets
// mark(records) in its Records field: the caller puts the records in
// their place when it encodes the answer (they stay in segment files).
func (f *Fetch) Response(mark func(*Records) []byte) *kmsg.ShareFetchResponse {
	resp := f.resp
	if resp.ErrorCode != 0 {
		return resp
	}
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
	for _, fp := range f.res.parts {
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
			p.Records = mark(fp.recs)
		}
	}
	for _, a := range withFailures(f.acks, f.earlier) {
		p := add(a.tp)
		p.AcknowledgeErrorCode, p.AcknowledgeErrorMessage = a.code, a.msg
	}
	if wiretag.HasShareFetchBacklogWanted(&f.r.UnknownTags) {
		wiretag.SetShareFetchBacklog(&resp.UnknownTags, f.m.backlog(f.group, f.parts))
	}
	return resp
}

// backlog is, for each of a session's partitions whose share partition
// is loaded here, the records waiting to be acquired: neither delivery
// complete nor acquired, from the start offset to the high watermark
// (wiretag.ShareFetchBacklog). Each share partition's lock is held only
// to read its counts.
func (m *Manager) backlog(group string, parts []sessionPart) []wiretag.PartitionBacklog {
	out := make([]wiretag.PartitionBacklog, 0, len(parts))
	for _, tp := range parts {
		m.mu.Lock()
		sp := m.parts[share.StateKey{Group: group, TopicID: tp.topicID, Partition: tp.partition}]
		m.mu.Unlock()
		if sp == nil {
			continue
		}
		lp, err := m.host.Partition(tp.topicID, tp.partition)
		if err != nil {
			continue
		}
		hw := lp.HighWatermark()
		sp.mu.Lock()
		if sp.p != nil && !sp.deleted && !sp.broken {
			n := sp.p.Lag(hw) - sp.p.Stats().Acquired
			out = append(out, wiretag.PartitionBacklog{TopicID: tp.topicID, Partition: tp.partition, Records: max(n, 0)})
		}
		sp.mu.Unlock()
	}
	return out
}

// maxWait is how long an empty ShareFetch may park: the request's
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
// every leader at once (weir's client, wiretag.ShareFetchAllLeaders): for
// them an early answer only makes an idle consumer poll every few ms.
func (f *Fetch) maxWait() time.Duration {
	wait := msDuration(f.r.MaxWaitMillis)
	if f.r.Version < 2 || f.r.ShareAcquireMode != int8(share.RecordLimit) || wiretag.HasShareFetchAllLeaders(&f.r.UnknownTags) {
		return wait
	}
	early := f.m.host.ElsewhereWait()
	if early < 0 || early >= wait {
		return wait
	}
	seen := map[[16]byte]bool{}
	for _, tp := range f.parts {
		if seen[tp.topicID] {
			continue
		}
		seen[tp.topicID] = true
		if f.m.host.LedElsewhere(tp.topicID) {
			return early
		}
	}
	return wait
}

func msDuration(ms int32) time.Duration {
	if ms <= 0 {
		return 0
	}
	return time.Duration(ms) * time.Millisecond
}
