package server

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// pendingDispatcher answers every request with a pending reply the test
// completes.
type pendingDispatcher struct {
	fakeDispatcher
	mu      sync.Mutex
	pending []*Reply
	reqs    []*Request
	ctxs    []context.Context
}

func newPendingDispatcher() *pendingDispatcher {
	d := &pendingDispatcher{}
	d.versions = testVersions
	d.handle = func(ctx context.Context, req *Request) *Reply {
		r := NewPendingReply()
		d.mu.Lock()
		d.ctxs = append(d.ctxs, ctx)
		d.pending = append(d.pending, r)
		d.reqs = append(d.reqs, req)
		d.mu.Unlock()
		return r
	}
	return d
}

func (d *pendingDispatcher) count() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.pending)
}

func (d *pendingDispatcher) complete(i int) {
	d.mu.Lock()
	r, req := d.pending[i], d.reqs[i]
	d.mu.Unlock()
	r.Complete(req.Body.ResponseKind())
}

// Reply 1 pending, reply 2 ready: the wire carries 1, then 2.
func TestRepliesInRequestOrder(t *testing.T) {
	first := NewPendingReply()
	d := &fakeDispatcher{versions: testVersions, handle: func(_ context.Context, req *Request) *Reply {
		if req.CorrelationID == 1 {
			return first
		}
		return Ready(req.Body.ResponseKind())
	}}
	s := startServer(t, d, nil)
	c := dial(t, s)
	c.send(append(reqFrame(&kmsg.MetadataRequest{Version: 9}, 1, nil), reqFrame(&kmsg.MetadataRequest{Version: 9}, 2, nil)...))
	eventually(t, 5*time.Second, "both requests served", func() bool { return len(d.served()) == 2 })

	// Reply 2 is ready, yet nothing may arrive while 1 is pending.
	c.nc.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	var one [1]byte
	if n, _ := c.nc.Read(one[:]); n != 0 {
		t.Fatal("a byte arrived while the first reply was pending")
	}
	if !first.Complete(kmsg.NewPtrMetadataResponse()) {
		t.Fatal("first Complete must win")
	}
	if first.Complete(kmsg.NewPtrMetadataResponse()) {
		t.Fatal("second Complete must be a no-op")
	}
	for _, want := range []int32{1, 2} {
		if got := correlationOf(c.readFrame()); got != want {
			t.Fatalf("got correlation %d, want %d", got, want)
		}
	}
}

// At most MaxInFlight requests are read and unanswered; the reader stops
// and resumes one request per freed slot.
func TestInFlightBound(t *testing.T) {
	const bound, extra = 4, 3
	d := newPendingDispatcher()
	s := startServer(t, d, func(c *Config) { c.MaxInFlight = bound })
	c := dial(t, s)
	var in []byte
	for corr := int32(0); corr < bound+extra; corr++ {
		in = append(in, reqFrame(&kmsg.MetadataRequest{Version: 9}, corr, nil)...)
	}
	c.send(in)

	// Once the reader reports the bound reached, it is parked: the
	// count cannot move until a slot frees.
	eventually(t, 5*time.Second, "the reader to stall", func() bool { return s.Stats().InFlightStalls >= 1 })
	if n := d.count(); n != bound {
		t.Fatalf("served %d requests with %d slots", n, bound)
	}
	for i := 0; i < bound+extra; i++ {
		stalls := s.Stats().InFlightStalls
		d.complete(i)
		if got := correlationOf(c.readFrame()); got != int32(i) {
			t.Fatalf("reply %d has correlation %d", i, got)
		}
		want := bound + i + 1 // one slot freed, one more request read
		if want > bound+extra {
			continue // nothing left to read
		}
		eventually(t, 5*time.Second, "one more request", func() bool { return d.count() == want })
		if want == bound+extra {
			continue // the reader waits for bytes, not for a slot
		}
		eventually(t, 5*time.Second, "the reader to stall again", func() bool { return s.Stats().InFlightStalls > stalls })
		if n := d.count(); n != want {
			t.Fatalf("after freeing %d slots: %d served, want %d", i+1, n, want)
		}
	}
}

