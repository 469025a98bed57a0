package broker

import (
	"context"
	"errors"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	wlog "weir/internal/log"
	"weir/internal/replica"
	"weir/internal/server"
)

// Fetch v4-18. Fetch sessions (KIP-227) are refused the way the protocol
// allows: every response carries session id 0, so clients keep sending
// full fetch requests; a request naming a session id gets
// FETCH_SESSION_ID_NOT_FOUND. Isolation levels read the same data because
// there are no transactions (the last stable offset is the high
// watermark). ReplicaID/ReplicaState, RackID and follower fields
// (LastFetchedEpoch, ReplicaDirectoryID) are not used by a single node.
//
// Below MinBytes the request parks (a waiter on each partition it reads)
// until an append wakes it, MaxWaitMillis passes, or the connection goes;
// a fetch with partitions its principal may not read (answered
// TOPIC_AUTHORIZATION_FAILED) answers at once. A consumer over its
// consumer_byte_rate quota gets an answer without records and its
// throttle time (security.go), and its MaxBytes is capped at what the
// quota allows in a window.
var _ = register(handler{key: 1, min: 4, max: 18, serve: (*Broker).handleFetch})

func (b *Broker) handleFetch(ctx context.Context, req *server.Request) *server.Reply {
	r := req.Body.(*kmsg.FetchRequest)
	if r.Version >= 7 && r.SessionID != 0 {
		resp := r.ResponseKind().(*kmsg.FetchResponse)
		resp.ErrorCode = kerr.FetchSessionIDNotFound.Code
		return server.Ready(resp)
	}
	if limit := b.fetchLimit(ctx); limit < r.MaxBytes {
		r.MaxBytes = limit
	}
	res := b.fetchOnce(r, req.Conn.Listener)
	res.now = res.now || verdictOf(ctx).Partial
	if res.bytes >= int64(r.MinBytes) || r.MaxWaitMillis <= 0 || res.now {
		return b.fetchReply(ctx, r, res)
	}
	parts := b.fetchPartitions(r)
	reply := server.NewPendingReply()
	ctx, cancel := mergeCancel(ctx, b.ctx)
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		defer cancel()
		res, ok := b.waitFetch(ctx, r, req.Conn.Listener, parts)
		if !ok {
			reply.CompleteClose()
			return
		}
		if d, throttled := b.fetchQuota(ctx, res.bytes); throttled {
			reply.MuteUntil(time.Now().Add(d)).Complete(throttledFetch(r, d))
			return
		}
		if body, err := b.fetchBody(ctx, r, res); err == nil {
			reply.CompleteBody(body)
		} else {
			reply.CompleteClose()
		}
	}()
	return reply
}

// waitFetch parks a fetch until its partitions hold MinBytes, MaxWait
// passes, or ctx ends (ok false).
func (b *Broker) waitFetch(ctx context.Context, r *kmsg.FetchRequest, listener string, parts []*partition) (fetchResult, bool) {
	w := replica.NewWaiter()
	for _, p := range parts {
		p.addWaiter(w)
	}
	defer func() {
		for _, p := range parts {
			p.removeWaiter(w)
		}
	}()
	timer := time.NewTimer(msDuration(r.MaxWaitMillis))
	defer timer.Stop()
	// An append between the first read and the waiters' registration
	// would wake nobody: read once more now that they are registered.
	w.Wake()
	for {
		select {
		case <-w.C:
			res := b.fetchOnce(r, listener)
			if res.bytes >= int64(r.MinBytes) || res.now {
				return res, true
			}
		case <-timer.C:
			return b.fetchOnce(r, listener), true
		case <-ctx.Done():
			return fetchResult{}, false
		}
	}
}

// fetchResult is one read of every partition a fetch asks for. now
// says the answer must go at once: a partition failed, or a follower must
// truncate (DivergingEpoch), which it cannot do while the fetch is held.
type fetchResult struct {
	resp  *kmsg.FetchResponse
	recs  []*fetchRecords
	bytes int64
	now   bool
}

func (b *Broker) fetchReply(ctx context.Context, r *kmsg.FetchRequest, res fetchResult) *server.Reply {
	if d, throttled := b.fetchQuota(ctx, res.bytes); throttled {
		return server.Ready(throttledFetch(r, d)).MuteUntil(time.Now().Add(d))
	}
	body, err := b.fetchBody(ctx, r, res)
	if err != nil {
		b.logger.Error("fetch response encoding failed", "err", err)
		return server.CloseConnection()
	}
	return server.ReadyBody(body)
}

