package broker

import (
	"context"
	"errors"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/admission"
	"weir/internal/fetchsession"
	wlog "weir/internal/log"
	"weir/internal/replica"
	"weir/internal/server"
	"weir/internal/splice"
)

// Fetch v4-18, with fetch sessions (KIP-227, internal/fetchsession): a
// request is sessionless, full (opening a session when the cache has a
// slot) or incremental (naming, and answered with, only what changed),
// and reads only the partitions it names and those marked since the
// session's last answer. read_committed reads up to the last stable
// offset, with the aborted transactions (readIsolated). RackID and a
// follower's ReplicaDirectoryID are not used.
//
// Below MinBytes the request parks: a wake re-reads only the partitions
// marked since, until MinBytes, MaxWaitMillis or the connection's end; a
// fetch with partitions its principal may not read answers at once. A
// consumer over its consumer_byte_rate quota gets an answer without
// records and its throttle time (internal/admission; its session left as
// it was, as Kafka does), its MaxBytes capped at what the quota allows.
var _ = register(handler{key: 1, min: 4, max: 18, serve: (*Broker).handleFetch})

func (b *Broker) handleFetch(ctx context.Context, req *server.Request) *server.Reply {
	r := req.Body.(*kmsg.FetchRequest)
	if limit := b.gate.FetchLimit(ctx); limit < r.MaxBytes {
		r.MaxBytes = limit
	}
	follower := fetchReplicaID(r)
	f, code := b.fetches.Begin(r, follower, b.now())
	if code != 0 {
		resp := r.ResponseKind().(*kmsg.FetchResponse)
		resp.ErrorCode = code
		return server.Ready(resp)
	}
	run := &fetchRun{b: b, r: r, f: f, follower: follower, listener: req.Conn.Listener, results: map[int32]*partResult{}}
	if admission.VerdictOf(ctx).Partial {
		run.urgent++ // denied partitions are answered at once
	}
	run.readPending()
	if run.ready() || r.MaxWaitMillis <= 0 {
		return run.reply(ctx)
	}
	reply := server.NewPendingReply()
	ctx, cancel := mergeCancel(ctx, b.ctx)
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		defer cancel()
		if !run.wait(ctx, msDuration(r.MaxWaitMillis)) {
			f.Abandon()
			reply.CompleteClose()
			return
		}
		if d, throttled := b.gate.FetchQuota(ctx, run.bytes); throttled {
			reply.MuteUntil(time.Now().Add(d)).Complete(run.throttled(d))
			return
		}
		if body, err := run.body(ctx); err == nil {
			reply.CompleteBody(body)
		} else {
			b.logger.Error("fetch response encoding failed", "err", err)
			reply.CompleteClose()
		}
	}()
	return reply
}

// fetchRun is one Fetch request between its admission and its answer:
// what each partition read last found, by its index in the session.
type fetchRun struct {
	b        *Broker
	r        *kmsg.FetchRequest
	f        *fetchsession.Fetch
	follower int32  // the follower's id, -1 for a consumer
	listener string // the listener it came in on (KIP-951 hints name its endpoints)
	results  map[int32]*partResult
	reads    []fetchsession.Read
	bytes    int64 // record bytes of the results
	urgent   int   // results that make the answer go at once
	lastRef  fetchsession.TopicRef
	lastT    *topic
}

// partResult is one partition's part of the answer. urgent: an error
// other than a held UNKNOWN_LEADER_EPOCH, or a follower's
// DivergingEpoch, which it cannot act on while the fetch is held.
type partResult struct {
	sp     kmsg.FetchResponseTopicPartition
	fr     *splice.Part
	hint   leaderHint
	hinted bool
	urgent bool
	out    fetchsession.Outcome
}

func (run *fetchRun) ready() bool {
	return run.bytes >= int64(run.r.MinBytes) || run.urgent > 0
}