// The pending replies of a connection that goes away are abandoned, and a
// body completed afterwards is released, not leaked.
func TestAbandonedReplyReleasesBody(t *testing.T) {
	d := newPendingDispatcher()
	s := startServer(t, d, nil)
	c := dial(t, s)
	c.send(reqFrame(&kmsg.MetadataRequest{Version: 9}, 1, nil))
	eventually(t, 5*time.Second, "request served", func() bool { return d.count() == 1 })
	c.nc.Close()
	eventually(t, 5*time.Second, "connection cleanup", func() bool { return s.Stats().ConnectionsClosed == 1 })
	d.mu.Lock()
	ctx := d.ctxs[0]
	d.mu.Unlock()
	if ctx.Err() == nil {
		t.Fatal("the context given to Serve outlived its connection")
	}

	released := 0
	b := &Body{Release: func() { released++ }}
	b.AppendBytes([]byte{1})
	d.mu.Lock()
	r := d.pending[0]
	d.mu.Unlock()
	if !r.CompleteBody(b) {
		t.Fatal("CompleteBody must report the completion")
	}
	if released != 1 {
		t.Fatalf("released %d times", released)
	}
	// A losing CompleteBody releases its own body too.
	if r.CompleteBody(b) || released != 1 {
		t.Fatalf("second completion: released %d", released)
	}
	b2 := &Body{Release: func() { released++ }}
	if r.CompleteBody(b2) || released != 2 {
		t.Fatalf("losing body: released %d", released)
	}
}

