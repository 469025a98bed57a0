package probe

import (
	"context"
	"errors"
	"net"
	"syscall"
	"time"
)

// Outcome is what a connection attempt says about an address.
type Outcome int

const (
	// Unknown: the attempt timed out or failed otherwise.
	Unknown Outcome = iota
	// Accepted: a process listens.
	Accepted
	// Refused: nothing listens there.
	Refused
)

// Dial tries a TCP connection to addr within timeout and closes it at
// once.
func Dial(ctx context.Context, addr string, timeout time.Duration) Outcome {
	d := net.Dialer{Timeout: timeout}
	c, err := d.DialContext(ctx, "tcp", addr)
	switch {
	case err == nil:
		c.Close()
		return Accepted
	case errors.Is(err, syscall.ECONNREFUSED):
		return Refused
	}
	return Unknown
}
