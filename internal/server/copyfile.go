package server

import (
	"io"
	"os"
	"sync"
)

// copyChunk is how much of a file range one read takes on the copying
// path. Over TLS each write becomes four 16 KiB records.
const copyChunk = 64 << 10

var copyBufs = sync.Pool{New: func() any { b := make([]byte, copyChunk); return &b }}

// copyFileRange is the path for a file range when sendfile cannot be used
// (a TLS connection, a platform without it): pread(2) into a pooled
// buffer, then write. The file's position is never moved.
func copyFileRange(w io.Writer, f *os.File, off, n int64) (int64, bool, error) {
	bp := copyBufs.Get().(*[]byte)
	defer copyBufs.Put(bp)
	buf := *bp
	var written int64
	for written < n {
		chunk := buf[:min(int64(len(buf)), n-written)]
		r, err := f.ReadAt(chunk, off+written)
		if r > 0 {
			m, werr := w.Write(chunk[:r])
			written += int64(m)
			if werr != nil {
				return written, false, werr
			}
		}
		if err != nil {
			if err == io.EOF && written < n {
				err = io.ErrUnexpectedEOF
			}
			if written < n {
				return written, false, err
			}
		}
	}
	return written, false, nil
}
