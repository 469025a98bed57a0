package broker

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/server"
)

// CreatePartitions v0-3: grow a topic to Count partitions. Checked here
// (internal topics, the per-topic cap), placed and committed by the
// controller; the handler answers once the new partitions are in this
// node's registry.
var _ = register(handler{key: 37, min: 0, max: 3, serve: (*Broker).handleCreatePartitions})

func (b *Broker) handleCreatePartitions(ctx context.Context, req *server.Request) *server.Reply {
	r := req.Body.(*kmsg.CreatePartitionsRequest)
	return b.async(ctx, func(ctx context.Context) kmsg.Response { return b.createPartitions(ctx, r) })
}

func (b *Broker) createPartitions(ctx context.Context, r *kmsg.CreatePartitionsRequest) kmsg.Response {
	resp := r.ResponseKind().(*kmsg.CreatePartitionsResponse)
	fwd := kmsg.NewPtrCreatePartitionsRequest()
	fwd.Version, fwd.TimeoutMillis, fwd.ValidateOnly = r.Version, r.TimeoutMillis, r.ValidateOnly
	at := map[string]int{}
	for _, rt := range r.Topics {
		res := kmsg.NewCreatePartitionsResponseTopic()
		res.Topic = rt.Topic
		t := b.lookupTopic(rt.Topic)
		var err error
		switch {
		case t == nil:
			err = kerr.UnknownTopicOrPartition
		case t.internal:
			err = fmt.Errorf("%w: internal topic %s cannot grow", kerr.InvalidTopicException, t.name)
		default:
			err = b.checkPartitionCount(rt.Count)
		}
		if err != nil {
			res.ErrorCode = errCode(err)
			res.ErrorMessage = errMessage(err)
		} else if _, dup := at[rt.Topic]; !dup {
			at[rt.Topic] = len(resp.Topics)
			fwd.Topics = append(fwd.Topics, rt)
		}
		resp.Topics = append(resp.Topics, res)
	}
	if len(fwd.Topics) == 0 {
		return resp
	}
	cres, err := b.admin(ctx, fwd, func(res kmsg.Response) func() bool {
		if r.ValidateOnly {
			return nil
		}
		want := map[string]int32{}
		for i, st := range res.(*kmsg.CreatePartitionsResponse).Topics {
			if st.ErrorCode == 0 && i < len(fwd.Topics) {
				want[st.Topic] = fwd.Topics[i].Count
			}
		}
		return func() bool {
			for name, n := range want {
				t := b.lookupTopic(name)
				if t == nil {
					return false
				}
				b.mu.RLock()
				have := int32(len(t.partitions))
				b.mu.RUnlock()
				if have < n {
					return false
				}
			}
			return true
		}
	})
	if err != nil {
		err = controllerError(err)
		for _, i := range at {
			resp.Topics[i].ErrorCode, resp.Topics[i].ErrorMessage = errCode(err), errMessage(err)
		}
		return resp
	}
	for _, cst := range cres.(*kmsg.CreatePartitionsResponse).Topics {
		if i, ok := at[cst.Topic]; ok {
			resp.Topics[i].ErrorCode, resp.Topics[i].ErrorMessage = cst.ErrorCode, cst.ErrorMessage
		}
	}
	return resp
}
