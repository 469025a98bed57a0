package broker

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/server"
)

// DeleteTopics v1-6 (v6 names topics by name or id). Internal topics
// cannot be deleted; the rest go to the controller, which removes them in
// one metadata batch; every replica then closes and removes its partition
// directories. The handler answers once the topics are gone from this
// node's registry.
var _ = register(handler{key: 20, min: 1, max: 6, serve: (*Broker).handleDeleteTopics})

func (b *Broker) handleDeleteTopics(ctx context.Context, req *server.Request) *server.Reply {
	r := req.Body.(*kmsg.DeleteTopicsRequest)
	return b.async(ctx, func(ctx context.Context) kmsg.Response { return b.deleteTopics(ctx, r) })
}

func (b *Broker) deleteTopics(ctx context.Context, r *kmsg.DeleteTopicsRequest) kmsg.Response {
	resp := r.ResponseKind().(*kmsg.DeleteTopicsResponse)
	type target struct {
		name *string
		id   [16]byte
	}
	var targets []target
	if r.Version >= 6 {
		for _, t := range r.Topics {
			targets = append(targets, target{t.Topic, t.TopicID})
		}
	} else {
		for _, n := range r.TopicNames {
			targets = append(targets, target{name: &n})
		}
	}
	fwd := kmsg.NewPtrDeleteTopicsRequest()
	fwd.Version, fwd.TimeoutMillis = 6, r.TimeoutMillis
	at := map[[16]byte]int{}
	for _, tg := range targets {
		st := kmsg.NewDeleteTopicsResponseTopic()
		st.Topic, st.TopicID = tg.name, tg.id
		var t *topic
		if tg.name != nil {
			t = b.lookupTopic(*tg.name)
		} else {
			t = b.lookupTopicID(tg.id)
		}
		var err error
		switch {
		case t == nil && tg.name == nil:
			err = kerr.UnknownTopicID
		case t == nil:
			err = kerr.UnknownTopicOrPartition
		case t.internal:
			err = fmt.Errorf("%w: internal topic %s cannot be deleted", kerr.InvalidTopicException, t.name)
		default:
			name := t.name
			st.Topic, st.TopicID = &name, t.id
			if _, dup := at[t.id]; !dup {
				ft := kmsg.NewDeleteTopicsRequestTopic()
				ft.TopicID = t.id
				fwd.Topics = append(fwd.Topics, ft)
				at[t.id] = len(resp.Topics)
			}
		}
		if err != nil {
			st.ErrorCode = errCode(err)
			st.ErrorMessage = errMessage(err)
		}
		resp.Topics = append(resp.Topics, st)
	}
	if len(fwd.Topics) == 0 {
		return resp
	}
	cres, err := b.admin(ctx, fwd, func(res kmsg.Response) func() bool {
		var gone [][16]byte
		for _, st := range res.(*kmsg.DeleteTopicsResponse).Topics {
			if st.ErrorCode == 0 {
				gone = append(gone, st.TopicID)
			}
		}
		return func() bool {
			for _, id := range gone {
				if b.lookupTopicID(id) != nil {
					return false
				}
			}
			return true
		}
	})
	if err != nil {
		err = controllerError(err)
	}
	for i := range resp.Topics {
		st := &resp.Topics[i]
		if _, ok := at[st.TopicID]; !ok || st.ErrorCode != 0 {
			continue
		}
		if err != nil {
			st.ErrorCode, st.ErrorMessage = errCode(err), errMessage(err)
			continue
		}
		for _, cst := range cres.(*kmsg.DeleteTopicsResponse).Topics {
			if cst.TopicID == st.TopicID {
				st.ErrorCode, st.ErrorMessage = cst.ErrorCode, cst.ErrorMessage
			}
		}
	}
	return resp
}
