package protocol

import (
	"encoding/binary"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// The table covers exactly the requests kmsg knows, at its versions, with
// its flexible versions.
func TestTableMatchesKmsg(t *testing.T) {
	for key := range int16(len(requests)) {
		req := kmsg.RequestForKey(key)
		m := requests[key]
		if req == nil {
			if m.max != -1 {
				t.Errorf("key %d: table has v%d, kmsg has no such request", key, m.max)
			}
			continue
		}
		if m.max != req.MaxVersion() {
			t.Errorf("%s: table max v%d, kmsg v%d", kmsg.NameForKey(key), m.max, req.MaxVersion())
		}
		for v := int16(0); v <= req.MaxVersion(); v++ {
			req.SetVersion(v)
			if (v >= m.flexFrom) != req.IsFlexible() {
				t.Errorf("%s v%d: table flexible %v, kmsg %v", kmsg.NameForKey(key), v, v >= m.flexFrom, req.IsFlexible())
			}
		}
	}
	if kmsg.RequestForKey(int16(len(requests))) != nil {
		t.Errorf("kmsg knows key %d, the table stops before it", len(requests))
	}
}

// Every body kmsg encodes is accepted, and walking it reads every byte:
// the schema is kmsg's, not merely one the bytes happen to fit.
func TestAcceptsKmsgEncodings(t *testing.T) {
	bodies := kmsgBodies()
	if len(bodies) < 3*360 {
		t.Fatalf("only %d bodies: the request list is incomplete", len(bodies))
	}
	for _, b := range bodies {
		rest, err := check(b.key, b.version, b.b, nil)
		if err != nil {
			t.Errorf("%s: %v\n%x", b.name, err, b.b)
			continue
		}
		if rest != 0 {
			t.Errorf("%s: %d of %d bytes left unread", b.name, rest, len(b.b))
		}
	}
}

// Trailing bytes after a body are allowed, as kmsg allows them.
func TestAcceptsTrailingBytes(t *testing.T) {
	req := kmsg.NewPtrMetadataRequest()
	req.Version = 12
	b := append(req.AppendTo(nil), 1, 2, 3)
	if rest, err := check(3, 12, b, nil); err != nil || rest != 3 {
		t.Fatalf("rest %d, err %v; want 3, nil", rest, err)
	}
}

// Cutting a body anywhere loses bytes the walk needs: every strict prefix
// is rejected.
func TestRejectsTruncations(t *testing.T) {
	for _, b := range kmsgBodies() {
		for n := range len(b.b) {
			err := Check(b.key, b.version, b.b[:n])
			if err == nil {
				t.Errorf("%s: prefix of %d/%d bytes accepted", b.name, n, len(b.b))
				break
			}
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("%s: prefix %d: error %v does not wrap ErrMalformed", b.name, n, err)
			}
		}
	}
}

// lengthAt is one length or count the walk read.
type lengthAt struct {
	off  int
	kind lengthKind
}

func lengthsOf(t *testing.T, b body) []lengthAt {
	t.Helper()
	var ls []lengthAt
	if _, err := check(b.key, b.version, b.b, func(off int, k lengthKind) {
		ls = append(ls, lengthAt{off, k})
	}); err != nil {
		t.Fatalf("%s: %v", b.name, err)
	}
	return ls
}

// withLength returns b with the length at l replaced by an encoding of n
// in the same form (a uvarint may change width).
func withLength(b []byte, l lengthAt, n int64) []byte {
	out := append([]byte(nil), b[:l.off]...)
	rest := b[l.off:]
	switch l.kind {
	case lenInt16:
		out = binary.BigEndian.AppendUint16(out, uint16(n))
		rest = rest[2:]
	case lenInt32:
		out = binary.BigEndian.AppendUint32(out, uint32(n))
		rest = rest[4:]
	case lenUvarint, lenVarint:
		_, w := binary.Uvarint(rest)
		rest = rest[w:]
		if l.kind == lenVarint {
			out = binary.AppendVarint(out, n)
		} else {
			out = binary.AppendUvarint(out, uint64(n))
		}
	}
	return append(out, rest...)
}

// huge is the largest value a length of this kind can declare.
func huge(k lengthKind) int64 {
	switch k {
	case lenInt16:
		return 1<<15 - 1
	case lenInt32, lenVarint:
		return 1<<31 - 1
	}
	return 1<<32 - 1
}

