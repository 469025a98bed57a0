package records

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func buildBatch(t testing.TB, codec Codec, framing SnappyFraming, n int) []byte {
	t.Helper()
	b := NewBuilder(codec, 1<<20, 1)
	for i := 0; i < n; i++ {
		var key []byte
		if i%3 != 0 {
			key = fmt.Appendf(nil, "k%d", i)
		}
		hs := []Header{{Key: "h", Value: []byte{byte(i)}}}
		if _, ok := b.TryAppend(int64(1000+i), key, bytes.Repeat([]byte{'v'}, i%50), hs); !ok {
			t.Fatalf("record %d did not fit", i)
		}
	}
	raw, _, err := b.Build(nil, Producer{ID: 7, Epoch: 2, BaseSequence: 40}, Options{Snappy: framing})
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

func TestRoundTripAllCodecs(t *testing.T) {
	cases := []struct {
		codec   Codec
		framing SnappyFraming
	}{{None, 0}, {Gzip, 0}, {Snappy, SnappyXerial}, {Snappy, SnappyRaw}, {LZ4, 0}, {Zstd, 0}}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%v-%d", c.codec, c.framing), func(t *testing.T) {
			raw := buildBatch(t, c.codec, c.framing, 100)
			// kmsg reads the header the same way and agrees on the fields.
			var kb kmsg.RecordBatch
			if err := kb.ReadFrom(raw); err != nil {
				t.Fatal(err)
			}
			if kb.NumRecords != 100 || kb.ProducerID != 7 || kb.FirstSequence != 40 || kb.Attributes&7 != int16(c.codec) {
				t.Fatalf("kmsg view: %+v", kb)
			}
			var got []Record
			err := Decode(append(raw, raw[:30]...), 1<<20, func(b *Batch) { got = append(got, b.Records...) })
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != 100 {
				t.Fatalf("decoded %d records", len(got))
			}
			for i, r := range got {
				if r.Offset != int64(i) || r.Timestamp != int64(1000+i) || len(r.Value) != i%50 || (i%3 == 0) != (r.Key == nil) {
					t.Fatalf("record %d: %+v", i, r)
				}
				if len(r.Headers) != 1 || r.Headers[0].Key != "h" || r.Headers[0].Value[0] != byte(i) {
					t.Fatalf("record %d headers: %+v", i, r.Headers)
				}
			}
		})
	}
}

func TestCRCMismatch(t *testing.T) {
	raw := buildBatch(t, None, 0, 3)
	raw[len(raw)-1] ^= 1
	if err := Decode(raw, 1<<20, func(*Batch) {}); !errors.Is(err, ErrCRC) {
		t.Fatalf("err = %v, want ErrCRC", err)
	}
}

func TestDecompressLimit(t *testing.T) {
	src := bytes.Repeat([]byte("a"), 10000)
	for _, c := range []Codec{Gzip, Snappy, LZ4, Zstd} {
		z, err := Compress(nil, src, c, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Decompress(z, c, 9999); !errors.Is(err, ErrTooLarge) {
			t.Errorf("%v: err = %v, want ErrTooLarge", c, err)
		}
		out, err := Decompress(z, c, 10000)
		if err != nil || !bytes.Equal(out, src) {
			t.Errorf("%v: round trip failed: %v", c, err)
		}
	}
}

// TestEstimateGrowth checks the numbers the partitioner counts: a new batch
// reports header plus record, later appends report the record's size, and
// the sum equals the final estimate.
func TestEstimateGrowth(t *testing.T) {
	b := NewBuilder(None, 16384, 1)
	sum := 0
	for i := 0; ; i++ {
		grew, ok := b.TryAppend(5, nil, make([]byte, 500), nil)
		if !ok {
			break
		}
		if i == 0 && grew != HeaderSize+RecordSize(0, 0, nil, make([]byte, 500), nil) {
			t.Fatalf("first append grew %d", grew)
		}
		sum += grew
	}
	if sum != b.Estimated() || b.Estimated() > 16384 || b.Estimated()+509 <= 16384 {
		t.Fatalf("sum %d estimate %d", sum, b.Estimated())
	}
	if !b.IsFull() && b.Estimated()+RecordSize(int32(b.Len()), 0, nil, make([]byte, 500), nil) <= 16384 {
		t.Fatal("builder refused a record that fits")
	}
}

func TestUpdateRatio(t *testing.T) {
	tests := []struct{ est, obs, want float64 }{
		{1, 0.5, 0.995}, {0.5, 0.9, 0.9}, {0.5, 0.52, 0.55}, {0.4, 0.4, 0.4},
	}
	for _, tt := range tests {
		if got := UpdateRatio(tt.est, tt.obs); got < tt.want-1e-9 || got > tt.want+1e-9 {
			t.Errorf("UpdateRatio(%v,%v) = %v, want %v", tt.est, tt.obs, got, tt.want)
		}
	}
}

func FuzzDecode(f *testing.F) {
	for _, c := range []Codec{None, Gzip, Snappy, LZ4, Zstd} {
		f.Add(buildBatch(f, c, SnappyXerial, 5))
	}
	f.Add(buildBatch(f, Snappy, SnappyRaw, 5))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		_ = Decode(b, 1<<20, func(*Batch) {})
		for c := None; c <= Zstd; c++ {
			_, _ = Decompress(b, c, 1<<16)
		}
	})
}

