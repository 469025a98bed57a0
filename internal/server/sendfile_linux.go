//go:build linux

package server

import (
	"io"
	"os"
	"syscall"
)

// maxSendfileChunk keeps each sendfile(2) call's count well inside int32.
const maxSendfileChunk = 1 << 30

// sendFileRange writes n bytes of f from off to w. On a socket (anything
// with a SyscallConn, such as *net.TCPConn) it calls sendfile(2) with an
// explicit offset, so the bytes go from the page cache to the socket
// without passing through this process and f's position is untouched.
// (The standard library's TCPConn.ReadFrom also uses sendfile, but from
// the file's current position, which concurrent readers of one segment
// would race on.) zeroCopy reports which path was taken.
func sendFileRange(w io.Writer, f *os.File, off, n int64) (written int64, zeroCopy bool, err error) {
	sc, ok := w.(syscall.Conn)
	if !ok {
		return copyFileRange(w, f, off, n)
	}
	dst, err := sc.SyscallConn()
	if err != nil {
		return copyFileRange(w, f, off, n)
	}
	src, err := f.SyscallConn()
	if err != nil {
		return 0, false, err
	}
	var sendErr error
	ctlErr := src.Control(func(sfd uintptr) {
		writeErr := dst.Write(func(dfd uintptr) bool {
			for written < n {
				m, err := syscall.Sendfile(int(dfd), int(sfd), &off, int(min(n-written, maxSendfileChunk)))
				if m > 0 {
					written += int64(m)
				}
				switch {
				case err == syscall.EAGAIN:
					return false // wait until the socket is writable
				case err == syscall.EINTR:
				case err != nil:
					sendErr = err
					return true
				case m == 0:
					sendErr = io.ErrUnexpectedEOF // the file is shorter than the range
					return true
				}
			}
			return true
		})
		if sendErr == nil {
			sendErr = writeErr
		}
	})
	if sendErr == nil {
		sendErr = ctlErr
	}
	return written, true, sendErr
}