// wait parks the request until it is ready, maxWait passes (true), or
// ctx ends (false).
func (run *fetchRun) wait(ctx context.Context, maxWait time.Duration) bool {
	timer := time.NewTimer(maxWait)
	defer timer.Stop()
	woken := run.f.Wait()
	// A full request has its first reads queued again here (a change
	// between them and the watch marked nothing): read them, and what
	// was marked meanwhile.
	run.readPending()
	for !run.ready() {
		select {
		case <-woken:
			run.readPending()
		case <-timer.C:
			return true
		case <-ctx.Done():
			return false
		}
	}
	return true
}

// readPending reads every partition the session hands out now.
func (run *fetchRun) readPending() {
	run.reads = run.f.Pending(run.reads[:0])
	for i := range run.reads {
		run.read(&run.reads[i])
	}
	run.f.Bind(run.reads)
}

// topicOf resolves a session's topic (by id from Fetch v13, by name
// before); consecutive reads of one topic look it up once.
func (run *fetchRun) topicOf(ref fetchsession.TopicRef) *topic {
	if ref != run.lastRef || run.lastT == nil {
		run.lastRef = ref
		if run.r.Version >= 13 {
			run.lastT = run.b.lookupTopicID(ref.ID)
		} else {
			run.lastT = run.b.lookupTopic(ref.Name)
		}
	}
	return run.lastT
}

// read reads one partition into its result, replacing what an earlier
// read of this request found, and binds the read to the registry's
// partition (led here or not: a follower's fetch held for a leadership
// this node has not applied yet must be woken when it has).
func (run *fetchRun) read(rd *fetchsession.Read) {
	b, r := run.b, run.r
	if old := run.results[rd.Index]; old != nil {
		run.bytes -= old.out.Bytes
		if old.urgent {
			run.urgent--
		}
	}
	t := run.topicOf(rd.Topic)
	rd.Src = nil
	if t != nil {
		b.mu.RLock()
		if rd.Partition >= 0 && int(rd.Partition) < len(t.partitions) && t.partitions[rd.Partition] != nil {
			rd.Src = &t.partitions[rd.Partition].src
		}
		b.mu.RUnlock()
	}
	pr := &partResult{sp: kmsg.NewFetchResponseTopicPartition()}
	sp := &pr.sp
	sp.Partition = rd.Partition
	sp.HighWatermark, sp.LastStableOffset, sp.LogStartOffset = -1, -1, -1
	budget := int64(r.MaxBytes)
	if r.Version < 3 || budget <= 0 {
		budget = 1<<31 - 1
	}
	budget -= run.bytes
	p, perr := b.partitionOf(t, rd.Partition)
	held := false
	switch {
	case t == nil && r.Version >= 13:
		sp.ErrorCode = kerr.UnknownTopicID.Code
	case perr != nil && run.follower >= 0 && b.leadershipPending(t, rd.Partition, rd.LeaderEpoch):
		sp.ErrorCode, held = kerr.UnknownLeaderEpoch.Code, true
	case perr != nil:
		sp.ErrorCode = errCode(perr)
		if h, ok := b.hintFor(t, rd.Partition, perr, rd.LeaderEpoch, run.listener); ok && r.Version >= 12 {
			sp.CurrentLeader.LeaderID, sp.CurrentLeader.LeaderEpoch = h.leader, h.epoch
			pr.hint, pr.hinted = h, true
		}
	case run.follower >= 0:
		sp.ErrorCode, pr.fr = b.readForFollower(p, r, run.follower, &rd.PartitionData, sp, budget)
		held = sp.ErrorCode == kerr.UnknownLeaderEpoch.Code
		pr.out.Diverging = sp.DivergingEpoch.Epoch >= 0
	case b.cfg.NullStorage:
		sp.ErrorCode, pr.fr = readNullPartition(b.nullOf(p), p, &rd.PartitionData, sp, budget, run.bytes == 0)
	default:
		sp.ErrorCode, pr.fr, pr.out.More = b.readPartition(p, &rd.PartitionData, sp, budget, run.bytes == 0, wlog.Isolation(r.IsolationLevel))
	}
	pr.out.HighWatermark, pr.out.LogStartOffset, pr.out.ErrorCode = sp.HighWatermark, sp.LogStartOffset, sp.ErrorCode
	if pr.fr != nil {
		pr.out.Bytes = pr.fr.Size
		run.bytes += pr.fr.Size
	}
	pr.urgent = (sp.ErrorCode != 0 && !held) || pr.out.Diverging
	if pr.urgent {
		run.urgent++
	}
	run.results[rd.Index] = pr
}

