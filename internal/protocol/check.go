package protocol

import (
	"encoding/binary"
	"errors"
	"fmt"
)

var (
	// ErrUnknownRequest is returned for a key or version with no schema.
	ErrUnknownRequest = errors.New("protocol: no schema for this api key and version")
	// ErrMalformed is wrapped by every error about the body's bytes.
	ErrMalformed = errors.New("protocol: malformed request body")
)

// Check walks body, a request body of the given API key and version (the
// bytes after the request header), with the request's schema. It returns
// nil when the body is well formed, and an error wrapping ErrMalformed at
// the first length, count or tag that cannot fit in the bytes after it,
// the first null where the schema allows none, or the first field cut
// short. Bytes after the body's last field are allowed, as kmsg allows
// them.
//
// Check reads each byte of body at most a bounded number of times,
// allocates nothing unless it fails, and never panics.
func Check(key, version int16, body []byte) error {
	_, err := check(key, version, body, nil)
	return err
}

// lengthKind says which kind of length a traced read was, for tests.
type lengthKind uint8

const (
	lenInt16   lengthKind = iota // string length
	lenInt32                     // bytes length or array count
	lenUvarint                   // compact length+1, tag count, tag size
	lenVarint                    // zigzag varint length or count
)

// tracer, when not nil, is told where each length or count was read: the
// offset of its first byte in the body and its encoding.
type tracer func(off int, k lengthKind)

// check is Check that also returns how many bytes follow the body's last
// field.
func check(key, version int16, body []byte, trace tracer) (rest int, err error) {
	if key < 0 || int(key) >= len(requests) {
		return 0, ErrUnknownRequest
	}
	if version < 0 || version > requests[key].max {
		return 0, ErrUnknownRequest
	}
	p := programFor(key)
	flex := version >= requests[key].flexFrom
	w := walker{b: body, size: cap(body), ops: p.ops, flex: flex, trace: trace}
	if err := w.run(p.roots[version]); err != nil {
		return 0, err
	}
	return len(w.b), nil
}

// walker runs a program over a body. b is what is left of the body; it is
// always a reslice from the start of the body's backing array, so the
// offset of b[0] in the body is size-cap(b), even while b is cut to a
// tagged field's bytes.
type walker struct {
	b     []byte
	size  int
	ops   []op
	flex  bool
	trace tracer
}

func (w *walker) off() int { return w.size - cap(w.b) }

func (w *walker) fail(what string, args ...any) error {
	return w.failAt(len(w.b), what, args...)
}

// failAt reports an error about what started when left bytes were left.
func (w *walker) failAt(left int, what string, args ...any) error {
	off := w.off() - (left - len(w.b))
	return fmt.Errorf("%w: %s at byte %d", ErrMalformed, fmt.Sprintf(what, args...), off)
}

// run walks the struct program starting at pc.
func (w *walker) run(pc uint32) error {
	for {
		o := &w.ops[pc]
		switch o.code {
		case opEnd:
			return nil
		case opTags:
			if len(w.b) > 0 && w.b[0] == 0 && w.trace == nil { // no tags, the common case
				w.b = w.b[1:]
				return nil
			}
			return w.tags(w.ops[pc+1 : pc+1+o.n])
		case opSkip:
			if int(o.n) > len(w.b) {
				return w.fail("truncated: %d bytes needed, %d left", o.n, len(w.b))
			}
			w.b = w.b[o.n:]
		default:
			if err := w.step(o); err != nil {
				return err
			}
		}
		pc++
	}
}

// tags reads a tag section: a count, then that many (tag, size, bytes). A
// known tag's bytes are walked as its field, within its size; unknown tags
// are skipped.
func (w *walker) tags(known []op) error {
	if w.trace != nil {
		w.trace(w.off(), lenUvarint)
	}
	start := len(w.b)
	n, err := w.uvarint()
	if err != nil {
		return err
	}
	if uint64(n) > uint64(len(w.b)) {
		return w.failAt(start, "tag count %d with %d bytes left", n, len(w.b))
	}
	for ; n > 0; n-- {
		tag, err := w.uvarint()
		if err != nil {
			return err
		}
		if w.trace != nil {
			w.trace(w.off(), lenUvarint)
		}
		at := len(w.b)
		size, err := w.uvarint()
		if err != nil {
			return err
		}
		if uint64(size) > uint64(len(w.b)) {
			return w.failAt(at, "tag %d size %d with %d bytes left", tag, size, len(w.b))
		}
		rest := w.b[size:]
		for i := range known {
			if known[i].tag == tag {
				w.b = w.b[:size]
				if err := w.step(&known[i]); err != nil {
					return err
				}
				break
			}
		}
		w.b = rest
	}
	return nil
}

