//go:build !linux

package testfs

import (
	"runtime"
	"testing"
)

// Small skips: a small file system needs Linux tmpfs.
func Small(t testing.TB, size int64) string {
	t.Skipf("testfs: a small file system needs Linux tmpfs (running on %s)", runtime.GOOS)
	return ""
}

// MountAt skips: a small file system needs Linux tmpfs.
func MountAt(t testing.TB, dir string, size int64) {
	t.Skipf("testfs: a small file system needs Linux tmpfs (running on %s)", runtime.GOOS)
}

// Resize is Small's companion; never reached.
func Resize(t testing.TB, dir string, size int64) { t.Skip("testfs: no tmpfs") }

// Free is Small's companion; never reached.
func Free(t testing.TB, dir string) int64 { t.Skip("testfs: no tmpfs"); return 0 }
