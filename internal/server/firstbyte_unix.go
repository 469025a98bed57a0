//go:build unix

package server

import (
	"errors"
	"net"
	"syscall"
)

// awaitFirstByte blocks until the peer has sent something, without
// reading it (recv with MSG_PEEK), and reports true; false once the peer
// closed or reset the connection, the read deadline passed or the
// connection was closed. A connection without a file descriptor reports
// true at once.
func awaitFirstByte(nc net.Conn) bool {
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return true
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return true
	}
	got := false
	var buf [1]byte
	err = rc.Read(func(fd uintptr) bool {
		for {
			n, _, err := syscall.Recvfrom(int(fd), buf[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
			switch {
			case errors.Is(err, syscall.EINTR):
				continue
			case errors.Is(err, syscall.EAGAIN) || errors.Is(err, syscall.EWOULDBLOCK):
				return false // wait until readable
			}
			got = err == nil && n > 0 // n == 0: the peer closed
			return true
		}
	})
	return err == nil && got
}
