package server

import (
	"encoding/binary"
	"fmt"
	"io"
	"slices"
)

// DefaultMaxRequestSize is Kafka's socket.request.max.bytes default.
const DefaultMaxRequestSize = 104857600

// frameChunk is how much of a frame is allocated before its bytes arrive.
// A frame up to this size (a producer's max.request.size default, so
// nearly every produce request) is allocated once at its exact size; a
// larger one grows as its bytes arrive, so a peer that announces a huge
// frame and sends little costs at most this much. (At 64 KiB, a 97 KiB
// produce request allocated 64 KiB, then 100 KiB, and copied 64 KiB.)
const frameChunk = 1 << 20

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
	var prefix [4]byte
	if _, err := io.ReadFull(r, prefix[:]); err != nil {
		return nil, err
	}
	size := int32(binary.BigEndian.Uint32(prefix[:]))
	if size < minFrameSize || size > max {
		return nil, &frameSizeError{size: size, max: max}
	}
	n := int(size)
	buf := make([]byte, 0, min(n, frameChunk))
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
