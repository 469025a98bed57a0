package nullstore

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// batch is a stand-in record batch of size bytes: what the package
// reads of it is the leader epoch it stamps and the bytes after the
// base offset, which it repeats.
func batch(size int, fill byte) []byte {
	b := bytes.Repeat([]byte{fill}, size)
	binary.BigEndian.PutUint64(b, 0)
	return b
}

func TestAppendKeepsTheLargestBatch(t *testing.T) {
	var p Partition
	if p.Template() != nil || p.End() != 0 {
		t.Fatal("a new partition has a template or offsets")
	}
	for _, step := range []struct {
		records    int64
		fill       byte
		base, last int64
		keep       byte // the template's fill afterwards
		epoch      uint32
	}{
		{1, 'a', 0, 0, 'a', 3},
		{5, 'b', 1, 5, 'b', 4},
		{2, 'c', 6, 7, 'b', 4},  // fewer records: the template stays
		{5, 'd', 8, 12, 'b', 4}, // as many: the template stays
	} {
		in := batch(64, step.fill)
		base, last := p.Append(in, step.records, int32(step.epoch))
		if base != step.base || last != step.last || p.End() != step.last+1 {
			t.Fatalf("append of %d: offsets %d-%d, end %d; want %d-%d", step.records, base, last, p.End(), step.base, step.last)
		}
		tm := p.Template()
		if tm.Batch[20] != step.keep || binary.BigEndian.Uint32(tm.Batch[12:]) != step.epoch {
			t.Fatalf("after %c: template %c at epoch %d, want %c at %d", step.fill, tm.Batch[20], binary.BigEndian.Uint32(tm.Batch[12:]), step.keep, step.epoch)
		}
		if binary.BigEndian.Uint32(in[12:]) != uint32(step.fill)<<24|uint32(step.fill)<<16|uint32(step.fill)<<8|uint32(step.fill) {
			t.Fatal("the produced batch was stamped in place; the template must be a copy")
		}
	}
}

func TestRead(t *testing.T) {
	var p Partition
	p.Append(batch(100, 'x'), 1, 0) // offset 0
	p.Append(batch(100, 'y'), 5, 0) // 1-5: the template
	p.Append(batch(100, 'z'), 2, 0) // 6-7
	for _, tc := range []struct {
		name   string
		offset int64
		limit  int64
		first  bool
		ok     bool
		bases  []int64
	}{
		{"from the start", 0, 1 << 20, true, true, []int64{0, 5}},
		{"from the middle", 3, 1 << 20, true, true, []int64{3}},
		{"within the limit", 0, 150, false, true, []int64{0}},
		{"one batch past the limit when first", 0, 1, true, true, []int64{0}},
		{"nothing past the limit when not first", 0, 1, false, true, nil},
		{"nothing when no budget is left", 0, 0, false, true, nil},
		{"at the end", 8, 1 << 20, true, true, nil},
		{"past the end", 20, 1 << 20, true, true, nil},
		{"a negative offset", -1, 1 << 20, true, false, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, ok := p.Read(tc.offset, tc.limit, tc.first)
			if ok != tc.ok || r.End != 8 {
				t.Fatalf("ok %v, end %d; want %v, 8", ok, r.End, tc.ok)
			}
			if (r.Part == nil) != (tc.bases == nil) {
				t.Fatalf("part %+v, want %d batches", r.Part, len(tc.bases))
			}
			var bases []int64
			if r.Part != nil {
				if len(r.Part.Pieces) != 2*len(tc.bases) || r.Part.Size != int64(100*len(tc.bases)) {
					t.Fatalf("%d pieces of %d bytes, want %d batches", len(r.Part.Pieces), r.Part.Size, len(tc.bases))
				}
				for i := 0; i < len(r.Part.Pieces); i += 2 {
					off, rest := r.Part.Pieces[i].Bytes, r.Part.Pieces[i+1].Bytes
					if len(off) != 8 || !bytes.Equal(rest, p.Template().Batch[8:]) {
						t.Fatalf("batch %d is not a base offset and the template's remainder", i/2)
					}
					bases = append(bases, int64(binary.BigEndian.Uint64(off)))
				}
			}
			if !slices.Equal(bases, tc.bases) {
				t.Fatalf("batches at %v, want %v", bases, tc.bases)
			}
		})
	}
}

func TestReadBeforeAnyProduce(t *testing.T) {
	var p Partition
	if r, ok := p.Read(0, 1<<20, true); !ok || r.End != 0 || r.Part != nil {
		t.Fatalf("read of an empty partition: %+v %v", r, ok)
	}
}

func TestWritingKeepsEveryBatch(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t-0")
	if err := os.WriteFile(path, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	p := Writing(path)
	if err := p.Err(); err != nil {
		t.Fatal(err)
	}
	var want bytes.Buffer
	want.WriteString("old")
	for i, fill := range []byte{'a', 'b', 'c'} {
		in := batch(40+i, fill)
		if err := p.Keep(in); err != nil {
			t.Fatal(err)
		}
		p.Append(in, 1, 0)
		want.Write(in)
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want.Bytes()) {
		t.Fatalf("file holds %d bytes, want %d: %q", len(got), want.Len(), got)
	}
	if p.End() != 3 {
		t.Fatalf("end %d, want 3", p.End())
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if err := p.Keep(batch(8, 'z')); err == nil {
		t.Fatal("Keep after Close wrote")
	}
	// The directory is made; a file where it should be fails every Keep.
	dir := t.TempDir()
	made := Writing(filepath.Join(dir, "made", "t-0"))
	if err := made.Keep(batch(8, 'a')); err != nil {
		t.Fatal(err)
	}
	made.Close()
	if err := os.WriteFile(filepath.Join(dir, "file"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	bad := Writing(filepath.Join(dir, "file", "t-0"))
	if bad.Err() == nil || bad.Keep(batch(8, 'a')) == nil {
		t.Fatalf("Writing under a file: Err %v, and Keep did not fail", bad.Err())
	}
}

func TestKeepWithoutAFileKeepsNothing(t *testing.T) {
	var p Partition
	if err := p.Keep(batch(8, 'a')); err != nil {
		t.Fatal(err)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
}
