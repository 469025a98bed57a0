//go:build !linux

package server

import (
	"io"
	"os"
)

func sendFileRange(w io.Writer, f *os.File, off, n int64) (int64, bool, error) {
	return copyFileRange(w, f, off, n)
}
