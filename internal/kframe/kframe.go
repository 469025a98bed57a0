// Package kframe is Kafka's framing as both ends of weir read it: a
// response frame (a 4-byte size, the correlation id, the header's tagged
// fields, the body) read and decoded by the client's connections
// (client/internal/wire) and the inter-broker and controller clients
// (internal/kraft), and the tagged-field section the server skips in
// request headers (internal/server). Request encoding is kmsg's
// RequestFormatter and needs nothing here.
//
// Everything here reads hostile bytes: sizes are checked against a bound
// before anything is allocated, varints against 32 bits, and nothing
// panics (fuzzed). It holds no state and starts no goroutine.
package kframe

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Errors a frame reader wraps.
var (
	// ErrSize is a frame whose size is below its header or above the
	// reader's bound.
	ErrSize = errors.New("kframe: frame size out of range")
	// ErrTags is a tagged-field section that runs past its bytes or
	// counts past 32 bits.
	ErrTags = errors.New("kframe: malformed tagged fields")
)

// ReadResponse reads one response frame from r: the size (at least the
// 4-byte correlation id, at most max), then the frame. It returns the
// correlation id and the rest of the frame, which DecodeResponse reads.
// It allocates the declared size only once it passed the bound.
func ReadResponse(r io.Reader, max int32) (correlationID int32, rest []byte, err error) {
	var size [4]byte
	if _, err := io.ReadFull(r, size[:]); err != nil {
		return 0, nil, err
	}
	n := int32(binary.BigEndian.Uint32(size[:]))
	if n < 4 || n > max {
		return 0, nil, fmt.Errorf("%w: %d bytes, at most %d", ErrSize, n, max)
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(r, b); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return 0, nil, err
	}
	return int32(binary.BigEndian.Uint32(b)), b[4:], nil
}

// DecodeResponse decodes the answer to req from a response frame's bytes
// after the correlation id: a flexible response's header carries a
// tagged-field section first, except ApiVersions', whose header stays v0
// so any client can read it. A broker answers an ApiVersions version it
// does not know in the v0 format (KIP-511), which is read as such.
func DecodeResponse(req kmsg.Request, b []byte) (kmsg.Response, error) {
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	if resp.IsFlexible() && req.Key() != 18 {
		var err error
		if b, err = SkipTags(b); err != nil {
			return nil, err
		}
	}
	if err := resp.ReadFrom(b); err != nil {
		if req.Key() != 18 {
			return nil, fmt.Errorf("kframe: decode %s v%d: %w", kmsg.NameForKey(req.Key()), req.GetVersion(), err)
		}
		resp.SetVersion(0)
		if err0 := resp.ReadFrom(b); err0 != nil {
			return nil, fmt.Errorf("kframe: decode ApiVersions: %w", err)
		}
	}
	return resp, nil
}

// SkipTags skips a tagged-field section: a count, then per field a tag, a
// size and size bytes, all unsigned varints of at most 32 bits. It stops
// at the first field that does not fit, so a hostile count costs nothing.
func SkipTags(b []byte) ([]byte, error) {
	count, b, ok := Uvarint(b)
	if !ok {
		return nil, ErrTags
	}
	for ; count > 0; count-- {
		var size uint64
		if _, b, ok = Uvarint(b); !ok {
			return nil, ErrTags
		}
		if size, b, ok = Uvarint(b); !ok || size > uint64(len(b)) {
			return nil, ErrTags
		}
		b = b[size:]
	}
	return b, nil
}

// Uvarint reads an unsigned varint that fits in 32 bits, as Kafka encodes
// them, and returns it with the bytes after it.
func Uvarint(b []byte) (uint64, []byte, bool) {
	v, n := binary.Uvarint(b)
	if n <= 0 || v > math.MaxUint32 {
		return 0, nil, false
	}
	return v, b[n:], true
}
