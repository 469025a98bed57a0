//go:build unix

package server

import (
	"context"
	"errors"
	"net"
	"syscall"
	"testing"
	"time"
)

// peekClosed reports, without waiting, whether the peer of nc has closed
// its end: a non-blocking peek sees the end of stream or a reset.
func peekClosed(t *testing.T, nc net.Conn) bool {
	t.Helper()
	rc, err := nc.(*net.TCPConn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	var buf [1]byte
	err = rc.Read(func(fd uintptr) bool {
		n, _, err := syscall.Recvfrom(int(fd), buf[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		closed = n == 0 && err == nil || err != nil && !errors.Is(err, syscall.EAGAIN) && !errors.Is(err, syscall.EINTR)
		return true
	})
	if err != nil {
		t.Fatal(err)
	}
	return closed
}

// Once Shutdown returns, every connection's socket is closed, not just
// about to be: a peer that checks an idle connection right after the
// server stopped must find it closed rather than send a request into it.
func TestShutdownClosesSocketsBeforeReturning(t *testing.T) {
	const rounds, conns = 20, 16
	for r := range rounds {
		d := &fakeDispatcher{versions: testVersions}
		s, served := runServer(t, context.Background(), d)
		var cs []*rawConn
		for range conns {
			cs = append(cs, dial(t, s))
		}
		eventually(t, 5*time.Second, "connections accepted", func() bool {
			return s.Stats().ConnectionsOpened == conns
		})
		if err := s.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
		for i, c := range cs {
			if !peekClosed(t, c.nc) {
				t.Fatalf("round %d: connection %d still open after Shutdown returned", r, i)
			}
		}
		if err := wait(t, served); err != nil {
			t.Fatal(err)
		}
	}
}