func (run *fetchRun) reply(ctx context.Context) *server.Reply {
	if d, throttled := run.b.gate.FetchQuota(ctx, run.bytes); throttled {
		return server.Ready(run.throttled(d)).MuteUntil(time.Now().Add(d))
	}
	body, err := run.body(ctx)
	if err != nil {
		run.b.logger.Error("fetch response encoding failed", "err", err)
		return server.CloseConnection()
	}
	return server.ReadyBody(body)
}

// throttled is Kafka's answer to a fetch over its quota: no partitions,
// the throttle time, and the session left as it was (what was read is
// read again next time); an incremental one keeps its session id.
func (run *fetchRun) throttled(d time.Duration) *kmsg.FetchResponse {
	resp := run.r.ResponseKind().(*kmsg.FetchResponse)
	resp.ThrottleMillis = int32(d.Milliseconds())
	resp.SessionID = run.f.Throttled()
	return resp
}

// body finishes the session's part and encodes the answer: the
// partitions the session says it carries, grouped by topic in that
// order, with KIP-951's leader endpoints for those that moved, and what
// authorization adds (the partitions it denied).
func (run *fetchRun) body(ctx context.Context) (*server.Body, error) {
	res := run.f.Finish(run.b.now(), func(i int32) fetchsession.Outcome {
		if pr := run.results[i]; pr != nil {
			return pr.out
		}
		return fetchsession.Outcome{}
	})
	resp := run.r.ResponseKind().(*kmsg.FetchResponse)
	resp.SessionID, resp.ErrorCode = res.SessionID, res.ErrorCode
	var recs []*splice.Part
	var hints hintSet
	for _, in := range res.Include {
		pr := run.results[in.Index]
		if pr == nil {
			continue
		}
		if n := len(resp.Topics); n == 0 || resp.Topics[n-1].TopicID != in.Topic.ID || resp.Topics[n-1].Topic != in.Topic.Name {
			st := kmsg.NewFetchResponseTopic()
			st.Topic, st.TopicID = in.Topic.Name, in.Topic.ID
			resp.Topics = append(resp.Topics, st)
		}
		st := &resp.Topics[len(resp.Topics)-1]
		st.Partitions = append(st.Partitions, pr.sp)
		if pr.fr != nil {
			recs = append(recs, pr.fr)
		}
		if pr.hinted {
			hints.add(pr.hint)
		}
	}
	if run.r.Version >= 16 {
		for _, h := range hints {
			br := kmsg.NewFetchResponseBroker()
			br.NodeID, br.Host, br.Port, br.Rack = h.leader, h.host, h.port, h.rack
			resp.Brokers = append(resp.Brokers, br)
		}
	}
	resp = admission.VerdictOf(ctx).Finish(resp).(*kmsg.FetchResponse)
	resp.SetVersion(run.r.Version)
	return splice.Body(resp.AppendTo(nil), resp.IsFlexible(), recs)
}

// leadershipPending reports whether a follower's fetch names, for a
// partition this node replicates, a leader epoch newer than the one this
// node has applied: the metadata making this node its leader is on its
// way (the follower learnt it first), so the partition reads as empty
// with UNKNOWN_LEADER_EPOCH and holds the fetch like an empty one; the
// metadata loop marks it once this node leads (applyRoles), and the
// follower asks again without backing off.
func (b *Broker) leadershipPending(t *topic, index, epoch int32) bool {
	if t == nil {
		return false
	}
	b.mu.RLock()
	var p *partition
	if index >= 0 && int(index) < len(t.partitions) {
		p = t.partitions[index]
	}
	b.mu.RUnlock()
	return p != nil && p.rep != nil && epoch > p.leaderEpoch()
}

