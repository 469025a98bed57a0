package server

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestReplyResponse: Response returns a reply's response once it
// completes, through its Map; a reply without a response (a body, none,
// a close) or a context that ends first give none, and a body is
// released either way.
func TestReplyResponse(t *testing.T) {
	answer := func(code int16) kmsg.Response {
		r := kmsg.NewPtrEndTxnResponse()
		r.ErrorCode = code
		return r
	}
	var released atomic.Int32
	body := func() *Body { return &Body{Release: func() { released.Add(1) }} }
	for _, c := range []struct {
		name     string
		reply    func() *Reply
		wantCode int16
		ok       bool
		released int32
	}{
		{"ready", func() *Reply { return Ready(answer(3)) }, 3, true, 0},
		{"mapped", func() *Reply {
			return Ready(answer(3)).Map(func(r kmsg.Response) kmsg.Response { r.(*kmsg.EndTxnResponse).ErrorCode = 53; return r })
		}, 53, true, 0},
		{"completed later", func() *Reply {
			r := NewPendingReply()
			time.AfterFunc(10*time.Millisecond, func() { r.Complete(answer(7)) })
			return r
		}, 7, true, 0},
		{"body", func() *Reply { return ReadyBody(body()) }, 0, false, 1},
		{"no response", NoResponse, 0, false, 0},
		{"close", CloseConnection, 0, false, 0},
		{"never completed", NewPendingReply, 0, false, 0},
		{"body after the wait ended", func() *Reply {
			r := NewPendingReply()
			time.AfterFunc(200*time.Millisecond, func() { r.CompleteBody(body()) })
			return r
		}, 0, false, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			released.Store(0)
			r := c.reply()
			ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
			defer cancel()
			resp, ok := r.Response(ctx)
			if ok != c.ok {
				t.Fatalf("ok %v, want %v", ok, c.ok)
			}
			if ok && resp.(*kmsg.EndTxnResponse).ErrorCode != c.wantCode {
				t.Fatalf("code %d, want %d", resp.(*kmsg.EndTxnResponse).ErrorCode, c.wantCode)
			}
			if c.released > 0 {
				eventually(t, 5*time.Second, "the body released", func() bool { return released.Load() == c.released })
			} else if released.Load() != 0 {
				t.Fatal("a body was released")
			}
		})
	}
}
