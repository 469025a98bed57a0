//go:build unix

package kraft

import (
	"errors"
	"net"
	"syscall"
)

// idleConnAlive reports whether an idle connection is still open: the
// peer sends nothing unasked, so readable bytes or an end of stream mean
// it closed (a controller that died or restarted). Checking before reuse
// keeps a request from going to a dead socket, where its failure would
// be indistinguishable from a request lost mid-way.
func idleConnAlive(nc net.Conn) bool {
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return true
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	alive := true
	var buf [1]byte
	err = rc.Read(func(fd uintptr) bool {
		n, _, err := syscall.Recvfrom(int(fd), buf[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		switch {
		case n > 0 || n == 0 && err == nil:
			alive = false // unexpected bytes, or end of stream
		case err != nil && !errors.Is(err, syscall.EAGAIN) && !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR):
			alive = false
		}
		return true
	})
	return err == nil && alive
}