// fetchBody encodes a fetch's answer, with what authorization adds to it
// (the partitions it denied).
func (b *Broker) fetchBody(ctx context.Context, r *kmsg.FetchRequest, res fetchResult) (*server.Body, error) {
	resp := verdictOf(ctx).Finish(res.resp).(*kmsg.FetchResponse)
	return encodeFetchBody(resp, r.Version, res.recs)
}

// throttledFetch is Kafka's answer to a fetch over its quota: no
// partitions, the throttle time.
func throttledFetch(r *kmsg.FetchRequest, d time.Duration) *kmsg.FetchResponse {
	resp := r.ResponseKind().(*kmsg.FetchResponse)
	resp.ThrottleMillis = int32(d.Milliseconds())
	return resp
}

// fetchPartitions lists the known partitions a fetch reads, led here or
// not: a follower's fetch held for a leadership this node has not applied
// yet must be woken when it has.
func (b *Broker) fetchPartitions(r *kmsg.FetchRequest) []*partition {
	var out []*partition
	for _, rt := range r.Topics {
		t := b.fetchTopic(r, &rt)
		if t == nil {
			continue
		}
		b.mu.RLock()
		for _, rp := range rt.Partitions {
			if rp.Partition >= 0 && int(rp.Partition) < len(t.partitions) {
				out = append(out, t.partitions[rp.Partition])
			}
		}
		b.mu.RUnlock()
	}
	return out
}

func (b *Broker) fetchTopic(r *kmsg.FetchRequest, rt *kmsg.FetchRequestTopic) *topic {
	if r.Version >= 13 {
		return b.lookupTopicID(rt.TopicID)
	}
	return b.lookupTopic(rt.Topic)
}

