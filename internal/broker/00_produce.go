package broker

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	wlog "weir/internal/log"
	"weir/internal/replica"
	"weir/internal/server"
	"weir/internal/txn/verification"
)

// Produce v3-13, advertised from v0: Kafka 4.x lists v0 so that old
// librdkafka feature checks pass (KAFKA-18659) but closes the connection
// on v0-2, and so do we. Each partition must carry exactly one v2 batch
// (the v3+ rule). A transactional batch is verified with its transaction's
// coordinator first (KIP-890: verifyProduce, transactions.go), which
// also adds the partition to the transaction for v12+. TimeoutMillis
// bounds that verification and the wait for durability.
var _ = register(handler{key: 0, min: 0, minServed: 3, max: 13, serve: (*Broker).handleProduce})

func (b *Broker) handleProduce(ctx context.Context, req *server.Request) *server.Reply {
	r := req.Body.(*kmsg.ProduceRequest)
	resp := r.ResponseKind().(*kmsg.ProduceResponse)
	acksValid := r.Acks == 0 || r.Acks == 1 || r.Acks == -1
	type ackWait struct {
		p   *partition
		res replica.AppendResult
	}
	var waits []ackWait
	failed := false
	var hints hintSet
	guards := b.verifyProduce(ctx, r)
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
				var res replica.AppendResult
				res, err = b.appendProduced(p, rp.Records, r.Acks, guards[p])
				if dup, ok := asDuplicate(err); ok {
					// A retry of a batch already written: answered with its
					// original offsets once they are what acks promises.
					if res, err = p.rep.Written(dup.Batch.LastOffset); err == nil {
						sp.BaseOffset, sp.LogAppendTime, sp.LogStartOffset = dup.Batch.FirstOffset, dup.Batch.Timestamp, p.log().StartOffset()
					}
				} else if err == nil {
					sp.BaseOffset, sp.LogAppendTime, sp.LogStartOffset = res.BaseOffset, res.LogAppendTime, res.LogStartOffset
				}
				if err == nil {
					if !b.cfg.NullStorage {
						// Answer without a goroutine when the append is
						// acknowledged already (a one-replica ISR, no
						// fsync before acknowledging).
						var done bool
						if done, err = p.rep.Acked(res, r.Acks); !done {
							waits = append(waits, ackWait{p: p, res: res})
						}
					}
				}
			}
			if err != nil {
				failed = true
				sp.ErrorCode = errCode(err)
				sp.ErrorMessage = errMessage(err)
				if h, ok := b.hintFor(t, rp.Partition, err, -1, req.Conn.Listener); ok && r.Version >= 10 {
					sp.CurrentLeader.LeaderID, sp.CurrentLeader.LeaderEpoch = h.leader, h.epoch
					hints.add(h)
				}
				if sp.ErrorCode == kerr.UnknownServerError.Code {
					// Not one of Kafka's answers: a Java producer fails
					// the batch, and an idempotent one bumps its epoch.
					b.logger.Warn("produce failed with an unexpected error", "topic", rt.Topic, "partition", rp.Partition, "err", err)
				} else {
					b.logger.Debug("produce rejected", "topic", rt.Topic, "partition", rp.Partition, "err", err)
				}
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
	if len(waits) == 0 {
		return server.Ready(resp)
	}
	// The wait below reads nothing of the request: its frame is reused
	// once Serve returns (ReusesFrame).
	timeout, version, acks, listener := msDuration(r.TimeoutMillis), r.Version, r.Acks, req.Conn.Listener
	return b.async(ctx, func(ctx context.Context) kmsg.Response {
		ctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		for _, w := range waits {
			err := w.p.rep.WaitAcked(ctx, w.res, acks)
			if err == nil {
				continue
			}
			code := errCode(err)
			if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
				code = kerr.RequestTimedOut.Code
			}
			if sp := markPartition(resp, w.p, code); sp != nil && version >= 10 {
				// Leadership left while the batch waited: the most
				// common NOT_LEADER_OR_FOLLOWER of a move carries the
				// new leader too (KIP-951).
				if h, ok := b.hintFor(w.p.topic, w.p.index, err, -1, listener); ok {
					sp.CurrentLeader.LeaderID, sp.CurrentLeader.LeaderEpoch = h.leader, h.epoch
					addProduceHint(resp, h)
				}
			}
		}
		return resp
	})
}

// appendProduced checks that records hold exactly one batch and appends
// it as leader (the replica moves the high watermark and wakes fetches);
// a transactional batch with the guard its verification chose.
func (b *Broker) appendProduced(p *partition, records []byte, acks int16, txn verification.Guard) (replica.AppendResult, error) {
	var none replica.AppendResult
	if len(records) == 0 {
		return none, fmt.Errorf("%w: no record batch", kerr.InvalidRecord)
	}
	h, err := wlog.ParseBatchHeader(records)
	if err != nil {
		return none, err
	}
	if int(h.Length) < len(records) {
		return none, fmt.Errorf("%w: produce requests v3+ must hold exactly one record batch", kerr.InvalidRecord)
	}
	if int(h.Length) > len(records) {
		return none, fmt.Errorf("%w: the batch's length field says %d bytes, the request holds %d", kerr.CorruptMessage, h.Length, len(records))
	}
	if txn.Err != nil && h.IsTransactional() {
		return none, txn.Err
	}
	if err := b.logDir.Err(); err != nil {
		// The data directory is offline (full or failing): answer now
		// rather than try a write that fails or hangs (logdir.go).
		return none, err
	}
	if b.cfg.NullStorage {
		n, null := int64(h.LastOffsetDelta)+1, b.nullOf(p)
		if err := null.Keep(records); err != nil {
			return none, kerr.KafkaStorageError
		}
		base, last := null.Append(records, n, p.leaderEpoch())
		return replica.AppendResult{AppendResult: wlog.AppendResult{BaseOffset: base, LastOffset: last, LogAppendTime: -1}}, nil
	}
	opts := b.appendOptions(p)
	if txn.Append != nil && h.IsTransactional() {
		opts.Guard = txn.Append
	}
	if h.ProducerID < 0 || h.BaseSequence == 0 {
		return p.rep.Append(records, acks, opts)
	}
	// An idempotent batch past sequence 0 from a producer the partition
	// does not know is accepted, as Kafka does, but says the producer's
	// state was lost here (or expired): worth a line when ordering is in
	// question. The check runs under the log's lock, the line after it.
	unseen, guard := false, opts.Guard
	opts.Guard = func(info wlog.BatchInfo, base int64) error {
		if err := guard(info, base); err != nil {
			return err
		}
		unseen = !p.producers().Knows(info.ProducerID, info.ProducerEpoch)
		return nil
	}
	res, err := p.rep.Append(records, acks, opts)
	if unseen {
		b.logger.Info("produce: accepted a producer the partition did not know at a sequence past 0",
			"topic", p.topic.name, "partition", p.index, "producer_id", h.ProducerID, "epoch", h.ProducerEpoch,
			"sequence", h.BaseSequence, "offset", res.BaseOffset, "err", err)
	}
	return res, err
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
