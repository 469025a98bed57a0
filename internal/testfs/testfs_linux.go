//go:build linux

package testfs

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// Small mounts a tmpfs of size bytes on a new temporary directory and
// returns it; the mount goes when the test ends.
func Small(t testing.TB, size int64) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "small")
	MountAt(t, dir, size)
	return dir
}

// MountAt mounts a tmpfs of size bytes on dir (made if missing); the
// mount goes when the test ends.
func MountAt(t testing.TB, dir string, size int64) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, fmt.Sprintf("size=%d", size)); err != nil {
		t.Skipf("testfs: cannot mount a %d-byte tmpfs (%v): this test needs CAP_SYS_ADMIN", size, err)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, syscall.MNT_DETACH); err != nil {
			t.Errorf("testfs: unmount %s: %v", dir, err)
		}
	})
}

// Resize changes the size of a file system Small mounted, as freeing
// space (or losing it) would.
func Resize(t testing.TB, dir string, size int64) {
	t.Helper()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", syscall.MS_REMOUNT, fmt.Sprintf("size=%d", size)); err != nil {
		t.Fatalf("testfs: resize %s to %d bytes: %v", dir, size, err)
	}
}

// Free is the space left on the file system holding dir, in bytes.
func Free(t testing.TB, dir string) int64 {
	t.Helper()
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	return int64(st.Bavail) * int64(st.Bsize)
}
