package server

import (
	"io"
	"os"
)

// copyFileRange is the portable path for a file range: read it with
// pread(2) through an io.SectionReader and write it. The writer is wrapped
// so that a *net.TCPConn's ReadFrom does not pick its own path.
func copyFileRange(w io.Writer, f *os.File, off, n int64) (int64, bool, error) {
	written, err := io.Copy(struct{ io.Writer }{w}, io.NewSectionReader(f, off, n))
	if err == nil && written < n {
		err = io.ErrUnexpectedEOF
	}
	return written, false, err
}
