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

// serverSocketsOpen lists which of the server's sockets are not closed: a
// closed net.Conn refuses Control.
func serverSocketsOpen(t *testing.T, ncs []net.Conn) []int {
	t.Helper()
	var open []int
	for i, nc := range ncs {
		rc, err := nc.(syscall.Conn).SyscallConn()
		if err != nil {
			t.Fatal(err)
		}
		if rc.Control(func(uintptr) {}) == nil {
			open = append(open, i)
		}
	}
	return open
}

// Once Shutdown returns, every connection's socket is closed, not just
// about to be: a peer that checks an idle connection right after the
// server stopped must find it closed rather than send a request into it.
// The server's side is checked at once; the peer's side within a second,
// the time the end-of-stream may take to cross loopback on a busy machine
// (the kernel may leave delivering it to ksoftirqd).
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
		var ncs []net.Conn
		s.mu.Lock()
		for c := range s.conns {
			ncs = append(ncs, c.nc)
		}
		s.mu.Unlock()
		if err := s.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
		if open := serverSocketsOpen(t, ncs); len(open) > 0 {
			t.Fatalf("round %d: server sockets %v still open after Shutdown returned", r, open)
		}
		for i, c := range cs {
			deadline := time.Now().Add(time.Second)
			for !peekClosed(t, c.nc) {
				if time.Now().After(deadline) {
					t.Fatalf("round %d: connection %d still open a second after Shutdown returned", r, i)
				}
				time.Sleep(time.Millisecond)
			}
		}
		if err := wait(t, served); err != nil {
			t.Fatal(err)
		}
	}
}
