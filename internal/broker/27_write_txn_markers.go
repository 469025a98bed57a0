package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	wlog "weir/internal/log"
	"weir/internal/replica"
	"weir/internal/server"
	"weir/internal/txn/markers"
)

// WriteTxnMarkers v1-2, sent by transaction coordinators: internal/txn/
// markers writes each partition's COMMIT or ABORT marker and answers once
// they are committed, completing the transactions' offsets on
// __consumer_offsets partitions first.
var _ = register(handler{key: 27, min: 1, max: 2, serve: func(b *Broker, ctx context.Context, req *server.Request) *server.Reply {
	resp, wait := markers.Write(markersHost{b}, req.Body.(*kmsg.WriteTxnMarkersRequest))
	if wait == nil {
		return server.Ready(resp)
	}
	return b.async(ctx, func(ctx context.Context) kmsg.Response {
		wait(ctx)
		return resp
	})
}})

// markersHost is the broker as internal/txn/markers sees it.
type markersHost struct{ b *Broker }

func (h markersHost) Leader(topic string, i int32) (markers.Partition, error) {
	p, err := h.b.partitionOf(h.b.lookupTopic(topic), i)
	if err != nil {
		return nil, err
	}
	return markerPartition{p}, nil
}

func (h markersHost) CompleteTransaction(ctx context.Context, i int32, pid int64, commit bool) error {
	g := h.b.coord()
	if g == nil {
		return kerr.CoordinatorNotAvailable
	}
	return g.CompleteTransaction(ctx, i, pid, commit)
}

// markerPartition is a led partition as a marker is written to it.
type markerPartition struct{ p *partition }

func (m markerPartition) AppendMarker(mk wlog.TxnMarker, transactionVersion int16) (replica.AppendResult, error) {
	return m.p.rep.AppendMarker(mk, wlog.AppendOptions{Guard: m.p.producers().MarkerGuard(transactionVersion)})
}

func (m markerPartition) WaitAcked(ctx context.Context, res replica.AppendResult) error {
	return m.p.rep.WaitAcked(ctx, res, -1)
}

func (m markerPartition) Offsets() (int32, bool) { return m.p.index, m.p.topic.name == offsetsTopic }
