package sharegroup

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	wlog "weir/internal/log"
	"weir/internal/share"
)

// trimTestBatch is an uncompressed batch of n records at offsets base..,
// record i holding the value "v<i>".
func trimTestBatch(base int64, n int) []byte {
	var bb wlog.BatchBuilder
	bb.Reset(1000)
	for i := range n {
		bb.Add(1000+int64(i), nil, fmt.Appendf(nil, "v%d", i), nil)
	}
	b := slices.Clone(bb.Build())
	binary.BigEndian.PutUint64(b, uint64(base))
	return b
}

// setAttributes rewrites a batch's attributes and its CRC.
func setAttributes(b []byte, attrs uint16) []byte {
	b = slices.Clone(b)
	binary.BigEndian.PutUint16(b[trimAt.attributes:], attrs)
	binary.BigEndian.PutUint32(b[trimAt.crc:], crc32.Checksum(b[trimAt.attributes:], trimCRCTable))
	return b
}

// trimmedContents checks a trimmed batch's framing and CRC and returns its
// records' offsets and values.
func trimmedContents(t *testing.T, pieces [][]byte) ([]int64, []string) {
	t.Helper()
	b := bytes.Join(pieces, nil)
	h, err := wlog.ParseBatchHeader(b)
	if err != nil {
		t.Fatal(err)
	}
	if int(h.Length) != len(b) {
		t.Fatalf("length field says %d bytes, batch has %d", h.Length, len(b))
	}
	if crc := crc32.Checksum(b[trimAt.attributes:], trimCRCTable); crc != h.CRC {
		t.Fatalf("CRC %x, header says %x", crc, h.CRC)
	}
	var offs []int64
	var vals []string
	if err := wlog.EachRecord(b, func(r *wlog.Record) bool {
		offs = append(offs, r.Offset)
		vals = append(vals, string(r.Value))
		return true
	}); err != nil {
		t.Fatal(err)
	}
	if len(offs) != int(h.NumRecords) {
		t.Fatalf("%d records decoded, header says %d", len(offs), h.NumRecords)
	}
	return offs, vals
}

func TestTrimBatch(t *testing.T) {
	raw := trimTestBatch(100, 10)
	rg := func(first, last int64) share.AcquiredRange {
		return share.AcquiredRange{First: first, Last: last, DeliveryCount: 1}
	}
	tests := []struct {
		name string
		raw  []byte
		acq  []share.AcquiredRange
		want []int64 // nil: not trimmed
	}{
		{"middle slice", raw, []share.AcquiredRange{rg(102, 104)}, []int64{102, 103, 104}},
		{"head", raw, []share.AcquiredRange{rg(90, 100)}, []int64{100}},
		{"tail past the batch", raw, []share.AcquiredRange{rg(108, 200)}, []int64{108, 109}},
		{"holes", raw, []share.AcquiredRange{rg(100, 101), rg(105, 105), rg(108, 120)}, []int64{100, 101, 105, 108, 109}},
		{"every record", raw, []share.AcquiredRange{rg(100, 104), rg(105, 109)}, nil},
		{"no record", raw, []share.AcquiredRange{rg(200, 210)}, nil},
		{"no range", raw, nil, nil},
		{"compressed", setAttributes(raw, uint16(wlog.CompressionLZ4)), []share.AcquiredRange{rg(102, 104)}, nil},
		{"control", setAttributes(raw, 0x20), []share.AcquiredRange{rg(102, 104)}, nil},
		{"truncated", raw[:len(raw)-3], []share.AcquiredRange{rg(102, 104)}, nil},
		{"header only", raw[:wlog.BatchHeaderSize], []share.AcquiredRange{rg(102, 104)}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := slices.Clone(tc.raw)
			out, _, ok := trimBatch(in, tc.acq, trimHint{})
			if !slices.Equal(in, tc.raw) {
				t.Fatal("trimBatch changed its input")
			}
			for _, pc := range out[min(1, len(out)):] {
				if !bytes.Contains(in, pc) {
					t.Fatal("a record piece is not a slice of the batch")
				}
			}
			if tc.want == nil {
				if ok {
					t.Fatalf("trimmed to %d pieces, want the batch sent whole", len(out))
				}
				return
			}
			if !ok {
				t.Fatal("not trimmed")
			}
			offs, vals := trimmedContents(t, out)
			if !slices.Equal(offs, tc.want) {
				t.Fatalf("offsets %v, want %v", offs, tc.want)
			}
			for i, off := range offs {
				if want := fmt.Sprintf("v%d", off-100); vals[i] != want {
					t.Fatalf("offset %d holds %q, want %q", off, vals[i], want)
				}
			}
			oh, _ := wlog.ParseBatchHeader(raw)
			th, _ := wlog.ParseBatchHeader(bytes.Join(out, nil))
			if th.BaseOffset != oh.BaseOffset || th.LastOffsetDelta != oh.LastOffsetDelta || th.BaseTimestamp != oh.BaseTimestamp || th.MaxTimestamp != oh.MaxTimestamp {
				t.Fatalf("header %+v does not keep the offsets and timestamps of %+v", th, oh)
			}
		})
	}
}

