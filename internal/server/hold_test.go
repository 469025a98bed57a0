package server

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// answer serves a request by recording its name and answering at once.
func answer(served *[]string, name string) func(context.Context) *Reply {
	return func(context.Context) *Reply {
		*served = append(*served, name)
		resp := kmsg.NewPtrMetadataResponse()
		resp.ClusterID = &name
		return Ready(resp)
	}
}

func clusterOf(t *testing.T, r *Reply) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, ok := r.Response(ctx)
	if !ok {
		t.Fatalf("reply closed the connection or never completed")
	}
	return *resp.(*kmsg.MetadataResponse).ClusterID
}

// TestHoldServesInArrivalOrderOnOpen: held requests wait (their replies
// pending, their frames kept), are served in the order they came once the
// hold opens, requests arriving while it serves them wait behind them,
// and once open a request is served at once.
func TestHoldServesInArrivalOrderOnOpen(t *testing.T) {
	h := NewHold(10)
	var served []string
	ctx := context.Background()
	a := h.Serve(ctx, answer(&served, "a"))
	var late *Reply
	b := h.Serve(ctx, func(ctx context.Context) *Reply {
		// Arrives while Open serves b: it must wait behind c.
		late = h.Serve(ctx, answer(&served, "late"))
		return answer(&served, "b")(ctx)
	})
	c := h.Serve(ctx, answer(&served, "c"))
	if len(served) != 0 || a.ready() || b.ready() || c.ready() {
		t.Fatalf("before Open: served %v, replies ready %v %v %v", served, a.ready(), b.ready(), c.ready())
	}
	if !a.holdsFrame || !c.holdsFrame {
		t.Error("a held reply does not keep its request's frame")
	}
	if h.Held() != 3 || h.Opened() {
		t.Fatalf("held %d, opened %v; want 3, false", h.Held(), h.Opened())
	}
	h.Open()
	if want := []string{"a", "b", "c", "late"}; !slices.Equal(served, want) {
		t.Errorf("served %v, want %v", served, want)
	}
	for want, r := range map[string]*Reply{"a": a, "b": b, "c": c, "late": late} {
		if got := clusterOf(t, r); got != want {
			t.Errorf("reply of %s carries %s", want, got)
		}
	}
	now := h.Serve(ctx, answer(&served, "now"))
	if !now.ready() || now.holdsFrame || clusterOf(t, now) != "now" {
		t.Error("after Open, a request was not served at once")
	}
	h.Close()
}

// TestHoldLimitsAndClose: past max a request's connection is closed; a
// request whose connection ended while held is not served; Close closes
// the held ones' connections and refuses later requests.
func TestHoldLimitsAndClose(t *testing.T) {
	var served []string
	h := NewHold(2)
	gone, cancel := context.WithCancel(context.Background())
	first := h.Serve(gone, answer(&served, "gone"))
	second := h.Serve(context.Background(), answer(&served, "kept"))
	over := h.Serve(context.Background(), answer(&served, "over"))
	if !over.ready() || !over.closes() {
		t.Error("a request past the limit was not refused with a close")
	}
	cancel()
	h.Open()
	if !first.ready() || !first.closes() {
		t.Error("a request whose connection ended was not closed")
	}
	if clusterOf(t, second) != "kept" || !slices.Equal(served, []string{"kept"}) {
		t.Errorf("served %v, want [kept]", served)
	}

	h2 := NewHold(5)
	held := h2.Serve(context.Background(), answer(&served, "never"))
	h2.Close()
	if !held.ready() || !held.closes() {
		t.Error("Close did not close a held request's connection")
	}
	if r := h2.Serve(context.Background(), answer(&served, "after")); !r.closes() {
		t.Error("a request after Close was not refused")
	}
	h2.Open() // after Close: serves nothing
	if slices.Contains(served, "never") || slices.Contains(served, "after") {
		t.Errorf("served %v after Close", served)
	}
}

// TestHoldForwardsPendingReplies: a held request whose reply completes
// later (a long poll) completes the held reply then, and Close waits
// for it.
func TestHoldForwardsPendingReplies(t *testing.T) {
	h := NewHold(1)
	inner := NewPendingReply()
	out := h.Serve(context.Background(), func(context.Context) *Reply { return inner })
	h.Open()
	if out.ready() {
		t.Fatal("the held reply completed before the served one")
	}
	name := "later"
	resp := kmsg.NewPtrMetadataResponse()
	resp.ClusterID = &name
	inner.Complete(resp)
	if got := clusterOf(t, out); got != name {
		t.Errorf("forwarded %q", got)
	}
	h.Close()
}