// Setting any length, count, tag count or tag size to the largest value
// its encoding allows is rejected, quickly. Setting it to -1 (null) is
// either rejected or decodes with kmsg.
func TestRejectsHugeLengths(t *testing.T) {
	var mutated int
	for _, b := range kmsgBodies() {
		for _, l := range lengthsOf(t, b) {
			m := withLength(b.b, l, huge(l.kind))
			start := time.Now()
			err := Check(b.key, b.version, m)
			if took := time.Since(start); took > time.Second {
				t.Errorf("%s: length at %d: Check took %v", b.name, l.off, took)
			}
			if err == nil {
				t.Errorf("%s: length at %d set to %d accepted\n%x", b.name, l.off, huge(l.kind), m)
			}
			mutated++

			null := int64(-1)
			if l.kind == lenUvarint {
				null = 0
			}
			m = withLength(b.b, l, null)
			if Check(b.key, b.version, m) == nil {
				if err := kmsgDecode(b.key, b.version, m); err != nil {
					t.Errorf("%s: null at %d accepted, kmsg fails: %v", b.name, l.off, err)
				}
			}
		}
	}
	if mutated < 4000 {
		t.Fatalf("only %d lengths mutated", mutated)
	}
}

func kmsgDecode(key, version int16, b []byte) error {
	req := kmsg.RequestForKey(key)
	req.SetVersion(version)
	return req.ReadFrom(b)
}

// hostileTagCount is an ApiVersions v3 body whose top-level tag section
// declares 2^32-1 tagged fields and ends: kmsg loops over all of them.
func hostileTagCount() []byte {
	b := (&kmsg.ApiVersionsRequest{Version: 3, ClientSoftwareName: "a", ClientSoftwareVersion: "b"}).AppendTo(nil)
	return binary.AppendUvarint(b[:len(b)-1], 1<<32-1)
}

// hostileArray is a Metadata v1 body declaring 64 Ki topics over 64 KiB of
// zeros: kmsg allocates all 64 Ki topics, then runs out of bytes halfway.
func hostileArray() []byte {
	b := (&kmsg.MetadataRequest{Version: 1}).AppendTo(nil)
	b = binary.BigEndian.AppendUint32(b[:len(b)-4], 64<<10)
	return append(b, make([]byte, 64<<10)...)
}

// The two bodies the server measures as kmsg amplifications are refused.
func TestRejectsHostileBodies(t *testing.T) {
	for _, tc := range []struct {
		name         string
		key, version int16
		body         []byte
	}{
		{"tag count 2^32-1", 18, 3, hostileTagCount()},
		{"64Ki topics in 64KiB", 3, 1, hostileArray()},
		{"tag size past the end", 18, 3, []byte{2, 'a', 2, 'b', 1, 0, 9, 0}},
		{"nullable struct marker 2", 75, 0, []byte{1, 0, 0, 0, 0, 2}},
		{"non-nullable string null", 18, 3, []byte{0, 1, 0}},
		{"non-nullable array null", 3, 0, []byte{0xff, 0xff, 0xff, 0xff}},
		{"uvarint over 32 bits", 18, 3, []byte{0xff, 0xff, 0xff, 0xff, 0x1f}},
		{"fixed elements past the end", 46, 0, append([]byte{0, 0, 0, 0, 2, 2, 'a', 10}, make([]byte, 12)...)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Check(tc.key, tc.version, tc.body)
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("got %v, want ErrMalformed", err)
			}
			t.Log(err)
		})
	}
}

func TestUnknownRequests(t *testing.T) {
	for _, tc := range []struct{ key, version int16 }{
		{-1, 0}, {int16(len(requests)), 0}, {1000, 0}, {0, -1}, {0, 14}, {18, 6},
	} {
		if err := Check(tc.key, tc.version, nil); !errors.Is(err, ErrUnknownRequest) {
			t.Errorf("key %d v%d: got %v, want ErrUnknownRequest", tc.key, tc.version, err)
		}
	}
}

// Check allocates nothing for a body it accepts.
func TestCheckDoesNotAllocate(t *testing.T) {
	for _, b := range kmsgBodies() {
		if b.key%7 != 0 { // a sample keeps this quick
			continue
		}
		allocs := testing.AllocsPerRun(10, func() {
			if err := Check(b.key, b.version, b.b); err != nil {
				t.Fatal(err)
			}
		})
		if allocs != 0 {
			t.Errorf("%s: %v allocations", b.name, allocs)
		}
	}
}

func ExampleCheck() {
	req := kmsg.NewPtrMetadataRequest()
	req.Version = 12
	body := req.AppendTo(nil)
	fmt.Println(Check(3, 12, body))
	fmt.Println(Check(3, 12, body[:len(body)-1]))
	// Output:
	// <nil>
	// protocol: malformed request body: truncated varint at byte 3
}