func TestCoversBatch(t *testing.T) {
	b := share.Batch{Base: 10, Last: 19}
	rg := func(first, last int64) share.AcquiredRange { return share.AcquiredRange{First: first, Last: last} }
	tests := []struct {
		acq  []share.AcquiredRange
		want bool
	}{
		{nil, false},
		{[]share.AcquiredRange{rg(10, 19)}, true},
		{[]share.AcquiredRange{rg(0, 30)}, true},
		{[]share.AcquiredRange{rg(10, 14), rg(15, 19)}, true},
		{[]share.AcquiredRange{rg(10, 14), rg(16, 19)}, false},
		{[]share.AcquiredRange{rg(11, 19)}, false},
		{[]share.AcquiredRange{rg(10, 18)}, false},
	}
	for _, tc := range tests {
		if got := coversBatch(tc.acq, b); got != tc.want {
			t.Errorf("coversBatch(%v, %v) = %v, want %v", tc.acq, b, got, tc.want)
		}
	}
}

// TestHoldingBatchesTrims checks the pieces of an answer: a batch acquired
// whole goes out as a file range, merged with its neighbour; a batch
// acquired in part as a trimmed copy.
func TestHoldingBatchesTrims(t *testing.T) {
	b0, b1, b2 := trimTestBatch(0, 5), trimTestBatch(5, 5), trimTestBatch(10, 5)
	f, err := os.Create(filepath.Join(t.TempDir(), "seg"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, b := range [][]byte{b0, b1, b2} {
		if _, err := f.Write(b); err != nil {
			t.Fatal(err)
		}
	}
	n0, n1, n2 := int64(len(b0)), int64(len(b1)), int64(len(b2))
	ranges := []wlog.FileRange{{File: f, Pos: 0, Len: n0 + n1 + n2}}
	batches := []shareBatch{
		{batch: share.Batch{Base: 0, Last: 4}, pos: 0, size: n0},
		{batch: share.Batch{Base: 5, Last: 9}, pos: n0, size: n1},
		{batch: share.Batch{Base: 10, Last: 14}, pos: n0 + n1, size: n2},
	}
	acq := []share.AcquiredRange{{First: 0, Last: 11, DeliveryCount: 1}}
	var trims trimReads
	fr := holdingBatches(batches, ranges, acq, &trims)
	if len(fr.Pieces) != 3 {
		t.Fatalf("%d pieces, want 3 (a file range for the first two batches, then the third's new header and its kept records)", len(fr.Pieces))
	}
	if p := fr.Pieces[0]; p.Bytes != nil || p.File.Pos != 0 || p.File.Len != n0+n1 {
		t.Fatalf("first piece %+v, want the file range [0, %d)", p, n0+n1)
	}
	trimmed := [][]byte{fr.Pieces[1].Bytes, fr.Pieces[2].Bytes}
	offs, _ := trimmedContents(t, trimmed)
	if !slices.Equal(offs, []int64{10, 11}) {
		t.Fatalf("trimmed batch holds %v, want [10 11]", offs)
	}
	if fr.Size != n0+n1+int64(len(bytes.Join(trimmed, nil))) {
		t.Fatalf("size %d does not add up", fr.Size)
	}
	// A compressed batch acquired in part goes out whole.
	batches[2].compressed = true
	fr = holdingBatches(batches, ranges, acq, &trims)
	if len(fr.Pieces) != 1 || fr.Pieces[0].File.Len != n0+n1+n2 {
		t.Fatalf("pieces %+v, want one file range of all three batches", fr.Pieces)
	}
}

// FuzzTrimBatch: trimming never panics, a trimmed batch is well framed,
// and when the input is a batch the log accepts, the trimmed batch's
// records decode and hold only acquired offsets.
func FuzzTrimBatch(f *testing.F) {
	f.Add(trimTestBatch(100, 10), int64(102), int64(104))
	f.Add(trimTestBatch(0, 3), int64(-5), int64(1))
	f.Add([]byte{1, 2, 3}, int64(0), int64(0))
	f.Fuzz(func(t *testing.T, raw []byte, first, last int64) {
		if first > last {
			return
		}
		acq := []share.AcquiredRange{{First: first, Last: last}}
		pieces, _, ok := trimBatch(raw, acq, trimHint{})
		if !ok {
			return
		}
		out := bytes.Join(pieces, nil)
		h, err := wlog.ParseBatchHeader(out)
		if err != nil || int(h.Length) != len(out) {
			t.Fatalf("trimmed batch badly framed: %v", err)
		}
		if _, err := wlog.ValidateBatch(raw, nil, time.Now()); err != nil {
			return // only batches the log accepts are trimmed for real
		}
		if err := wlog.EachRecord(out, func(r *wlog.Record) bool {
			if r.Offset < first || r.Offset > last {
				t.Fatalf("offset %d kept outside [%d, %d]", r.Offset, first, last)
			}
			return true
		}); err != nil {
			t.Fatalf("trimmed batch does not decode: %v", err)
		}
	})
}

// TestTrimBatchSlices trims a batch in consecutive slices, as record_limit
// polls take it, each walk starting at the last one's hint: the copies are
// those a walk from the first record makes, and a hint past the first
// acquired offset is not used.
func TestTrimBatchSlices(t *testing.T) {
	raw := trimTestBatch(1000, 40)
	var hint trimHint
	for first := int64(1000); first < 1040; first += 7 {
		acq := []share.AcquiredRange{{First: first, Last: min(first+6, 1039), DeliveryCount: 1}}
		fromStart, _, ok1 := trimBatch(raw, acq, trimHint{})
		hinted, next, ok2 := trimBatch(raw, acq, hint)
		if ok1 != ok2 || !bytes.Equal(bytes.Join(fromStart, nil), bytes.Join(hinted, nil)) {
			t.Fatalf("slice at %d: the walk from hint %+v differs from the walk from the start", first, hint)
		}
		if first+7 < 1040 && next.offset != first+7 {
			t.Fatalf("slice at %d: next hint %+v, want offset %d", first, next, first+7)
		}
		hint = next
	}
	// A hint past the acquired offsets must be ignored.
	acq := []share.AcquiredRange{{First: 1002, Last: 1003}}
	_, far, _ := trimBatch(raw, []share.AcquiredRange{{First: 1030, Last: 1031}}, trimHint{})
	out, _, ok := trimBatch(raw, acq, far)
	if !ok {
		t.Fatal("not trimmed")
	}
	if offs, _ := trimmedContents(t, out); !slices.Equal(offs, []int64{1002, 1003}) {
		t.Fatalf("with a hint past them, kept %v, want [1002 1003]", offs)
	}
}

// TestTrimReadsRewrittenBatch: a kept batch is not used once the file
// holds another batch at its place.
func TestTrimReadsRewrittenBatch(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "seg"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	a := trimTestBatch(0, 10)
	if _, err := f.WriteAt(a, 0); err != nil {
		t.Fatal(err)
	}
	fr := wlog.FileRange{File: f, Pos: 0, Len: int64(len(a))}
	acq := []share.AcquiredRange{{First: 2, Last: 3}}
	var c trimReads
	out, ok := c.trimmed(fr, acq)
	if !ok {
		t.Fatal("not trimmed")
	}
	if _, vals := trimmedContents(t, out); !slices.Equal(vals, []string{"v2", "v3"}) {
		t.Fatalf("values %v", vals)
	}
	// Same place, same size, other records (a truncation and a new
	// append): the values must come from the file, not the kept copy.
	var bb wlog.BatchBuilder
	bb.Reset(1000)
	for i := range 10 {
		bb.Add(1000+int64(i), nil, fmt.Appendf(nil, "w%d", i), nil)
	}
	b := bb.Build()
	if len(b) != len(a) {
		t.Fatalf("test batches differ in size: %d, %d", len(a), len(b))
	}
	if _, err := f.WriteAt(b, 0); err != nil {
		t.Fatal(err)
	}
	out, ok = c.trimmed(fr, acq)
	if !ok {
		t.Fatal("not trimmed")
	}
	if _, vals := trimmedContents(t, out); !slices.Equal(vals, []string{"w2", "w3"}) {
		t.Fatalf("values %v after the rewrite, want [w2 w3]", vals)
	}
}
