package server

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

type replyKind uint8

const (
	kindPending  replyKind = iota
	kindResponse           // encode resp
	kindBody               // write a pre-encoded body
	kindNone               // write nothing (acks=0 produce)
	kindClose              // write nothing, close the connection
)

// Reply is the outcome of one request. It is either ready when Serve
// returns (Ready, ReadyBody, NoResponse, CloseConnection) or completed
// later, exactly once, by Complete or CompleteBody on a NewPendingReply.
//
// The connection writer sends replies in request order, so a pending
// Reply holds back every later reply on its connection until it
// completes.
type Reply struct {
	done chan struct{} // closed once kind is no longer kindPending

	mu        sync.Mutex
	kind      replyKind // read without mu only after done is closed
	resp      kmsg.Response
	body      *Body
	abandoned bool // the server will never write this reply

	// muteUntil is when the connection may be read again, in Unix
	// nanoseconds; 0 for no mute (MuteUntil).
	muteUntil atomic.Int64
	// mapResp, set before Serve returns (Map), changes the response
	// before it is encoded.
	mapResp func(kmsg.Response) kmsg.Response
	// holdsFrame, set before Serve returns, keeps the request's frame
	// from being reused: a held request is served after Serve returned.
	holdsFrame bool
}

// closedDone is shared by replies that are ready when created.
var closedDone = func() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}()

// Ready returns a reply carrying resp. The server sets resp's version to
// the request's version before encoding it.
func Ready(resp kmsg.Response) *Reply {
	return &Reply{done: closedDone, kind: kindResponse, resp: resp}
}

// ReadyBody returns a reply carrying a pre-encoded body.
func ReadyBody(b *Body) *Reply {
	return &Reply{done: closedDone, kind: kindBody, body: b}
}

// NoResponse returns a reply that writes nothing: Kafka sends no response
// to an acks=0 produce.
func NoResponse() *Reply {
	return &Reply{done: closedDone, kind: kindNone}
}

// CloseConnection returns a reply that closes the connection once every
// earlier reply has been written. Kafka closes the connection, rather than
// answering, when an acks=0 produce fails or a request cannot be handled
// at all.
func CloseConnection() *Reply {
	return &Reply{done: closedDone, kind: kindClose}
}

// MuteUntil asks the server to dispatch no further request of the
// reply's connection before t: Kafka's throttling of a client over its
// quota, whose reply carries the throttle time (KIP-219). The reply
// itself is written as soon as it is ready. Call it before the reply
// completes (for a Ready reply, before Serve returns); a later deadline
// on the same connection extends the mute, an earlier one changes
// nothing. It returns r.
//
// Requests the server read before the mute began (it reads ahead of
// pending replies) are dispatched in order once it ends: a request is
// never dispatched while its connection is muted.
func (r *Reply) MuteUntil(t time.Time) *Reply {
	r.muteUntil.Store(t.UnixNano())
	return r
}

// MutedUntil is when the connection may be read again after r, as
// MuteUntil set it (the zero time when it did not): for tests of
// dispatchers.
func (r *Reply) MutedUntil() time.Time {
	if ns := r.muteUntil.Load(); ns != 0 {
		return time.Unix(0, ns)
	}
	return time.Time{}
}

// Map asks the server to pass the reply's response through fn before
// encoding it, when the reply carries one (not a pre-encoded body, no
// response, or a close): what a dispatcher adds to every answer of a
// kind, whether its handler answers at once or later. Call it before
// Serve returns; a second call runs fn after the first. It returns r.
func (r *Reply) Map(fn func(kmsg.Response) kmsg.Response) *Reply {
	if prev := r.mapResp; prev != nil {
		r.mapResp = func(resp kmsg.Response) kmsg.Response { return fn(prev(resp)) }
	} else {
		r.mapResp = fn
	}
	return r
}

// NewPendingReply returns a reply to be completed later with Complete or
// CompleteBody.
func NewPendingReply() *Reply {
	return &Reply{done: make(chan struct{})}
}

// Complete completes r with resp. It reports whether this call completed
// r: only the first completion counts, later ones are no-ops, so a timer
// and a wake-up may race to complete the same reply.
func (r *Reply) Complete(resp kmsg.Response) bool {
	return r.complete(kindResponse, resp, nil)
}

// CompleteClose completes r by closing the connection once every earlier
// reply is written, for a waiting request that cannot be answered (its
// context ended). See Complete.
func (r *Reply) CompleteClose() bool {
	return r.complete(kindClose, nil, nil)
}

// CompleteBody completes r with a pre-encoded body; see Complete. If the
// body loses the race or its connection is already gone, it is released.
func (r *Reply) CompleteBody(b *Body) bool {
	ok := r.complete(kindBody, nil, b)
	if !ok {
		b.release()
	}
	return ok
}

func (r *Reply) complete(kind replyKind, resp kmsg.Response, b *Body) bool {
	r.mu.Lock()
	if r.kind != kindPending {
		r.mu.Unlock()
		return false
	}
	r.kind, r.resp, r.body = kind, resp, b
	abandoned := r.abandoned
	r.mu.Unlock()
	close(r.done)
	if abandoned {
		b.release()
	}
	return true
}

// abandon records that the server will never write r and releases its
// body if it has one already.
func (r *Reply) abandon() {
	r.mu.Lock()
	r.abandoned = true
	b := r.body
	r.mu.Unlock()
	b.release()
}

// ready reports whether r is complete, so that it can be written now.
func (r *Reply) ready() bool {
	select {
	case <-r.done:
		return true
	default:
		return false
	}
}

// closes reports whether r is a CloseConnection reply. Only ready replies
// can be.
func (r *Reply) closes() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.kind == kindClose
}

// Done is closed once r is complete; a reply that is ready when created
// is done at once.
func (r *Reply) Done() <-chan struct{} { return r.done }

// WaitReply waits up to d for r to complete and reports whether it did;
// for tests of dispatchers.
func WaitReply(r *Reply, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-r.done:
		return true
	case <-t.C:
		return false
	}
}

// Response waits for r to complete and returns the response it carries,
// passed through its Map: how a dispatcher serves a request of its own
// without a connection. ok is false when r carries no response (a
// pre-encoded body, no response, a close) or ctx ends first; r is then
// abandoned.
func (r *Reply) Response(ctx context.Context) (resp kmsg.Response, ok bool) {
	select {
	case <-r.done:
	case <-ctx.Done():
		r.abandon()
		return nil, false
	}
	r.mu.Lock()
	kind, resp, body := r.kind, r.resp, r.body
	r.mu.Unlock()
	if kind != kindResponse || resp == nil {
		body.release()
		return nil, false
	}
	if r.mapResp != nil {
		resp = r.mapResp(resp)
	}
	return resp, true
}

// Forward completes out as in completes: the same response (passed
// through in's Map), body, no response or close, and in's mute. It waits
// for in.
func Forward(in, out *Reply) {
	<-in.done
	in.mu.Lock()
	kind, resp, body := in.kind, in.resp, in.body
	in.mu.Unlock()
	if in.mapResp != nil && resp != nil {
		resp = in.mapResp(resp)
	}
	if until := in.muteUntil.Load(); until > out.muteUntil.Load() {
		out.muteUntil.Store(until)
	}
	out.complete(kind, resp, body)
}

// ReplyBody returns the body of a completed reply that carries one
// (nil otherwise); for tests of dispatchers, with FlattenBody.
func ReplyBody(r *Reply) *Body {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.kind != kindBody {
		return nil
	}
	return r.body
}
