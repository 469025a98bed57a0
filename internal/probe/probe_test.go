package probe

import (
	"context"
	"net"
	"testing"
	"time"
)

// An address with a listener is Accepted, the same address once it is
// closed Refused, and an attempt that fails otherwise (here, cancelled)
// Unknown.
func TestDial(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ctx := context.Background()
	if got := Dial(ctx, addr, time.Second); got != Accepted {
		t.Fatalf("listening: %v", got)
	}
	ln.Close()
	if got := Dial(ctx, addr, time.Second); got != Refused {
		t.Fatalf("closed: %v", got)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if got := Dial(cancelled, addr, time.Second); got != Unknown {
		t.Fatalf("cancelled: %v", got)
	}
}

// A held connection ends when the listener's side closes it, not before;
// one to nothing is refused.
func TestHold(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err == nil {
			accepted <- c
		}
	}()
	ctx := context.Background()
	c, got := Hold(ctx, ln.Addr().String(), time.Second)
	if got != Accepted || c == nil {
		t.Fatalf("hold: %v", got)
	}
	peer := <-accepted
	time.Sleep(20 * time.Millisecond)
	if c.Ended() {
		t.Fatal("ended while the peer holds it")
	}
	peer.Close()
	select {
	case <-c.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("not ended after the peer closed it")
	}
	c.Close()
	addr := ln.Addr().String()
	ln.Close()
	if c, got := Hold(ctx, addr, time.Second); got != Refused || c != nil {
		t.Fatalf("hold with nothing listening: %v", got)
	}
}
