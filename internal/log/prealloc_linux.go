//go:build linux

package log

import (
	"os"
	"syscall"
)

// fallocKeepSize is FALLOC_FL_KEEP_SIZE: allocate blocks without moving
// the end of the file.
const fallocKeepSize = 0x1

// reserveBlocks allocates the file's blocks in [off, off+n) without
// changing its size, so that later writes there find their blocks
// allocated. Filesystems without fallocate(2) return an error.
func reserveBlocks(f *os.File, off, n int64) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
	if err := rc.Control(func(fd uintptr) {
		for {
			ferr = syscall.Fallocate(int(fd), fallocKeepSize, off, n)
			if ferr != syscall.EINTR {
				return
			}
		}
	}); err != nil {
		return err
	}
	return ferr
}
