package server

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestIdleConnectionsClosed: with connections.max.idle.ms (MaxIdle), a
// connection that sends nothing for that long is closed, and not
// before; one that keeps sending, or has a request being served for
// longer than MaxIdle, stays open; a negative MaxIdle closes nothing.
func TestIdleConnectionsClosed(t *testing.T) {
	const maxIdle = 150 * time.Millisecond
	release := make(chan struct{})
	d := &fakeDispatcher{versions: testVersions, handle: func(ctx context.Context, req *Request) *Reply {
		if req.Key == 1 { // Fetch: held until released, like a long poll
			select {
			case <-release:
			case <-ctx.Done():
			}
		}
		return Ready(req.Body.ResponseKind())
	}}
	s := startServer(t, d, func(c *Config) { c.MaxIdle = maxIdle })
	metadata := func(id int32) []byte { return reqFrame(&kmsg.MetadataRequest{Version: 9}, id, nil) }

	idle := dial(t, s)
	idle.send(metadata(1))
	idle.readFrame()
	lastReply := time.Now()

	busy := dial(t, s)
	waiting := dial(t, s)
	waiting.send(reqFrame(&kmsg.FetchRequest{Version: 12}, 1, nil))
	for i := range 12 { // 600 ms of a request every 50 ms
		busy.send(metadata(int32(i)))
		busy.readFrame()
		time.Sleep(50 * time.Millisecond)
	}
	close(release) // the held fetch is answered after 4x MaxIdle
	if got := correlationOf(waiting.readFrame()); got != 1 {
		t.Fatalf("held fetch answered with correlation id %d", got)
	}

	idle.expectClosed()
	if took := time.Since(lastReply); took < maxIdle {
		t.Fatalf("idle connection closed %v after its last reply, before MaxIdle %v", took, maxIdle)
	}
	busy.send(metadata(99))
	if got := correlationOf(busy.readFrame()); got != 99 {
		t.Fatalf("busy connection answered %d", got)
	}
	if st := s.Stats(); st.IdleClosed != 1 {
		t.Fatalf("IdleClosed %d, want 1 (only the idle connection)", st.IdleClosed)
	}

	never := startServer(t, d, func(c *Config) { c.MaxIdle = -1 })
	kept := dial(t, never)
	kept.send(metadata(1))
	kept.readFrame()
	time.Sleep(3 * maxIdle)
	kept.send(metadata(2))
	if got := correlationOf(kept.readFrame()); got != 2 {
		t.Fatalf("with MaxIdle < 0 the connection answered %d", got)
	}
}

func TestIdleSweepEvery(t *testing.T) {
	for _, c := range []struct{ maxIdle, want time.Duration }{
		{10 * time.Minute, 30 * time.Second},
		{time.Minute, 15 * time.Second},
		{100 * time.Millisecond, 25 * time.Millisecond},
		{time.Millisecond, 10 * time.Millisecond},
	} {
		if got := idleSweepEvery(c.maxIdle); got != c.want {
			t.Errorf("idleSweepEvery(%v) = %v, want %v", c.maxIdle, got, c.want)
		}
	}
}

// TestShutdownAsServeStarts: Shutdown called while Serve is starting
// (the idle sweep's goroutine among what it starts) returns, and Serve
// with it; under -race this catches a WaitGroup Add racing Shutdown's
// Wait.
func TestShutdownAsServeStarts(t *testing.T) {
	d := &fakeDispatcher{versions: testVersions}
	for range 50 {
		s, err := New(Config{Addr: "127.0.0.1:0", Dispatcher: d, Logger: testLogger(t)})
		if err != nil {
			t.Fatal(err)
		}
		served := make(chan error, 1)
		go func() { served <- s.Serve(context.Background()) }()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		if err := s.Shutdown(ctx); err != nil {
			t.Fatalf("shutdown: %v", err)
		}
		cancel()
		select {
		case <-served:
		case <-time.After(5 * time.Second):
			t.Fatal("Serve did not return after Shutdown")
		}
	}
}
