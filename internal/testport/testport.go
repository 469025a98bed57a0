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
