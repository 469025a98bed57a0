package broker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/config"
	wlog "weir/internal/log"
	"weir/internal/producer"
	"weir/internal/server"
)

// Produce v3-13, advertised from v0: Kafka 4.x lists v0 so that old
// librdkafka feature checks pass (KAFKA-18659) but closes the connection
// on v0-2, and so do we. Each partition must carry exactly one v2 batch
// (the v3+ rule). Transactional batches are refused: weir has no
// transaction coordinator yet. TimeoutMillis bounds the wait for
// durability when a topic fsyncs before acknowledging.
var _ = register(handler{key: 0, min: 0, minServed: 3, max: 13, serve: (*Broker).handleProduce})

func (b *Broker) handleProduce(ctx context.Context, req *server.Request) *server.Reply {
	r := req.Body.(*kmsg.ProduceRequest)
	resp := r.ResponseKind().(*kmsg.ProduceResponse)
	acksValid := r.Acks == 0 || r.Acks == 1 || r.Acks == -1
	var waits []durableWait
	var gaps []sequenceGap
	failed := false
	var hints hintSet
	gapWait := b.settings().Millis(config.ProduceSequenceGapWaitMs)
	for _, rt := range r.Topics {
		st := kmsg.NewProduceResponseTopic()
		st.Topic, st.TopicID = rt.Topic, rt.TopicID
		var t *topic
		if r.Version >= 13 {
			t = b.lookupTopicID(rt.TopicID)
		} else {
			t = b.lookupTopic(rt.Topic)
		}
		for _, rp := range rt.Partitions {
			sp := kmsg.NewProduceResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.BaseOffset, sp.LogAppendTime, sp.LogStartOffset = -1, -1, -1
			var p *partition
			var err error
			switch {
			case !acksValid:
				err = fmt.Errorf("%w: acks must be -1, 0 or 1, got %d", kerr.InvalidRequiredAcks, r.Acks)
			case t == nil && r.Version >= 13:
				err = kerr.UnknownTopicID
			case t == nil:
				err = kerr.UnknownTopicOrPartition
			case t.internal:
				err = fmt.Errorf("%w: cannot append to internal topic %s", kerr.InvalidTopicException, t.name)
			default:
				p, err = b.partitionOf(t, rp.Partition)
			}
			if err == nil {
				var w *durableWait
				w, err = b.produceTo(p, rp.Records, r.Acks, &sp)
				if w != nil {
					waits = append(waits, *w)
				}
				if errors.Is(err, producer.ErrSequenceGap) && r.Acks != 0 && gapWait > 0 {
					// Held below until the missing batch arrives; the
					// records are copied because the request's frame is
					// reused once Serve returns.
					gaps = append(gaps, sequenceGap{p: p, t: t, records: bytes.Clone(rp.Records), topic: len(resp.Topics), part: len(st.Partitions)})
					err = nil
				}
			}
			if err != nil {
				failed = true
				b.refuseProduce(t, rp.Partition, err, r.Version, &sp, &hints)
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	for _, h := range hints {
		addProduceHint(resp, h)
	}
	if r.Acks == 0 {
		if failed {
			// The producer reads no response; closing the connection is
			// how Kafka tells it something went wrong.
			return server.CloseConnection()
		}
		return server.NoResponse()
	}
	if len(waits) == 0 && len(gaps) == 0 {
		return server.Ready(resp)
	}
	// What follows reads nothing of the request but the copies made
	// above: its frame is reused once Serve returns (ReusesFrame).
	timeout, version, acks := msDuration(r.TimeoutMillis), r.Version, r.Acks
	return b.async(ctx, func(ctx context.Context) kmsg.Response {
		ctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		for _, g := range gaps {
			sp := &resp.Topics[g.topic].Partitions[g.part]
			w, err := b.produceAfterGap(ctx, g, acks, gapWait, sp)
			if w != nil {
				waits = append(waits, *w)
			}
			if err != nil {
				var hs hintSet
				b.refuseProduce(g.t, g.p.index, err, version, sp, &hs)
				for _, h := range hs {
					addProduceHint(resp, h)
				}
			}
		}
		for _, w := range waits {
			if w.p.log.Config().SyncBeforeAck {
				if err := w.p.log.WaitDurable(ctx, w.offset); err != nil {
					markPartition(resp, w.p, kerr.RequestTimedOut.Code)
					continue
				}
			}
			if !w.hw {
				continue
			}
			if err := w.p.rep.WaitForHW(ctx, w.epoch, w.offset); err != nil {
				code := errCode(err)
				if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
					code = kerr.RequestTimedOut.Code
				}
				if sp := markPartition(resp, w.p, code); sp != nil && version >= 10 {
					// Leadership left while the batch waited: the most
					// common NOT_LEADER_OR_FOLLOWER of a move carries
					// the new leader too (KIP-951).
					if h, ok := b.hintFor(w.p.topic, w.p.index, err, -1); ok {
						sp.CurrentLeader.LeaderID, sp.CurrentLeader.LeaderEpoch = h.leader, h.epoch
						addProduceHint(resp, h)
					}
				}
			}
		}
		return resp
	})
}

// durableWait is an appended batch whose answer waits for an fsync, the
// high watermark, or both.
type durableWait struct {
	p      *partition
	offset int64
	epoch  int32 // the leader epoch the batch was stamped with
	hw     bool  // acks=all: wait for the high watermark too
}

// sequenceGap is a batch that arrived before an earlier one of its
// producer, and where its answer goes (indexes into the response).
type sequenceGap struct {
	p           *partition
	t           *topic
	records     []byte
	topic, part int
}

// produceTo appends one partition's batch and fills its answer's offsets;
// it returns the wait the answer needs, if any. A retry of a batch already
// written is acknowledged with its original offsets, as Kafka does.
func (b *Broker) produceTo(p *partition, records []byte, acks int16, sp *kmsg.ProduceResponseTopicPartition) (*durableWait, error) {
	res, epoch, err := b.appendProduced(p, records, acks)
	if dup, ok := asDuplicate(err); ok {
		sp.BaseOffset, sp.LogAppendTime, sp.LogStartOffset = dup.Batch.FirstOffset, dup.Batch.Timestamp, p.log.StartOffset()
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	sp.BaseOffset, sp.LogAppendTime, sp.LogStartOffset = res.BaseOffset, res.LogAppendTime, res.LogStartOffset
	sync := p.log.Config().SyncBeforeAck && acks != 0 && !b.cfg.NullStorage
	replicated := acks == -1 && p.rep != nil && !b.cfg.NullStorage
	if !sync && !replicated {
		return nil, nil
	}
	return &durableWait{p: p, offset: res.LastOffset + 1, epoch: epoch, hw: replicated}, nil
}

// produceAfterGap appends a batch that arrived ahead of its producer's
// next sequence once the missing batches are in, trying again after each
// append to the partition, for at most wait. After a leadership move a
// client may send batch n+1 to the new leader while batch n is still on
// its way back from the old one; answering n+1 with
// OUT_OF_ORDER_SEQUENCE_NUMBER at once costs the client its retry
// back-off (100 ms for the Java client), while the retry of n usually
// arrives within a round trip. The connection keeps reading while this
// waits, so that retry is served meanwhile.
func (b *Broker) produceAfterGap(ctx context.Context, g sequenceGap, acks int16, wait time.Duration, sp *kmsg.ProduceResponseTopicPartition) (*durableWait, error) {
	timer := time.NewTimer(wait)
	defer timer.Stop()
	w := newFetchWaiter()
	g.p.addWaiter(w)
	defer g.p.removeWaiter(w)
	g.p.gapsHeld.Add(1)
	for {
		dw, err := b.produceTo(g.p, g.records, acks, sp)
		if !errors.Is(err, producer.ErrSequenceGap) {
			if err == nil {
				g.p.gapsFilled.Add(1)
			}
			return dw, err
		}
		select {
		case <-w.ch:
		case <-timer.C:
			return nil, err
		case <-ctx.Done():
			return nil, err
		}
	}
}

// refuseProduce fills a refused partition's answer: error code, message
// and, for a leadership error, the new leader (KIP-951).
func (b *Broker) refuseProduce(t *topic, partition int32, err error, version int16, sp *kmsg.ProduceResponseTopicPartition, hints *hintSet) {
	sp.ErrorCode = errCode(err)
	sp.ErrorMessage = errMessage(err)
	if h, ok := b.hintFor(t, partition, err, -1); ok && version >= 10 {
		sp.CurrentLeader.LeaderID, sp.CurrentLeader.LeaderEpoch = h.leader, h.epoch
		hints.add(h)
	}
	b.logger.Debug("produce rejected", "partition", partition, "err", err)
}

// appendProduced checks that records hold exactly one batch and appends
// it as leader (the replica moves the high watermark and wakes fetches).
// It returns the leader epoch the batch was stamped with.
func (b *Broker) appendProduced(p *partition, records []byte, acks int16) (wlog.AppendResult, int32, error) {
	if len(records) == 0 {
		return wlog.AppendResult{}, 0, fmt.Errorf("%w: no record batch", kerr.InvalidRecord)
	}
	h, err := wlog.ParseBatchHeader(records)
	if err != nil {
		return wlog.AppendResult{}, 0, err
	}
	if int(h.Length) < len(records) {
		return wlog.AppendResult{}, 0, fmt.Errorf("%w: produce requests v3+ must hold exactly one record batch", kerr.InvalidRecord)
	}
	if h.IsTransactional() {
		return wlog.AppendResult{}, 0, fmt.Errorf("%w: transactions are not supported", kerr.TransactionalIDAuthorizationFailed)
	}
	if b.cfg.NullStorage {
		n := int64(h.LastOffsetDelta) + 1
		last := p.nullEnd.Add(n) - 1
		return wlog.AppendResult{BaseOffset: last - n + 1, LastOffset: last, LogAppendTime: -1}, 0, nil
	}
	res, err := p.rep.Append(records, acks, b.appendOptions(p))
	if err != nil {
		return res.AppendResult, 0, err
	}
	p.wakeAll() // followers parked on the log end fetch it now
	return res.AppendResult, res.LeaderEpoch, nil
}

// markPartition sets the error of p's answer, unless it has one, and
// returns that answer (nil when it had an error already).
func markPartition(resp *kmsg.ProduceResponse, p *partition, code int16) *kmsg.ProduceResponseTopicPartition {
	var marked *kmsg.ProduceResponseTopicPartition
	for i := range resp.Topics {
		for j := range resp.Topics[i].Partitions {
			sp := &resp.Topics[i].Partitions[j]
			if (resp.Topics[i].Topic == p.topic.name || resp.Topics[i].TopicID == p.topic.id) && sp.Partition == p.index && sp.ErrorCode == 0 {
				sp.ErrorCode = code
				marked = sp
			}
		}
	}
	return marked
}

// addProduceHint adds a leader's endpoint to a Produce answer once.
func addProduceHint(resp *kmsg.ProduceResponse, h leaderHint) {
	for _, br := range resp.Brokers {
		if br.NodeID == h.leader {
			return
		}
	}
	br := kmsg.NewProduceResponseBroker()
	br.NodeID, br.Host, br.Port, br.Rack = h.leader, h.host, h.port, h.rack
	resp.Brokers = append(resp.Brokers, br)
}
