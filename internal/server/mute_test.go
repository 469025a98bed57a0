package server

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// muteDispatcher records when each request is served and answers with
// reply (nil: a ready empty response).
type muteDispatcher struct {
	fakeDispatcher
	mu     sync.Mutex
	served map[int32]time.Time
}

func newMuteDispatcher(reply func(req *Request) *Reply) *muteDispatcher {
	d := &muteDispatcher{served: map[int32]time.Time{}}
	d.versions = testVersions
	d.handle = func(_ context.Context, req *Request) *Reply {
		d.mu.Lock()
		d.served[req.CorrelationID] = time.Now()
		d.mu.Unlock()
		if r := reply(req); r != nil {
			return r
		}
		return Ready(req.Body.ResponseKind())
	}
	return d
}

func (d *muteDispatcher) servedAt(corr int32) (time.Time, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	t, ok := d.served[corr]
	return t, ok
}

func twoRequests() []byte {
	return append(reqFrame(&kmsg.MetadataRequest{Version: 9}, 1, nil), reqFrame(&kmsg.MetadataRequest{Version: 9}, 2, nil)...)
}

// A throttled reply is written at once; the next request, though already
// sent, is dispatched only once the mute has passed.
func TestMuteHoldsNextRequest(t *testing.T) {
	const throttle = 200 * time.Millisecond
	var until time.Time
	d := newMuteDispatcher(func(req *Request) *Reply {
		if req.CorrelationID == 1 {
			until = time.Now().Add(throttle)
			return Ready(req.Body.ResponseKind()).MuteUntil(until)
		}
		return nil
	})
	s := startServer(t, d, nil)
	c := dial(t, s)
	c.send(twoRequests())
	if got := correlationOf(c.readFrame()); got != 1 {
		t.Fatalf("first reply has correlation %d", got)
	}
	if at, ok := d.servedAt(2); ok && at.Before(until) {
		t.Fatalf("request 2 served %s before the mute ended", until.Sub(at))
	}
	if got := correlationOf(c.readFrame()); got != 2 {
		t.Fatalf("second reply has correlation %d", got)
	}
	if at, _ := d.servedAt(2); at.Before(until) {
		t.Fatalf("request 2 served %s before the mute ended", until.Sub(at))
	}
	if st := s.Stats(); st.ThrottledReplies != 1 || st.MutedWaits < 1 {
		t.Fatalf("stats %+v", st)
	}
}

// A pending reply mutes from when it is written: a request that comes
// after it waits. (One read and dispatched while it was pending was not
// held: the server reads ahead of pending replies.)
func TestMutePendingReply(t *testing.T) {
	const throttle = 150 * time.Millisecond
	first := NewPendingReply()
	d := newMuteDispatcher(func(req *Request) *Reply {
		if req.CorrelationID == 1 {
			return first
		}
		return nil
	})
	s := startServer(t, d, nil)
	c := dial(t, s)
	c.send(reqFrame(&kmsg.MetadataRequest{Version: 9}, 1, nil))
	eventually(t, 5*time.Second, "request 1 served", func() bool { _, ok := d.servedAt(1); return ok })
	until := time.Now().Add(throttle)
	first.MuteUntil(until).Complete(kmsg.NewPtrMetadataResponse())
	if got := correlationOf(c.readFrame()); got != 1 {
		t.Fatalf("got correlation %d, want 1", got)
	}
	c.send(reqFrame(&kmsg.MetadataRequest{Version: 9}, 2, nil))
	if got := correlationOf(c.readFrame()); got != 2 {
		t.Fatalf("got correlation %d, want 2", got)
	}
	if at, _ := d.servedAt(2); at.Before(until) {
		t.Fatalf("request 2 served %s before the mute ended", until.Sub(at))
	}
}

