package server

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// runServer starts Serve with ctx and returns its result channel; the test
// stops the server itself.
func runServer(t *testing.T, ctx context.Context, d Dispatcher) (*Server, <-chan error) {
	t.Helper()
	s, err := New(Config{Addr: "127.0.0.1:0", Dispatcher: d, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx) }()
	return s, done
}

func wait[T any](t *testing.T, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(5 * time.Second):
		t.Fatal("timed out")
		panic("unreachable")
	}
}

// Shutdown waits for the reply in flight, writes it, then closes.
func TestShutdownAnswersInFlight(t *testing.T) {
	d := newPendingDispatcher()
	s, served := runServer(t, context.Background(), d)
	c := dial(t, s)
	c.send(reqFrame(&kmsg.MetadataRequest{Version: 9}, 7, nil))
	eventually(t, 5*time.Second, "request served", func() bool { return d.count() == 1 })

	shut := make(chan error, 1)
	go func() { shut <- s.Shutdown(context.Background()) }()
	eventually(t, 5*time.Second, "the listener to close", func() bool {
		nc, err := net.Dial("tcp", s.Addr().String())
		if err == nil {
			nc.Close()
		}
		return err != nil
	})
	select {
	case err := <-shut:
		t.Fatalf("Shutdown returned %v with a reply in flight", err)
	default:
	}

	d.complete(0)
	if got := correlationOf(c.readFrame()); got != 7 {
		t.Fatalf("correlation %d", got)
	}
	c.expectClosed()
	if err := wait(t, shut); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if err := wait(t, served); err != nil {
		t.Fatalf("Serve: %v", err)
	}
	if d.ctxs[0].Err() == nil {
		t.Fatal("the request context outlived the connection")
	}
}

// When Shutdown's context ends first, pending replies are dropped and the
// connections torn down.
func TestShutdownDeadline(t *testing.T) {
	d := newPendingDispatcher()
	s, served := runServer(t, context.Background(), d)
	c := dial(t, s)
	c.send(reqFrame(&kmsg.MetadataRequest{Version: 9}, 7, nil))
	eventually(t, 5*time.Second, "request served", func() bool { return d.count() == 1 })

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := s.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Shutdown: %v", err)
	}
	// Shutdown waited for the connection goroutines.
	if st := s.Stats(); st.ConnectionsClosed != 1 {
		t.Fatalf("stats after Shutdown: %+v", st)
	}
	c.expectClosed()
	if d.ctxs[0].Err() == nil {
		t.Fatal("the request context was not cancelled")
	}
	if err := wait(t, served); err != nil {
		t.Fatalf("Serve: %v", err)
	}
	if d.pending[0].Complete(kmsg.NewPtrMetadataResponse()) != true {
		t.Fatal("completing an abandoned reply still counts as its completion")
	}
}

// Cancelling Serve's context is a hard stop.
func TestServeContextCancel(t *testing.T) {
	d := newPendingDispatcher()
	ctx, cancel := context.WithCancel(context.Background())
	s, served := runServer(t, ctx, d)
	c := dial(t, s)
	c.send(reqFrame(&kmsg.MetadataRequest{Version: 9}, 7, nil))
	eventually(t, 5*time.Second, "request served", func() bool { return d.count() == 1 })
	cancel()
	if err := wait(t, served); !errors.Is(err, context.Canceled) {
		t.Fatalf("Serve: %v", err)
	}
	if st := s.Stats(); st.ConnectionsClosed != 1 {
		t.Fatalf("Serve returned before its connections: %+v", st)
	}
	c.expectClosed()
	if err := s.Shutdown(context.Background()); err != nil {
		t.Fatalf("Shutdown after Serve: %v", err)
	}
	if err := s.Serve(context.Background()); err == nil {
		t.Fatal("a second Serve must fail")
	}
}

// Many connections with traffic, shut down in the middle: every goroutine
// is joined and every reply that was read is either written or the
// connection closed.
func TestShutdownUnderLoad(t *testing.T) {
	d := &fakeDispatcher{versions: testVersions}
	s, served := runServer(t, context.Background(), d)
	const conns, perConn = 8, 50
	var in []byte
	for corr := int32(0); corr < perConn; corr++ {
		in = append(in, reqFrame(&kmsg.MetadataRequest{Version: 12}, corr, nil)...)
	}
	results := make(chan error, conns)
	for range conns {
		c := dial(t, s)
		go func() {
			if _, err := c.nc.Write(in); err != nil {
				results <- nil // closed under us: fine
				return
			}
			for want := int32(0); want < perConn; want++ {
				b, err := c.tryReadFrame()
				if err != nil {
					results <- nil // closed after some replies: fine
					return
				}
				if correlationOf(b) != want {
					results <- errors.New("replies out of order")
					return
				}
			}
			results <- nil
		}()
	}
	eventually(t, 5*time.Second, "some traffic", func() bool { return len(d.served()) > 0 })
	if err := s.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	for range conns {
		if err := wait(t, results); err != nil {
			t.Fatal(err)
		}
	}
	if err := wait(t, served); err != nil {
		t.Fatal(err)
	}
	if st := s.Stats(); st.ConnectionsOpened != st.ConnectionsClosed {
		t.Fatalf("stats %+v", st)
	}
}