// Serve is never called concurrently for one connection, and sees each
// connection's requests in the order they were sent, while connections
// proceed independently.
func TestServeSequentialPerConnection(t *testing.T) {
	const conns, perConn = 4, 200
	var mu sync.Mutex
	active := map[uint64]int{}
	next := map[uint64]int32{}
	var problems []string
	var completers sync.WaitGroup
	defer completers.Wait()
	d := &fakeDispatcher{versions: testVersions, handle: func(_ context.Context, req *Request) *Reply {
		id := req.Conn.ID
		mu.Lock()
		active[id]++
		if active[id] > 1 {
			problems = append(problems, "concurrent Serve on one connection")
		}
		if req.CorrelationID != next[id] {
			problems = append(problems, "request out of order")
		}
		next[id]++
		mu.Unlock()
		r := Ready(req.Body.ResponseKind())
		if req.CorrelationID%3 == 0 { // some replies complete later
			r = NewPendingReply()
			completers.Go(func() { r.Complete(req.Body.ResponseKind()) })
		}
		mu.Lock()
		active[id]--
		mu.Unlock()
		return r
	}}
	s := startServer(t, d, nil)
	var in []byte
	for corr := int32(0); corr < perConn; corr++ {
		in = append(in, reqFrame(&kmsg.ProduceRequest{Version: 9, Acks: 1}, corr, nil)...)
	}
	var wg sync.WaitGroup
	errs := make(chan string, conns)
	for range conns {
		c := dial(t, s)
		c.send(in) // a few KiB: fits in the socket buffers
		wg.Go(func() {
			for want := int32(0); want < perConn; want++ {
				b, err := c.tryReadFrame()
				if err != nil || correlationOf(b) != want {
					errs <- "reply out of order or missing"
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Fatal(e)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(problems) > 0 {
		t.Fatal(problems[0])
	}
	if len(next) != conns {
		t.Fatalf("saw %d connections", len(next))
	}
}

// Requests answered at once, one after another, are written by the reader
// itself; a reply completed later goes through the writer, and a ready one
// behind it waits its turn there too.
func TestReadyRepliesWrittenByReader(t *testing.T) {
	var pending *Reply
	d := &fakeDispatcher{versions: testVersions, handle: func(_ context.Context, req *Request) *Reply {
		if req.CorrelationID == 100 {
			pending = NewPendingReply()
			return pending
		}
		return Ready(req.Body.ResponseKind())
	}}
	s := startServer(t, d, nil)
	c := dial(t, s)
	const n = 50
	for corr := int32(0); corr < n; corr++ {
		c.send(reqFrame(&kmsg.MetadataRequest{Version: 9}, corr, nil))
		if got := correlationOf(c.readFrame()); got != corr {
			t.Fatalf("reply %d has correlation %d", corr, got)
		}
	}
	if got := s.Stats().InlineReplies; got != n {
		t.Fatalf("InlineReplies = %d after %d requests answered at once, want %d", got, n, n)
	}
	c.send(append(reqFrame(&kmsg.MetadataRequest{Version: 9}, 100, nil), reqFrame(&kmsg.MetadataRequest{Version: 9}, 101, nil)...))
	eventually(t, 5*time.Second, "both requests served", func() bool { return len(d.served()) == n+2 })
	pending.Complete(kmsg.NewPtrMetadataResponse())
	for _, want := range []int32{100, 101} {
		if got := correlationOf(c.readFrame()); got != want {
			t.Fatalf("got correlation %d, want %d", got, want)
		}
	}
	if got := s.Stats().InlineReplies; got != n {
		t.Fatalf("InlineReplies = %d, want %d: the replies behind a pending one go through the writer", got, n)
	}
}

// Replies ready at once and replies completed later in random order, on
// one pipelined connection: the wire carries every reply once, in request
// order, whichever goroutine writes it. Each burst of 100 requests starts
// on an idle connection with a reply ready at once (written by the
// reader), and a quarter of the others complete later (queued, with the
// ready ones behind them), so both paths are taken whatever the load.
func TestInlineAndQueuedRepliesKeepOrder(t *testing.T) {
	const n, burst = 2000, 100
	rng := rand.New(rand.NewPCG(1, 2))
	var mu sync.Mutex
	var completers sync.WaitGroup
	defer completers.Wait()
	d := &fakeDispatcher{versions: testVersions, handle: func(_ context.Context, req *Request) *Reply {
		mu.Lock()
		later, delay := rng.IntN(4) == 0, time.Duration(rng.IntN(300))*time.Microsecond
		mu.Unlock()
		if !later || req.CorrelationID%burst == 0 {
			return Ready(req.Body.ResponseKind())
		}
		r := NewPendingReply()
		completers.Go(func() {
			time.Sleep(delay)
			r.Complete(req.Body.ResponseKind())
		})
		return r
	}}
	s := startServer(t, d, nil)
	c := dial(t, s)
	failed := make(chan string, 1)
	read := make(chan int32, n)
	go func() {
		for want := int32(0); want < n; want++ {
			b, err := c.tryReadFrame()
			if err != nil {
				failed <- err.Error()
				return
			}
			if got := correlationOf(b); got != want {
				failed <- fmt.Sprintf("got correlation %d, want %d", got, want)
				return
			}
			read <- want
		}
	}()
	for corr := int32(0); corr < n; corr += burst {
		var in []byte
		for k := corr; k < corr+burst; k++ {
			in = append(in, reqFrame(&kmsg.MetadataRequest{Version: 9}, k, nil)...)
		}
		c.send(in)
		// The next burst goes once this one is answered: it starts on an
		// idle connection.
		for got := int32(-1); got < corr+burst-1; {
			select {
			case got = <-read:
			case msg := <-failed:
				t.Fatal(msg)
			case <-time.After(30 * time.Second):
				t.Fatalf("burst at %d not answered within 30 s", corr)
			}
		}
	}
	st := s.Stats()
	if st.InlineReplies == 0 || st.InlineReplies >= n {
		t.Fatalf("InlineReplies = %d of %d: want both paths taken", st.InlineReplies, n)
	}
}
