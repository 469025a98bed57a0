package broker

import (
	"context"
	"errors"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

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
// until an append wakes it, MaxWaitMillis passes, or the connection goes.
var _ = register(handler{key: 1, min: 4, max: 18, serve: (*Broker).handleFetch})

func (b *Broker) handleFetch(ctx context.Context, req *server.Request) *server.Reply {
	r := req.Body.(*kmsg.FetchRequest)
	if r.Version >= 7 && r.SessionID != 0 {
		resp := r.ResponseKind().(*kmsg.FetchResponse)
		resp.ErrorCode = kerr.FetchSessionIDNotFound.Code
		return server.Ready(resp)
	}
	resp, bytes, errs := b.fetchOnce(r)
	if bytes >= int64(r.MinBytes) || r.MaxWaitMillis <= 0 || errs || bytes > 0 && r.MinBytes <= 0 {
		return server.Ready(resp)
	}
	parts := b.fetchPartitions(r)
	return b.async(ctx, func(ctx context.Context) kmsg.Response {
		w := newFetchWaiter()
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
		for {
			select {
			case <-w.ch:
				resp, bytes, errs = b.fetchOnce(r)
				if bytes >= int64(r.MinBytes) || errs {
					return resp
				}
			case <-timer.C:
				resp, _, _ = b.fetchOnce(r)
				return resp
			case <-ctx.Done():
				return resp
			}
		}
	})
}

// fetchPartitions lists the known partitions a fetch reads.
func (b *Broker) fetchPartitions(r *kmsg.FetchRequest) []*partition {
	var out []*partition
	for _, rt := range r.Topics {
		t := b.fetchTopic(r, &rt)
		for _, rp := range rt.Partitions {
			if p, ok := b.partitionOf(t, rp.Partition); ok {
				out = append(out, p)
			}
		}
	}
	return out
}

func (b *Broker) fetchTopic(r *kmsg.FetchRequest, rt *kmsg.FetchRequestTopic) *topic {
	if r.Version >= 13 {
		return b.lookupTopicID(rt.TopicID)
	}
	return b.lookupTopic(rt.Topic)
}

// fetchOnce reads every requested partition once. It reports the bytes
// read and whether any partition failed (errors are answered at once).
func (b *Broker) fetchOnce(r *kmsg.FetchRequest) (*kmsg.FetchResponse, int64, bool) {
	resp := r.ResponseKind().(*kmsg.FetchResponse)
	budget := int64(r.MaxBytes)
	if r.Version < 3 || budget <= 0 {
		budget = 1<<31 - 1
	}
	var total int64
	failed := false
	for _, rt := range r.Topics {
		st := kmsg.NewFetchResponseTopic()
		st.Topic, st.TopicID = rt.Topic, rt.TopicID
		t := b.fetchTopic(r, &rt)
		for _, rp := range rt.Partitions {
			sp := kmsg.NewFetchResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.HighWatermark, sp.LastStableOffset, sp.LogStartOffset = -1, -1, -1
			p, ok := b.partitionOf(t, rp.Partition)
			switch {
			case t == nil && r.Version >= 13:
				sp.ErrorCode = kerr.UnknownTopicID.Code
			case !ok:
				sp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			default:
				sp.ErrorCode = b.readPartition(p, &rp, &sp, &budget, total == 0)
				total += int64(len(sp.RecordBatches))
			}
			if sp.ErrorCode != 0 {
				failed = true
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp, total, failed
}

// readPartition fills one partition of a fetch response and returns its
// error code. The first partition with data may exceed the byte budget by
// one batch so that a consumer always makes progress (KIP-74).
func (b *Broker) readPartition(p *partition, rp *kmsg.FetchRequestTopicPartition, sp *kmsg.FetchResponseTopicPartition, budget *int64, first bool) int16 {
	epoch := p.leaderEpoch.Load()
	if rp.CurrentLeaderEpoch >= 0 {
		if rp.CurrentLeaderEpoch < epoch {
			return kerr.FencedLeaderEpoch.Code
		}
		if rp.CurrentLeaderEpoch > epoch {
			return kerr.UnknownLeaderEpoch.Code
		}
	}
	hw := p.highWatermark()
	sp.HighWatermark, sp.LastStableOffset, sp.LogStartOffset = hw, hw, p.log.StartOffset()
	max := min(int64(rp.PartitionMaxBytes), *budget)
	if max <= 0 && !first {
		return 0
	}
	data, err := p.log.ReadBytes(rp.FetchOffset, max, hw)
	if err != nil {
		if errors.Is(err, kerr.OffsetOutOfRange) {
			return kerr.OffsetOutOfRange.Code
		}
		b.logger.Warn("fetch read failed", "topic", p.topic.name, "partition", p.index, "err", err)
		return kerr.KafkaStorageError.Code
	}
	sp.RecordBatches = data
	*budget -= int64(len(data))
	return 0
}
