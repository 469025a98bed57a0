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

// Conn is a connection held open, idle, to learn when the process at the
// other end goes: the peer sends nothing unasked, so the connection ends
// (Done) only when it closes it, its process exits or the network
// breaks it. One held connection replaces a probe every few hundred
// milliseconds, each of them a connection the peer accepts and closes.
type Conn struct {
	nc   net.Conn
	done chan struct{}
}

// Hold dials addr within timeout and holds the connection; on failure it
// returns nil and what the attempt said.
func Hold(ctx context.Context, addr string, timeout time.Duration) (*Conn, Outcome) {
	d := net.Dialer{Timeout: timeout}
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		if errors.Is(err, syscall.ECONNREFUSED) {
			return nil, Refused
		}
		return nil, Unknown
	}
	c := &Conn{nc: nc, done: make(chan struct{})}
	go func() {
		defer close(c.done)
		var buf [512]byte
		for {
			if _, err := nc.Read(buf[:]); err != nil {
				return
			}
		}
	}()
	return c, Accepted
}

// Done is closed once the connection has ended.
func (c *Conn) Done() <-chan struct{} { return c.done }

// Ended reports whether the connection has ended.
func (c *Conn) Ended() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// Close closes the connection and waits for its reader.
func (c *Conn) Close() {
	c.nc.Close()
	<-c.done
}