func TestCompressionLevels(t *testing.T) {
	src := bytes.Repeat([]byte("abcdefgh12345678"), 4096)
	for _, tc := range []struct {
		codec  Codec
		levels []int
	}{{Gzip, []int{0, 1, 9}}, {LZ4, []int{0, 1, 5, 17}}, {Zstd, []int{0, 1, 19, -5}}} {
		for _, lv := range tc.levels {
			z, err := Compress(nil, src, tc.codec, Options{Level: lv})
			if err != nil {
				t.Fatalf("%v level %d: %v", tc.codec, lv, err)
			}
			out, err := Decompress(z, tc.codec, len(src))
			if err != nil || !bytes.Equal(out, src) {
				t.Fatalf("%v level %d: round trip failed: %v", tc.codec, lv, err)
			}
		}
	}
}

// TestWireIsBuildWithoutCopy: for every codec, Wire's bytes equal Build's;
// uncompressed, they are the Builder's own buffer, and a Builder started in
// a recycled buffer writes into that storage and produces the same batch.
func TestWireIsBuildWithoutCopy(t *testing.T) {
	for _, codec := range []Codec{None, Gzip, Snappy, LZ4, Zstd} {
		t.Run(fmt.Sprint(codec), func(t *testing.T) {
			fill := func(b *Builder) {
				for i := range 40 {
					if _, ok := b.TryAppend(int64(5000+i), fmt.Appendf(nil, "k%d", i), bytes.Repeat([]byte{'w'}, 100+i), nil); !ok {
						t.Fatalf("record %d did not fit", i)
					}
				}
			}
			p := Producer{ID: 3, Epoch: 1, BaseSequence: 9}
			ref := NewBuilder(codec, 16384, 1)
			fill(ref)
			want, _, err := ref.Build(nil, p, Options{})
			if err != nil {
				t.Fatal(err)
			}
			got, _, err := ref.Wire(p, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("Wire differs from Build: %d vs %d bytes", len(got), len(want))
			}
			if codec == None && &got[0] != &ref.buf[0] {
				t.Fatal("uncompressed Wire copied the records")
			}

			recycled := ref.Recycle()
			if _, ok := ref.TryAppend(1, nil, []byte("x"), nil); ok {
				t.Fatal("a recycled Builder took a record")
			}
			if ref.UncompressedBytes() != 0 || ref.Estimated() > HeaderSize {
				t.Fatalf("recycled Builder reports %d bytes, estimate %d", ref.UncompressedBytes(), ref.Estimated())
			}
			again := NewBuilderIn(recycled, codec, 16384, 1)
			fill(again)
			got2, _, err := again.Wire(p, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got2, want) {
				t.Fatal("a Builder in a recycled buffer built another batch")
			}
			if &again.buf[0] != &recycled[:1][0] {
				t.Fatal("NewBuilderIn did not use the recycled storage")
			}
			var n int
			if err := Decode(got2, 1<<20, func(b *Batch) { n += len(b.Records) }); err != nil || n != 40 {
				t.Fatalf("decoded %d records, err %v", n, err)
			}
		})
	}
}

// TestBuilderBufferFitsLimit: an uncompressed batch filled to its limit
// never outgrows a buffer of exactly the limit, header included, so
// recycled batch.size buffers are never reallocated.
func TestBuilderBufferFitsLimit(t *testing.T) {
	buf := make([]byte, 0, 16384)
	b := NewBuilderIn(buf, None, 16384, 1)
	for {
		if _, ok := b.TryAppend(0, nil, make([]byte, 500), nil); !ok {
			break
		}
	}
	if cap(b.buf) != 16384 || &b.buf[0] != &buf[:1][0] {
		t.Fatalf("buffer grew to %d bytes", cap(b.buf))
	}
}