// readPartition fills one partition of a consumer's fetch and returns
// its error code, its records, and whether records were left out for
// want of budget. The first partition with data may exceed the byte
// budget by one batch so that a consumer always makes progress (KIP-74).
// read_committed reads stop at the last stable offset (readIsolated).
func (b *Broker) readPartition(p *partition, d *fetchsession.PartitionData, sp *kmsg.FetchResponseTopicPartition, budget int64, first bool, iso wlog.Isolation) (int16, *splice.Part, bool) {
	if code := checkLeaderEpoch(p, d.LeaderEpoch); code != 0 {
		return code, nil, false
	}
	hw := p.highWatermark()
	sp.HighWatermark, sp.LastStableOffset, sp.LogStartOffset = hw, hw, p.log().StartOffset()
	sp.RecordBatches = []byte{}
	max := min(int64(d.MaxBytes), budget)
	if max <= 0 && !first {
		return 0, nil, d.FetchOffset < p.latestOffset(hw, iso)
	}
	res, err := p.readIsolated(d.FetchOffset, max, hw, iso, sp)
	if err != nil {
		sp.RecordBatches = nil
		if errors.Is(err, kerr.OffsetOutOfRange) {
			return kerr.OffsetOutOfRange.Code, nil, false
		}
		b.logger.Warn("fetch read failed", "topic", p.topic.name, "partition", p.index, "err", err)
		return kerr.KafkaStorageError.Code, nil, false
	}
	if res.Bytes == 0 {
		return 0, nil, false
	}
	fr := splice.FromRanges(res.Ranges, res.Bytes)
	sp.RecordBatches = fr.Marker[:]
	return 0, fr, false
}

// checkLeaderEpoch compares the leader epoch a consumer's fetch names (-1:
// none) with p's: FENCED_LEADER_EPOCH for an older one, UNKNOWN_LEADER_EPOCH
// for a newer one.
func checkLeaderEpoch(p *partition, current int32) int16 {
	epoch := p.leaderEpoch()
	switch {
	case current < 0 || current == epoch:
		return 0
	case current < epoch:
		return kerr.FencedLeaderEpoch.Code
	default:
		return kerr.UnknownLeaderEpoch.Code
	}
}

// fetchReplicaID is the id of the follower sending a fetch, or -1 for a
// consumer (ReplicaState from v15, ReplicaID before).
func fetchReplicaID(r *kmsg.FetchRequest) int32 {
	if r.Version >= 15 {
		return r.ReplicaState.ID
	}
	return r.ReplicaID
}

// readForFollower serves one partition of a follower's fetch as its
// leader: records up to the log end (not the high watermark), and the
// follower's progress moves the high watermark and the ISR.
func (b *Broker) readForFollower(p *partition, r *kmsg.FetchRequest, follower int32, d *fetchsession.PartitionData, sp *kmsg.FetchResponseTopicPartition, budget int64) (int16, *splice.Part) {
	epoch := int64(-1)
	if r.Version >= 15 {
		epoch = r.ReplicaState.Epoch
	}
	res := p.rep.FetchForFollower(nil, replica.FollowerFetch{
		ReplicaID: follower, BrokerEpoch: epoch, FetchOffset: d.FetchOffset,
		CurrentLeaderEpoch: d.LeaderEpoch, LastFetchedEpoch: d.LastFetchedEpoch,
		MaxBytes: max(min(int64(d.MaxBytes), budget), 1),
	})
	sp.HighWatermark, sp.LastStableOffset, sp.LogStartOffset = res.HighWatermark, res.HighWatermark, res.LogStartOffset
	if res.Err != nil {
		return errCode(res.Err), nil
	}
	if res.DivergingEpoch.Diverged() {
		sp.DivergingEpoch.Epoch, sp.DivergingEpoch.EndOffset = res.DivergingEpoch.Epoch, res.DivergingEpoch.EndOffset
		return 0, nil
	}
	sp.RecordBatches = []byte{}
	if res.Bytes == 0 {
		return 0, nil
	}
	fr := splice.FromRanges(res.Ranges, res.Bytes)
	sp.RecordBatches = fr.Marker[:]
	return 0, fr
}
