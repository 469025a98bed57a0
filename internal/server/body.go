package server

import (
	"os"
	"sync"
)

// Body is a pre-encoded response body: the bytes that follow the response
// header, made of byte slices and file ranges. The server writes the
// header, then the segments in order; file ranges go to the socket with
// sendfile(2) where the platform and connection allow it.
//
// The server reads file ranges with explicit offsets and never moves a
// file's position, so one *os.File may back many bodies at once.
type Body struct {
	segs []segment
	size int64

	// Release, if set, is called once when the server no longer needs
	// the body: after writing it, or when its connection is gone. The
	// files must stay open until then.
	Release func()
	once    sync.Once
}

type segment struct {
	buf  []byte
	file *os.File
	off  int64
	n    int64
}

// AppendBytes appends p; the server keeps p until Release.
func (b *Body) AppendBytes(p []byte) {
	if len(p) == 0 {
		return
	}
	b.segs = append(b.segs, segment{buf: p})
	b.size += int64(len(p))
}

// AppendFile appends n bytes of f starting at off.
func (b *Body) AppendFile(f *os.File, off, n int64) {
	if n <= 0 {
		return
	}
	b.segs = append(b.segs, segment{file: f, off: off, n: n})
	b.size += n
}

// Len is the body's size in bytes.
func (b *Body) Len() int64 { return b.size }

func (b *Body) release() {
	if b == nil || b.Release == nil {
		return
	}
	b.once.Do(b.Release)
}

// FlattenBody reads a body into memory, for tests that compare bodies
// with encodings.
func FlattenBody(t interface{ Fatal(...any) }, b *Body) []byte {
	var out []byte
	for _, s := range b.segs {
		if s.file == nil {
			out = append(out, s.buf...)
			continue
		}
		buf := make([]byte, s.n)
		if _, err := s.file.ReadAt(buf, s.off); err != nil {
			t.Fatal(err)
		}
		out = append(out, buf...)
	}
	return out
}
