package broker

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	wlog "weir/internal/log"
	"weir/internal/replica"
	"weir/internal/server"
)

// WriteTxnMarkers v1-2, sent by transaction coordinators: each partition
// leader writes the COMMIT or ABORT marker of a producer's transaction
// (the producer state checks its epoch and the coordinator epoch) and
// answers once it is committed (acks=all). For a __consumer_offsets
// partition the group coordinator then makes the producer's pending
// offsets committed or drops them, before the answer, so that the
// producer's next transaction cannot commit offsets first.
var _ = register(handler{key: 27, min: 1, max: 2, serve: (*Broker).handleWriteTxnMarkers})

// markerWrite is one partition's marker waiting to be committed.
type markerWrite struct {
	p      *partition
	res    replica.AppendResult
	code   *int16
	pid    int64
	commit bool
}

func (b *Broker) handleWriteTxnMarkers(ctx context.Context, req *server.Request) *server.Reply {
	r := req.Body.(*kmsg.WriteTxnMarkersRequest)
	resp := r.ResponseKind().(*kmsg.WriteTxnMarkersResponse)
	var waits []markerWrite
	for _, m := range r.Markers {
		rm := kmsg.NewWriteTxnMarkersResponseMarker()
		rm.ProducerID = m.ProducerID
		for _, mt := range m.Topics {
			rt := kmsg.NewWriteTxnMarkersResponseMarkerTopic()
			rt.Topic = mt.Topic
			for _, i := range mt.Partitions {
				rp := kmsg.NewWriteTxnMarkersResponseMarkerTopicPartition()
				rp.Partition = i
				rt.Partitions = append(rt.Partitions, rp)
			}
			rm.Topics = append(rm.Topics, rt)
		}
		resp.Markers = append(resp.Markers, rm)
	}
	// The answers are filled in place: resp's slices no longer grow.
	for i, m := range r.Markers {
		marker := wlog.TxnMarker{ProducerID: m.ProducerID, ProducerEpoch: m.ProducerEpoch,
			Marker: wlog.Marker{Type: wlog.ControlAbort, CoordinatorEpoch: m.CoordinatorEpoch}}
		if m.Committed {
			marker.Type = wlog.ControlCommit
		}
		for j, mt := range m.Topics {
			t := b.lookupTopic(mt.Topic)
			for k, index := range mt.Partitions {
				code := &resp.Markers[i].Topics[j].Partitions[k].ErrorCode
				p, err := b.partitionOf(t, index)
				if err != nil {
					*code = errCode(err)
					continue
				}
				res, err := p.rep.AppendMarker(marker, wlog.AppendOptions{Guard: p.producers.MarkerGuard(int16(m.TransactionVersion))})
				if err != nil {
					*code = errCode(err)
					b.logger.Debug("marker refused", "topic", mt.Topic, "partition", index, "producer_id", m.ProducerID, "err", err)
					continue
				}
				waits = append(waits, markerWrite{p: p, res: res, code: code, pid: m.ProducerID, commit: m.Committed})
			}
		}
	}
	if len(waits) == 0 {
		return server.Ready(resp)
	}
	return b.async(ctx, func(ctx context.Context) kmsg.Response {
		ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		for _, w := range waits {
			if err := w.p.rep.WaitAcked(ctx, w.res, -1); err != nil {
				*w.code = errCode(err)
				if ctx.Err() != nil {
					*w.code = kerr.RequestTimedOut.Code
				}
				continue
			}
			if w.p.topic.name != offsetsTopic {
				continue
			}
			g := b.coord()
			if g == nil {
				*w.code = kerr.CoordinatorNotAvailable.Code
				continue
			}
			if err := g.CompleteTransaction(ctx, w.p.index, w.pid, w.commit); err != nil {
				*w.code = errCode(err)
			}
		}
		return resp
	})
}
