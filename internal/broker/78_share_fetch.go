package broker

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/admission"
	"weir/internal/server"
	"weir/internal/sharegroup"
	"weir/internal/splice"
)

// ShareFetch v1-2 (KIP-932; v2 adds ShareAcquireMode, KIP-1206, and
// IsRenewAck, KIP-1222): sharegroup.Manager.ShareFetch, whose doc lists
// the checks, the session, the acknowledgements and the acquisition in
// Kafka's order. This handler only parks a fetch that acquired nothing
// (off the request path, until records or MaxWaitMs) and encodes the
// answer with the records spliced in from the segment files
// (internal/splice).
var _ = register(handler{key: 78, min: 1, max: 2, serve: (*Broker).handleShareFetch})

func (b *Broker) handleShareFetch(ctx context.Context, req *server.Request) *server.Reply {
	f := b.shares.ShareFetch(ctx, req.Body.(*kmsg.ShareFetchRequest))
	version, fin := req.Version, admission.VerdictOf(ctx).Finish
	if after, refused := f.Refused(); refused {
		return b.async(ctx, func(ctx context.Context) kmsg.Response {
			select {
			case <-time.After(after):
				return f.Response(nil)
			case <-ctx.Done():
				return nil
			}
		})
	}
	if f.Ready() {
		body, err := shareFetchBody(f, version, fin)
		if err != nil {
			b.logger.Error("share fetch response encoding failed", "err", err)
			return server.CloseConnection()
		}
		return server.ReadyBody(body)
	}
	reply := server.NewPendingReply()
	wctx, cancel := mergeCancel(ctx, b.ctx)
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		defer cancel()
		if !f.Wait(wctx) {
			reply.CompleteClose()
			return
		}
		body, err := shareFetchBody(f, version, fin)
		if err != nil {
			b.logger.Error("share fetch response encoding failed", "err", err)
			reply.CompleteClose()
			return
		}
		reply.CompleteBody(body)
	}()
	return reply
}

// shareFetchBody encodes f's answer, with what authorization adds to it
// (fin: the partitions it denied), with a marker in place of each
// partition's records, and splices the records in.
func shareFetchBody(f *sharegroup.Fetch, version int16, fin func(kmsg.Response) kmsg.Response) (*server.Body, error) {
	var parts []*splice.Part
	resp := f.Response(func(r *sharegroup.Records) []byte {
		p := &splice.Part{Marker: splice.NewMarker(), Pieces: r.Pieces, Size: r.Size}
		parts = append(parts, p)
		return p.Marker[:]
	})
	out := fin(resp)
	out.SetVersion(version)
	return splice.Body(out.AppendTo(nil), true, parts)
}