// fetchOnce reads every requested partition once, as file ranges. It
// reports the bytes read and whether the answer must go at once (errors,
// and a follower's DivergingEpoch). A follower's partition whose request
// names a leader epoch newer than the one this node has applied is the
// exception: the metadata making this node its leader is on its way (the
// follower learnt it first), so that partition reads as empty with
// UNKNOWN_LEADER_EPOCH and holds the fetch like an empty one; the
// metadata loop wakes the fetch once this node leads (applyRoles), and the
// follower asks again without backing off.
func (b *Broker) fetchOnce(r *kmsg.FetchRequest, listener string) fetchResult {
	resp := r.ResponseKind().(*kmsg.FetchResponse)
	var recs []*fetchRecords
	budget := int64(r.MaxBytes)
	if r.Version < 3 || budget <= 0 {
		budget = 1<<31 - 1
	}
	var total int64
	now := false
	follower := fetchReplicaID(r)
	var hints hintSet
	for _, rt := range r.Topics {
		st := kmsg.NewFetchResponseTopic()
		st.Topic, st.TopicID = rt.Topic, rt.TopicID
		t := b.fetchTopic(r, &rt)
		for _, rp := range rt.Partitions {
			sp := kmsg.NewFetchResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.HighWatermark, sp.LastStableOffset, sp.LogStartOffset = -1, -1, -1
			p, perr := b.partitionOf(t, rp.Partition)
			held := false
			switch {
			case t == nil && r.Version >= 13:
				sp.ErrorCode = kerr.UnknownTopicID.Code
			case perr != nil && follower >= 0 && b.leadershipPending(t, rp.Partition, rp.CurrentLeaderEpoch):
				sp.ErrorCode, held = kerr.UnknownLeaderEpoch.Code, true
			case perr != nil:
				sp.ErrorCode = errCode(perr)
				if h, ok := b.hintFor(t, rp.Partition, perr, rp.CurrentLeaderEpoch, listener); ok && r.Version >= 12 {
					sp.CurrentLeader.LeaderID, sp.CurrentLeader.LeaderEpoch = h.leader, h.epoch
					hints.add(h)
				}
			default:
				var fr *fetchRecords
				if follower >= 0 {
					sp.ErrorCode, fr = b.readForFollower(p, r, follower, &rp, &sp, &budget)
					held = sp.ErrorCode == kerr.UnknownLeaderEpoch.Code
					now = now || sp.DivergingEpoch.Epoch >= 0
				} else if b.cfg.NullStorage {
					sp.ErrorCode, fr = readNullPartition(p, &rp, &sp, &budget, total == 0)
				} else {
					sp.ErrorCode, fr = b.readPartition(p, &rp, &sp, &budget, total == 0, wlog.Isolation(r.IsolationLevel))
				}
				if fr != nil {
					recs = append(recs, fr)
					total += fr.size
				}
			}
			if sp.ErrorCode != 0 && !held {
				now = true
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	if r.Version >= 16 {
		for _, h := range hints {
			br := kmsg.NewFetchResponseBroker()
			br.NodeID, br.Host, br.Port, br.Rack = h.leader, h.host, h.port, h.rack
			resp.Brokers = append(resp.Brokers, br)
		}
	}
	return fetchResult{resp: resp, recs: recs, bytes: total, now: now}
}

// leadershipPending reports whether a follower's fetch names, for a
// partition this node replicates, a leader epoch newer than the one this
// node has applied.
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
	return p != nil && p.rep != nil && epoch > p.leaderEpoch.Load()
}

// readPartition fills one partition of a fetch response and returns its
// error code. The first partition with data may exceed the byte budget by
// one batch so that a consumer always makes progress (KIP-74).
// read_committed reads stop at the last stable offset (readIsolated).
func (b *Broker) readPartition(p *partition, rp *kmsg.FetchRequestTopicPartition, sp *kmsg.FetchResponseTopicPartition, budget *int64, first bool, iso wlog.Isolation) (int16, *fetchRecords) {
	if code := checkLeaderEpoch(p, rp.CurrentLeaderEpoch); code != 0 {
		return code, nil
	}
	hw := p.highWatermark()
	sp.HighWatermark, sp.LastStableOffset, sp.LogStartOffset = hw, hw, p.log.StartOffset()
	sp.RecordBatches = []byte{}
	max := min(int64(rp.PartitionMaxBytes), *budget)
	if max <= 0 && !first {
		return 0, nil
	}
	res, err := p.readIsolated(rp.FetchOffset, max, hw, iso, sp)
	if err != nil {
		sp.RecordBatches = nil
		if errors.Is(err, kerr.OffsetOutOfRange) {
			return kerr.OffsetOutOfRange.Code, nil
		}
		b.logger.Warn("fetch read failed", "topic", p.topic.name, "partition", p.index, "err", err)
		return kerr.KafkaStorageError.Code, nil
	}
	if res.Bytes == 0 {
		return 0, nil
	}
	fr := &fetchRecords{marker: newMarker(), ranges: res.Ranges, size: res.Bytes}
	sp.RecordBatches = fr.marker[:]
	*budget -= res.Bytes
	return 0, fr
}

// checkLeaderEpoch compares the leader epoch a consumer's fetch names (-1:
// none) with p's: FENCED_LEADER_EPOCH for an older one, UNKNOWN_LEADER_EPOCH
// for a newer one.
func checkLeaderEpoch(p *partition, current int32) int16 {
	epoch := p.leaderEpoch.Load()
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
func (b *Broker) readForFollower(p *partition, r *kmsg.FetchRequest, follower int32, rp *kmsg.FetchRequestTopicPartition, sp *kmsg.FetchResponseTopicPartition, budget *int64) (int16, *fetchRecords) {
	epoch := int64(-1)
	if r.Version >= 15 {
		epoch = r.ReplicaState.Epoch
	}
	last := int32(-1)
	if r.Version >= 12 {
		last = rp.LastFetchedEpoch
	}
	res := p.rep.FetchForFollower(nil, replica.FollowerFetch{
		ReplicaID: follower, BrokerEpoch: epoch, FetchOffset: rp.FetchOffset,
		CurrentLeaderEpoch: rp.CurrentLeaderEpoch, LastFetchedEpoch: last,
		MaxBytes: max(min(int64(rp.PartitionMaxBytes), *budget), 1),
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
	fr := &fetchRecords{marker: newMarker(), ranges: res.Ranges, size: res.Bytes}
	sp.RecordBatches = fr.marker[:]
	*budget -= res.Bytes
	return 0, fr
}
