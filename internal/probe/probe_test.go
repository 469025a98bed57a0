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
