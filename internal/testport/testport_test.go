package testport

import (
	"net"
	"strconv"
	"testing"
)

func TestAddrIsFreeAndBelowTheEphemeralRange(t *testing.T) {
	seen := map[string]bool{}
	for range 20 {
		addr := Addr(t)
		host, port, err := net.SplitHostPort(addr)
		if err != nil {
			t.Fatal(err)
		}
		p, _ := strconv.Atoi(port)
		if host != "127.0.0.1" || p < Low || p >= High {
			t.Fatalf("Addr gave %s, want 127.0.0.1 and a port in [%d, %d)", addr, Low, High)
		}
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			t.Fatalf("Addr gave %s, which does not bind: %v", addr, err)
		}
		ln.Close()
		seen[addr] = true
	}
	if len(seen) < 10 {
		t.Fatalf("20 calls gave only %d different addresses", len(seen))
	}
}

func TestRunIsFreeAndBelowTheEphemeralRange(t *testing.T) {
	base := Run(t, 5)
	if base < Low || base+5 > High {
		t.Fatalf("run %d..%d outside [%d, %d)", base, base+4, Low, High)
	}
	for p := base; p < base+5; p++ {
		ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
		if err != nil {
			t.Fatalf("port %d of the run does not bind: %v", p, err)
		}
		ln.Close()
	}
}
