package log

import (
	"os"

	"golang.org/x/sys/unix"
)

const haveSyncFS = true

// syncFS flushes the whole filesystem dir is on to disk (syncfs(2)): the
// data and metadata every file on it holds in memory, in one journal
// commit, and reports a write-back error any of them met.
func syncFS(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := unix.Syncfs(int(f.Fd())); err != nil {
		return &os.PathError{Op: "syncfs", Path: dir, Err: err}
	}
	return nil
}