// decodedVia lists what Decode hands out (records of whole batches) and
// what DecodeEach does, counting only records of batches it finished, as
// its callers must.
func decodedVia(set []byte) (viaDecode, viaEach []Record, errDecode, errEach error) {
	errDecode = Decode(set, 1<<20, func(b *Batch) { viaDecode = append(viaDecode, b.Records...) })
	var seen []Record
	errEach = DecodeEach(set, 1<<20, func(_ *Batch, r Record) { seen = append(seen, r) },
		func(*Batch) { viaEach = append(viaEach, seen...); seen = seen[:0] })
	return
}

func sameRecords(a, b []Record) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := a[i], b[i]
		if x.Offset != y.Offset || x.Timestamp != y.Timestamp || x.LeaderEpoch != y.LeaderEpoch ||
			!bytes.Equal(x.Key, y.Key) || !bytes.Equal(x.Value, y.Value) || len(x.Headers) != len(y.Headers) {
			return false
		}
		for j := range x.Headers {
			if x.Headers[j].Key != y.Headers[j].Key || !bytes.Equal(x.Headers[j].Value, y.Headers[j].Value) {
				return false
			}
		}
	}
	return true
}

// corruptLastRecord makes the batch's last record claim more bytes than
// are left, and fixes the CRC, so that only the record walk finds it.
func corruptLastRecord(t *testing.T, raw []byte) []byte {
	t.Helper()
	raw = bytes.Clone(raw)
	// The last record of buildBatch(None, .., n) is the last bytes: walk
	// to it by decoding the lengths.
	body := raw[HeaderSize:]
	pos := 0
	last := 0
	for pos < len(body) {
		last = pos
		n, k := binary.Varint(body[pos:])
		pos += k + int(n)
	}
	// A one-byte length of 63 (zig-zag 126) is far past the end.
	body[last] = 126
	binary.BigEndian.PutUint32(raw[17:], crc32.Checksum(raw[21:], crc32c))
	return raw
}

func TestDecodeEachMatchesDecode(t *testing.T) {
	one := buildBatch(t, None, SnappyXerial, 7)
	two := buildBatch(t, Zstd, SnappyXerial, 4)
	bad := corruptLastRecord(t, buildBatch(t, None, SnappyXerial, 3))
	for _, tc := range []struct {
		name    string
		set     []byte
		records int
		fails   bool
	}{
		{"one batch", one, 7, false},
		{"two batches, two codecs", append(bytes.Clone(one), two...), 11, false},
		{"truncated tail", append(bytes.Clone(one), two[:len(two)-3]...), 7, false},
		{"malformed second batch", append(bytes.Clone(one), bad...), 7, true},
		{"malformed first batch", append(bytes.Clone(bad), one...), 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			viaDecode, viaEach, errDecode, errEach := decodedVia(tc.set)
			if (errDecode != nil) != tc.fails || (errEach != nil) != tc.fails {
				t.Fatalf("errors %v and %v, want failure %v", errDecode, errEach, tc.fails)
			}
			if len(viaEach) != tc.records || !sameRecords(viaDecode, viaEach) {
				t.Fatalf("DecodeEach gave %d records, Decode %d, want %d and the same", len(viaEach), len(viaDecode), tc.records)
			}
		})
	}
}

// FuzzDecodeEach: on any input DecodeEach fails exactly when Decode does
// and its finished batches hold the records Decode hands out.
func FuzzDecodeEach(f *testing.F) {
	for _, c := range []Codec{None, Gzip, Zstd} {
		f.Add(buildBatch(f, c, SnappyXerial, 5))
	}
	f.Add(append(buildBatch(f, None, SnappyXerial, 3), buildBatch(f, LZ4, SnappyXerial, 2)...))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		viaDecode, viaEach, errDecode, errEach := decodedVia(b)
		if (errDecode == nil) != (errEach == nil) || !sameRecords(viaDecode, viaEach) {
			t.Fatalf("Decode: %d records, err %v; DecodeEach: %d records, err %v", len(viaDecode), errDecode, len(viaEach), errEach)
		}
	})
}
