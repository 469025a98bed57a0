package markers

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/errcode"
	wlog "weir/internal/log"
	"weir/internal/replica"
)

// Timeout bounds the wait for every marker of a request to be committed;
// a marker not committed by then is answered REQUEST_TIMED_OUT.
const Timeout = 30 * time.Second

// Partition is a partition this broker leads, as a marker is written to
// it.
type Partition interface {
	// AppendMarker appends the marker as leader under the partition's
	// producer state's check for the transaction version.
	AppendMarker(m wlog.TxnMarker, transactionVersion int16) (replica.AppendResult, error)
	// WaitAcked waits until the append is committed (acks=all).
	WaitAcked(ctx context.Context, res replica.AppendResult) error
	// Offsets reports the __consumer_offsets partition's index, and
	// whether the partition is one.
	Offsets() (int32, bool)
}

// Host is what writing markers needs of the broker.
type Host interface {
	// Leader is the partition of topic this broker leads, or the error
	// its answer carries (UNKNOWN_TOPIC_OR_PARTITION,
	// NOT_LEADER_OR_FOLLOWER).
	Leader(topic string, partition int32) (Partition, error)
	// CompleteTransaction makes a producer's pending offsets in a
	// __consumer_offsets partition committed or drops them.
	CompleteTransaction(ctx context.Context, partition int32, producerID int64, commit bool) error
}

// write is one partition's marker waiting to be committed.
type write struct {
	p      Partition
	res    replica.AppendResult
	code   *int16
	pid    int64
	commit bool
}

// Write appends every marker of r to the partitions it names and returns
// the answer with the appends' refusals filled in, and, when any marker
// was appended, wait: it waits (at most Timeout) for those to be
// committed, completes the transactions of __consumer_offsets partitions
// and fills the rest of the answer. The caller answers once wait returns.
func Write(h Host, r *kmsg.WriteTxnMarkersRequest) (resp *kmsg.WriteTxnMarkersResponse, wait func(ctx context.Context)) {
	resp = answerSkeleton(r)
	var ws []write
	// The answers are filled in place: resp's slices no longer grow.
	for i, m := range r.Markers {
		marker := wlog.TxnMarker{ProducerID: m.ProducerID, ProducerEpoch: m.ProducerEpoch,
			Marker: wlog.Marker{Type: wlog.ControlAbort, CoordinatorEpoch: m.CoordinatorEpoch}}
		if m.Committed {
			marker.Type = wlog.ControlCommit
		}
		for j, mt := range m.Topics {
			for k, index := range mt.Partitions {
				code := &resp.Markers[i].Topics[j].Partitions[k].ErrorCode
				p, err := h.Leader(mt.Topic, index)
				if err != nil {
					*code = errcode.Of(err)
					continue
				}
				res, err := p.AppendMarker(marker, int16(m.TransactionVersion))
				if err != nil {
					*code = errcode.Of(err)
					continue
				}
				ws = append(ws, write{p: p, res: res, code: code, pid: m.ProducerID, commit: m.Committed})
			}
		}
	}
	if len(ws) == 0 {
		return resp, nil
	}
	return resp, func(ctx context.Context) {
		ctx, cancel := context.WithTimeout(ctx, Timeout)
		defer cancel()
		for _, w := range ws {
			if err := w.p.WaitAcked(ctx, w.res); err != nil {
				*w.code = errcode.Of(err)
				if ctx.Err() != nil {
					*w.code = kerr.RequestTimedOut.Code
				}
				continue
			}
			if i, ok := w.p.Offsets(); ok {
				if err := h.CompleteTransaction(ctx, i, w.pid, w.commit); err != nil {
					*w.code = errcode.Of(err)
				}
			}
		}
	}
}

// answerSkeleton is r's answer with every partition it names, no error.
func answerSkeleton(r *kmsg.WriteTxnMarkersRequest) *kmsg.WriteTxnMarkersResponse {
	resp := r.ResponseKind().(*kmsg.WriteTxnMarkersResponse)
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
	return resp
}
