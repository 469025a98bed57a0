package group

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// errShortRecord is the sticky error of a decoder that ran out of bytes or
// met a length that does not fit in what is left.
var errShortRecord = errors.New("group: record truncated or length out of range")

// encoder appends big-endian fixed-width fields. Strings and byte slices
// carry an int32 length; -1 marks null.
type encoder struct{ b []byte }

func (e *encoder) i8(v int8)   { e.b = append(e.b, byte(v)) }
func (e *encoder) i16(v int16) { e.b = binary.BigEndian.AppendUint16(e.b, uint16(v)) }
func (e *encoder) i32(v int32) { e.b = binary.BigEndian.AppendUint32(e.b, uint32(v)) }
func (e *encoder) i64(v int64) { e.b = binary.BigEndian.AppendUint64(e.b, uint64(v)) }
func (e *encoder) uuid(v topicID) {
	e.b = append(e.b, v[:]...)
}

func (e *encoder) str(s string) {
	e.i32(int32(len(s)))
	e.b = append(e.b, s...)
}

func (e *encoder) nstr(s *string) {
	if s == nil {
		e.i32(-1)
		return
	}
	e.str(*s)
}

func (e *encoder) bytes(b []byte) {
	if b == nil {
		e.i32(-1)
		return
	}
	e.i32(int32(len(b)))
	e.b = append(e.b, b...)
}

// decoder reads what encoder wrote. It never panics: the first problem
// sets err, and every later read returns a zero value. Lengths and array
// counts are checked against the bytes that remain, so hostile input can
// not make it allocate more than the input's size.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) take(n int) []byte {
	if d.err != nil {
		return nil
	}
	if n < 0 || n > len(d.b) {
		d.err = errShortRecord
		return nil
	}
	v := d.b[:n]
	d.b = d.b[n:]
	return v
}

func (d *decoder) i8() int8 {
	b := d.take(1)
	if b == nil {
		return 0
	}
	return int8(b[0])
}

func (d *decoder) i16() int16 {
	b := d.take(2)
	if b == nil {
		return 0
	}
	return int16(binary.BigEndian.Uint16(b))
}

func (d *decoder) i32() int32 {
	b := d.take(4)
	if b == nil {
		return 0
	}
	return int32(binary.BigEndian.Uint32(b))
}

func (d *decoder) i64() int64 {
	b := d.take(8)
	if b == nil {
		return 0
	}
	return int64(binary.BigEndian.Uint64(b))
}

func (d *decoder) uuid() topicID {
	var id topicID
	copy(id[:], d.take(16))
	return id
}

func (d *decoder) str() string {
	n := d.i32()
	if n < 0 {
		if d.err == nil {
			d.err = fmt.Errorf("group: null where a string is required: %w", errShortRecord)
		}
		return ""
	}
	return string(d.take(int(n)))
}

func (d *decoder) nstr() *string {
	n := d.i32()
	if n == -1 {
		return nil
	}
	s := string(d.take(int(n)))
	if d.err != nil {
		return nil
	}
	return &s
}

func (d *decoder) bytes() []byte {
	n := d.i32()
	if n == -1 {
		return nil
	}
	b := d.take(int(n))
	if d.err != nil {
		return nil
	}
	return append([]byte{}, b...)
}

// count reads an array length. minElem is the smallest encoded size of one
// element; a count that could not fit in the remaining bytes is an error.
func (d *decoder) count(minElem int) int {
	n := d.i32()
	if d.err != nil {
		return 0
	}
	if n < 0 || int(n) > len(d.b)/minElem {
		d.err = errShortRecord
		return 0
	}
	return int(n)
}

// done reports the sticky error, or an error if bytes are left over.
func (d *decoder) done() error {
	if d.err != nil {
		return d.err
	}
	if len(d.b) != 0 {
		return fmt.Errorf("group: %d trailing bytes in record", len(d.b))
	}
	return nil
}
