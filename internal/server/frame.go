package server

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"math/bits"
	"slices"
	"sync"
)

// DefaultMaxRequestSize is Kafka's socket.request.max.bytes default.
const DefaultMaxRequestSize = 104857600

// frameChunk is how much of a frame is allocated before its bytes arrive.
// A frame up to this size (a producer's max.request.size default, so
// nearly every produce request) is allocated once at its exact size; a
// larger one grows as its bytes arrive, so a peer that announces a huge
// frame and sends little costs at most this much. (At 64 KiB, a 97 KiB
// produce request allocated 64 KiB, then 100 KiB, and copied 64 KiB.)
const frameChunk = 1 << frameChunkShift

const frameChunkShift = 20

// frameSizeError is a length prefix outside [minFrameSize, max].
type frameSizeError struct {
	size, max int32
}

func (e *frameSizeError) Error() string {
	return fmt.Sprintf("server: frame size %d outside [%d, %d]", e.size, minFrameSize, e.max)
}

// readFrame reads one size-prefixed frame. The buffer grows as bytes
// arrive, doubling, so memory stays within twice what the peer really
// sent. A fresh buffer is returned every time: decoded requests alias it.
func readFrame(r io.Reader, max int32) ([]byte, error) {
	return readFrameInto(r, max, nil)
}

// readFrameInto is readFrame reading into buf when the frame fits in its
// capacity.
func readFrameInto(r io.Reader, max int32, buf []byte) ([]byte, error) {
	var prefix [4]byte
	if _, err := io.ReadFull(r, prefix[:]); err != nil {
		return nil, err
	}
	size := int32(binary.BigEndian.Uint32(prefix[:]))
	if size < minFrameSize || size > max {
		return nil, &frameSizeError{size: size, max: max}
	}
	n := int(size)
	if cap(buf) >= n {
		buf = buf[:n]
		if _, err := io.ReadFull(r, buf); err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return nil, err
		}
		return buf, nil
	}
	buf = make([]byte, 0, min(n, frameChunk))
	for len(buf) < n {
		if len(buf) == cap(buf) {
			buf = slices.Grow(buf, min(n-len(buf), len(buf)))
		}
		end := min(n, cap(buf))
		if _, err := io.ReadFull(r, buf[len(buf):end]); err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return nil, err
		}
		buf = buf[:end]
	}
	return buf, nil
}

// Frame buffers of reusable keys come in power-of-two classes from
// 1<<minPooledShift bytes up to frameChunk.
const minPooledShift = 12

// framePool holds frame buffers of requests whose keys the dispatcher
// lets the server reuse (FrameReuser). Buffers go back once Serve has
// returned; idle connections hold none.
type framePool struct {
	classes [frameChunkShift - minPooledShift + 1]sync.Pool // of *[]byte
}

// class is the pool class of an n-byte frame, -1 above frameChunk.
func frameClass(n int) int {
	if n > frameChunk {
		return -1
	}
	return max(bits.Len(uint(n-1)), minPooledShift) - minPooledShift
}

// get returns a buffer able to hold an n-byte frame, or nil when n is
// above frameChunk.
func (p *framePool) get(n int) []byte {
	c := frameClass(n)
	if c < 0 {
		return nil
	}
	if b, ok := p.classes[c].Get().(*[]byte); ok {
		return *b
	}
	return make([]byte, 0, 1<<(c+minPooledShift))
}

// put returns a buffer from get.
func (p *framePool) put(b []byte) {
	c := frameClass(cap(b))
	if c < 0 || cap(b) != 1<<(c+minPooledShift) {
		return
	}
	b = b[:0]
	p.classes[c].Put(&b)
}

// peekFrameKey returns the size and API key of the next frame without
// consuming them, or ok false when they are not yet readable in full.
func peekFrameKey(br *bufio.Reader) (size int32, key int16, ok bool) {
	b, err := br.Peek(6)
	if err != nil {
		return 0, 0, false
	}
	return int32(binary.BigEndian.Uint32(b)), int16(binary.BigEndian.Uint16(b[4:])), true
}