// step walks one field.
func (w *walker) step(o *op) error {
	switch o.code {
	case opSkip:
		return w.skip(int(o.n))
	case opVarint:
		_, err := w.varint()
		return err
	case opVarlong:
		return w.varlong()
	case opString, opBytes:
		n, null, err := w.length(o)
		if err != nil || null {
			return err
		}
		w.b = w.b[n:] // length checked n against what is left
		return nil
	case opVarintBytes:
		if w.trace != nil {
			w.trace(w.off(), lenVarint)
		}
		start := len(w.b)
		n, err := w.varint()
		switch {
		case err != nil:
			return err
		case n == -1:
			return nil
		case n < 0:
			return w.failAt(start, "length %d", n)
		}
		return w.skip(int(n))
	case opArray, opVarintArray:
		return w.array(o)
	case opStruct:
		return w.run(o.body)
	case opNullableStruct:
		if len(w.b) < 1 {
			return w.fail("truncated")
		}
		switch int8(w.b[0]) {
		case -1:
			w.b = w.b[1:]
			return nil
		case 1:
			w.b = w.b[1:]
			return w.run(o.body)
		}
		return w.fail("nullable struct marker %d", int8(w.b[0]))
	}
	return w.fail("opcode %d", o.code) // not reached: the compiler makes no other ops here
}

// length reads a string's, bytes' or array's length: int16 for strings,
// int32 for bytes and arrays, a zigzag varint for varint arrays, and a
// uvarint length+1 for the rest when flexible. A null (negative, or 0 when
// compact) is an error unless the field is nullable at this version. n is
// at most the bytes left.
func (w *walker) length(o *op) (n int, null bool, err error) {
	var l int64
	start := len(w.b)
	switch {
	case o.code == opVarintArray:
		if w.trace != nil {
			w.trace(w.off(), lenVarint)
		}
		v, err := w.varint()
		if err != nil {
			return 0, false, err
		}
		l = int64(v)
	case w.flex:
		if w.trace != nil {
			w.trace(w.off(), lenUvarint)
		}
		u, err := w.uvarint()
		if err != nil {
			return 0, false, err
		}
		l = int64(u) - 1
	case o.code == opString:
		if w.trace != nil {
			w.trace(w.off(), lenInt16)
		}
		if len(w.b) < 2 {
			return 0, false, w.fail("truncated")
		}
		l = int64(int16(binary.BigEndian.Uint16(w.b)))
		w.b = w.b[2:]
	default:
		if w.trace != nil {
			w.trace(w.off(), lenInt32)
		}
		if len(w.b) < 4 {
			return 0, false, w.fail("truncated")
		}
		l = int64(int32(binary.BigEndian.Uint32(w.b)))
		w.b = w.b[4:]
	}
	if l < 0 {
		if !o.null {
			return 0, false, w.failAt(start, "null in a non-nullable field")
		}
		return 0, true, nil
	}
	if l > int64(len(w.b)) {
		return 0, false, w.failAt(start, "length %d with %d bytes left", l, len(w.b))
	}
	return int(l), false, nil
}

func (w *walker) array(o *op) error {
	n, null, err := w.length(o)
	if err != nil || null || n == 0 {
		return err
	}
	if o.n > 0 {
		if n > len(w.b)/int(o.n) {
			return w.fail("%d elements of %d bytes with %d bytes left", n, o.n, len(w.b))
		}
		w.b = w.b[n*int(o.n):]
		return nil
	}
	if o.min > 0 && n > len(w.b)/int(o.min) {
		return w.fail("%d elements of at least %d bytes with %d bytes left", n, o.min, len(w.b))
	}
	for range n {
		before := len(w.b)
		if err := w.run(o.body); err != nil {
			return err
		}
		if len(w.b) == before {
			// An element that took no bytes has no field at this
			// version: every other element is the same nothing.
			return nil
		}
	}
	return nil
}

func (w *walker) skip(n int) error {
	if n > len(w.b) {
		return w.fail("truncated: %d bytes needed, %d left", n, len(w.b))
	}
	w.b = w.b[n:]
	return nil
}

// uvarint reads an unsigned varint of at most 32 bits, in at most five
// bytes, the fifth holding only the top four bits: what kmsg accepts.
func (w *walker) uvarint() (uint32, error) {
	if len(w.b) > 0 && w.b[0] < 0x80 {
		x := uint32(w.b[0])
		w.b = w.b[1:]
		return x, nil
	}
	if len(w.b) > 1 && w.b[1] < 0x80 {
		x := uint32(w.b[0]&0x7f) | uint32(w.b[1])<<7
		w.b = w.b[2:]
		return x, nil
	}
	var x uint32
	for i := range 5 {
		if i >= len(w.b) {
			return 0, w.fail("truncated varint")
		}
		c := w.b[i]
		if i == 4 && c > 0x0f {
			return 0, w.fail("varint overflows 32 bits")
		}
		x |= uint32(c&0x7f) << (7 * i)
		if c < 0x80 {
			w.b = w.b[i+1:]
			return x, nil
		}
	}
	return 0, w.fail("varint overflows 32 bits") // not reached: the fifth byte is < 0x80
}

// varint reads a zigzag-encoded 32-bit varint.
func (w *walker) varint() (int32, error) {
	u, err := w.uvarint()
	return int32(u>>1) ^ -int32(u&1), err
}

// varlong checks a zigzag-encoded 64-bit varint: at most ten bytes, the
// tenth holding only the top bit.
func (w *walker) varlong() error {
	for i := range 10 {
		if i >= len(w.b) {
			return w.fail("truncated varlong")
		}
		c := w.b[i]
		if i == 9 && c > 0x01 {
			return w.fail("varlong overflows 64 bits")
		}
		if c < 0x80 {
			w.b = w.b[i+1:]
			return nil
		}
	}
	return w.fail("varlong overflows 64 bits") // not reached
}
