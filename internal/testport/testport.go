package testport

import (
	"math/rand/v2"
	"net"
	"strconv"
	"testing"
)

// Ports come from [Low, High): below Linux's ephemeral range.
const (
	Low  = 20000
	High = 32000
)

// Addr returns a 127.0.0.1 address whose port was free a moment ago and
// is not one the kernel gives to outgoing connections.
func Addr(tb testing.TB) string {
	tb.Helper()
	for range 100 {
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(Low+rand.IntN(High-Low)))
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			continue
		}
		ln.Close()
		return addr
	}
	tb.Fatalf("testport: no free port in [%d, %d) after 100 tries", Low, High)
	return ""
}

// Run returns the first of n consecutive loopback ports that were free a
// moment ago, all in [Low, High) (a cluster's nodes listen on a run).
func Run(tb testing.TB, n int) int {
	tb.Helper()
	for range 100 {
		base := Low + rand.IntN(High-Low-n)
		var open []net.Listener
		ok := true
		for p := base; p < base+n; p++ {
			ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
			if err != nil {
				ok = false
				break
			}
			open = append(open, ln)
		}
		for _, ln := range open {
			ln.Close()
		}
		if ok {
			return base
		}
	}
	tb.Fatalf("testport: no %d consecutive free ports in [%d, %d) after 100 tries", n, Low, High)
	return 0
}