// holdingDispatcher reuses produce frames and holds every produce until
// its Hold opens; it records the records each request had when served.
type holdingDispatcher struct {
	hold *Hold
	mu   sync.Mutex
	seen map[string][]byte // "conn/correlation id" -> a copy of the records when served
}

func (d *holdingDispatcher) Versions() []APIVersionRange { return testVersions }

func (d *holdingDispatcher) ReusesFrame(key int16) bool { return key == 0 }

func (d *holdingDispatcher) Serve(ctx context.Context, req *Request) *Reply {
	return d.hold.Serve(ctx, func(context.Context) *Reply {
		recs := req.Body.(*kmsg.ProduceRequest).Topics[0].Partitions[0].Records
		d.mu.Lock()
		d.seen[fmt.Sprintf("%d/%d", req.Conn.ID, req.CorrelationID)] = bytes.Clone(recs)
		d.mu.Unlock()
		return Ready(req.Body.ResponseKind())
	})
}

// TestHeldRequestsKeepTheirFrames: a held produce is served after Serve
// returned, so its pooled frame must not go back to the pool: frames
// read meanwhile (same size class, other connections) would overwrite
// its records.
func TestHeldRequestsKeepTheirFrames(t *testing.T) {
	d := &holdingDispatcher{hold: NewHold(100), seen: map[string][]byte{}}
	s := startServer(t, d, nil)
	const conns, each = 6, 2
	var cs []*rawConn
	for i := range conns {
		c := dial(t, s)
		cs = append(cs, c)
		var in []byte
		for j := range each {
			in = append(in, produceFrame(int32(j), byte('a'+i*each+j), 70_000)...)
		}
		c.send(in)
	}
	deadline := time.Now().Add(10 * time.Second)
	for d.hold.Held() < conns*each {
		if time.Now().After(deadline) {
			t.Fatalf("%d requests held, want %d", d.hold.Held(), conns*each)
		}
		time.Sleep(5 * time.Millisecond)
	}
	d.hold.Open()
	for _, c := range cs {
		for range each {
			c.readFrame()
		}
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.seen) != conns*each {
		t.Fatalf("served %d requests, want %d", len(d.seen), conns*each)
	}
	fills := map[byte]bool{}
	for k, recs := range d.seen {
		if len(recs) != 70_000 || !bytes.Equal(recs, bytes.Repeat(recs[:1], 70_000)) {
			t.Fatalf("request %s: records overwritten", k)
		}
		fills[recs[0]] = true
	}
	if len(fills) != conns*each {
		t.Errorf("%d distinct records among %d requests: a held frame was reused", len(fills), conns*each)
	}
	d.hold.Close()
}

// TestHoldCloseDoesNotWaitForPendingReplies: Close gives up on a served
// request whose reply never completes (what would complete it is shutting
// down too) and closes its connection, rather than waiting for ever.
func TestHoldCloseDoesNotWaitForPendingReplies(t *testing.T) {
	h := NewHold(1)
	never := NewPendingReply()
	out := h.Serve(context.Background(), func(context.Context) *Reply { return never })
	h.Open()
	closed := make(chan struct{})
	go func() { h.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("Close waits for a reply that never completes")
	}
	if !out.ready() || !out.closes() {
		t.Error("the pending request's connection was not closed")
	}
	h.Close() // a second Close is harmless
}

// TestHoldWaiting: how many requests a hold keeps and how long the first
// of them has waited, for the log line a broker writes when it opens.
func TestHoldWaiting(t *testing.T) {
	h := NewHold(10)
	if n, d := h.Waiting(); n != 0 || d != 0 {
		t.Fatalf("empty hold: %d waiting for %v", n, d)
	}
	serve := func(context.Context) *Reply { return CloseConnection() }
	h.Serve(context.Background(), serve)
	time.Sleep(20 * time.Millisecond)
	h.Serve(context.Background(), serve)
	n, d := h.Waiting()
	if n != 2 || d < 20*time.Millisecond {
		t.Fatalf("%d waiting for %v, want 2 for at least 20ms (the first's wait)", n, d)
	}
	h.Open()
	if n, d := h.Waiting(); n != 0 || d != 0 {
		t.Fatalf("after Open: %d waiting for %v", n, d)
	}
}