// A reply that writes nothing (acks=0) still mutes; an earlier deadline
// does not shorten a later one.
func TestMuteWithoutResponseAndExtension(t *testing.T) {
	var until time.Time
	d := newMuteDispatcher(func(req *Request) *Reply {
		switch req.CorrelationID {
		case 1:
			until = time.Now().Add(200 * time.Millisecond)
			return NoResponse().MuteUntil(until)
		case 2:
			return Ready(req.Body.ResponseKind()).MuteUntil(time.Now()) // already over
		}
		return nil
	})
	s := startServer(t, d, nil)
	c := dial(t, s)
	c.send(append(twoRequests(), reqFrame(&kmsg.MetadataRequest{Version: 9}, 3, nil)...))
	for _, want := range []int32{2, 3} {
		if got := correlationOf(c.readFrame()); got != want {
			t.Fatalf("got correlation %d, want %d", got, want)
		}
	}
	for _, corr := range []int32{2, 3} {
		if at, _ := d.servedAt(corr); at.Before(until) {
			t.Fatalf("request %d served %s before the mute ended", corr, until.Sub(at))
		}
	}
}

// Shutdown does not wait for a mute to end.
func TestShutdownWhileMuted(t *testing.T) {
	d := newMuteDispatcher(func(req *Request) *Reply {
		if req.CorrelationID == 1 {
			return Ready(req.Body.ResponseKind()).MuteUntil(time.Now().Add(time.Hour))
		}
		return nil
	})
	s, err := New(Config{Addr: "127.0.0.1:0", Dispatcher: d, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Serve(context.Background()) }()
	c := dial(t, s)
	c.send(twoRequests())
	c.readFrame()
	eventually(t, 5*time.Second, "the reader to wait out the mute", func() bool { return s.Stats().MutedWaits >= 1 })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	start := time.Now()
	if err := s.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if _, ok := d.servedAt(2); ok || time.Since(start) > 4*time.Second {
		t.Fatalf("request 2 served during shutdown, or shutdown took %s", time.Since(start))
	}
}

// Map changes a response before it is written, for replies ready at once
// and completed later; Forward carries a reply's Map and mute along.
func TestReplyMap(t *testing.T) {
	setThrottle := func(ms int32) func(kmsg.Response) kmsg.Response {
		return func(r kmsg.Response) kmsg.Response {
			r.(kmsg.SetThrottleResponse).SetThrottle(ms)
			return r
		}
	}
	pending := NewPendingReply().Map(setThrottle(7))
	d := newMuteDispatcher(func(req *Request) *Reply {
		switch req.CorrelationID {
		case 1:
			return Ready(req.Body.ResponseKind()).Map(setThrottle(5)).Map(setThrottle(6))
		case 2:
			return pending
		case 3:
			in := Ready(req.Body.ResponseKind()).Map(setThrottle(8)).MuteUntil(time.Now().Add(100 * time.Millisecond))
			out := NewPendingReply()
			go Forward(in, out)
			return out
		}
		return nil
	})
	s := startServer(t, d, nil)
	c := dial(t, s)
	c.send(append(twoRequests(), reqFrame(&kmsg.MetadataRequest{Version: 9}, 3, nil)...))
	eventually(t, 5*time.Second, "request 2 served", func() bool { _, ok := d.servedAt(2); return ok })
	pending.Complete(kmsg.NewPtrMetadataResponse())
	for _, want := range []int32{6, 7, 8} {
		frame := c.readFrame()
		resp := kmsg.NewPtrMetadataResponse()
		resp.Version = 9
		// correlation id, then a flexible header's tag byte
		if err := resp.ReadFrom(frame[5:]); err != nil {
			t.Fatal(err)
		}
		if resp.ThrottleMillis != want {
			t.Fatalf("throttle %d, want %d", resp.ThrottleMillis, want)
		}
	}
	if s.Stats().ThrottledReplies != 1 {
		t.Fatalf("stats %+v: the forwarded mute is lost", s.Stats())
	}
}
