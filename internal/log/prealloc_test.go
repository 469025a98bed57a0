//go:build linux

package log

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// fileBlocks returns a file's size and the bytes of disk blocks it holds.
func fileBlocks(t *testing.T, path string) (size, allocated int64) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size(), fi.Sys().(*syscall.Stat_t).Blocks * 512
}

// pageUp rounds n up to the 4 KiB block size of the filesystems tests run
// on.
func pageUp(n int64) int64 { return (n + 4095) &^ 4095 }

// slack is what a file may hold past its data without any reservation: a
// block or two of extent tree once the file is in several pieces.
const slack = 64 << 10

// requireFallocate skips when the test directory's filesystem cannot
// reserve blocks: there weir appends as it would with the setting off.
func requireFallocate(t *testing.T, dir string) {
	t.Helper()
	f, err := os.Create(filepath.Join(dir, "probe"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := reserveBlocks(f, 0, 1<<20); err != nil {
		t.Skipf("filesystem of %s has no fallocate: %v", dir, err)
	}
	if size, _ := fileBlocks(t, f.Name()); size != 0 {
		t.Fatalf("reserveBlocks moved the end of the file to %d", size)
	}
	os.Remove(f.Name())
}

func activeSegment(l *Log) (path string, size, alloc int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.segs[len(l.segs)-1]
	return s.prefix + logSuffix, s.size, s.alloc
}

func TestPreallocateReservesAheadAndGivesBack(t *testing.T) {
	for _, tc := range []struct {
		name        string
		preallocate bool
	}{
		{"on", true},
		{"off", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			requireFallocate(t, dir)
			clock := newFakeClock()
			cfg := DefaultConfig()
			cfg.SegmentBytes = 3 << 20
			cfg.Preallocate = tc.preallocate
			l := openTestLog(t, dir, cfg, clock)
			var mostAhead int64
			var written [][]byte
			for range 80 { // 80 x ~65 KB: one size roll, then 2 MB into the next segment
				written = append(written, appendN(t, l, clock, 1, 64, 1000)...)
				path, size, _ := activeSegment(l)
				fsize, allocated := fileBlocks(t, path)
				if ahead := fsize - size; ahead < 0 || ahead > fillChunk || (!tc.preallocate && ahead != 0) {
					t.Fatalf("file size %d, segment size %d: only zeros written ahead may move the end of the file", fsize, size)
				}
				mostAhead = max(mostAhead, allocated-pageUp(size))
			}
			if tc.preallocate && mostAhead < reserveFrom {
				t.Fatalf("at most %d bytes of blocks past the end, want at least %d reserved ahead", mostAhead, reserveFrom)
			}
			if !tc.preallocate && mostAhead > slack {
				t.Fatalf("%d bytes of blocks past the end with preallocate off", mostAhead)
			}
			// segment.ms seals the active segment with its reservation
			// well ahead of its end (a size roll leaves less than a batch).
			clock.add(cfg.SegmentTime)
			written = append(written, appendN(t, l, clock, 1, 64, 1000)...)
			l.mu.Lock()
			nsegs := len(l.segs)
			var sealed []string
			for _, s := range l.segs[:nsegs-1] {
				sealed = append(sealed, s.prefix+logSuffix)
			}
			l.mu.Unlock()
			if nsegs < 3 {
				t.Fatalf("%d segments: the test wants a size roll and a time roll", nsegs)
			}
			for _, path := range sealed {
				if size, allocated := fileBlocks(t, path); allocated > pageUp(size)+slack {
					t.Fatalf("sealed segment %s holds %d bytes of blocks for %d bytes: the reservation was not given back", filepath.Base(path), allocated, size)
				}
			}
			closeTrimmedAndReopen(t, l, dir, cfg, clock, written)
		})
	}
}

// A process killed while blocks were reserved leaves them past the end of
// the file: the file's size is still the end of the last write, so
// recovery finds exactly the batches written, and the blocks go back once
// the segment is sealed or closed after the restart.
func TestReservedBlocksSurviveACrash(t *testing.T) {
	dir := t.TempDir()
	requireFallocate(t, dir)
	clock := newFakeClock()
	cfg := DefaultConfig()
	l := openTestLog(t, dir, cfg, clock)
	written := appendN(t, l, clock, 20, 64, 1000)
	path, size, alloc := activeSegment(l)
	if alloc <= size {
		t.Fatalf("reserved to %d for a %d-byte segment: nothing reserved ahead", alloc, size)
	}
	crash(l)
	// closeFiles gave the blocks back; a killed process would not have.
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := reserveBlocks(f, size, 4<<20); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if _, allocated := fileBlocks(t, path); allocated < size+4<<20 {
		t.Fatalf("set-up: %d bytes of blocks", allocated)
	}

	l = openTestLog(t, dir, cfg, clock)
	got := readAll(t, l, 0)
	if len(got) != len(written) {
		t.Fatalf("recovered %d batches, want %d", len(got), len(written))
	}
	written = append(written, appendN(t, l, clock, 5, 64, 1000)...)
	closeTrimmedAndReopen(t, l, dir, cfg, clock, written)
}

// closeTrimmedAndReopen closes l, checks that its active segment gave its
// reservation back, and checks that the reopened log holds written.
func closeTrimmedAndReopen(t *testing.T, l *Log, dir string, cfg Config, clock *fakeClock, written [][]byte) {
	t.Helper()
	path, _, _ := activeSegment(l)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if size, allocated := fileBlocks(t, path); allocated > pageUp(size)+slack {
		t.Fatalf("closed active segment holds %d bytes of blocks for %d bytes", allocated, size)
	}
	l = openTestLog(t, dir, cfg, clock)
	defer l.Close()
	if got := readAll(t, l, 0); len(got) != len(written) {
		t.Fatalf("reopened log has %d batches, want %d", len(got), len(written))
	}
}

// Appends past the first fillChunk of a segment find zeros written ahead
// of them, at most a chunk past the end; sealing and closing cut them
// off; a process killed with zeros past the end recovers exactly the
// batches written, and so does a follower's truncation into the zeros'
// segment.
func TestZerosAheadOfTheEnd(t *testing.T) {
	dir := t.TempDir()
	clock := newFakeClock()
	cfg := DefaultConfig()
	cfg.SegmentBytes = 2 << 20
	l := openTestLog(t, dir, cfg, clock)
	var written [][]byte
	var filled bool
	for range 40 { // 40 x ~5 KB: the first 128 KiB plainly, then zeros ahead
		written = append(written, appendN(t, l, clock, 1, 5, 1000)...)
		path, size, _ := activeSegment(l)
		fsize, _ := fileBlocks(t, path)
		if ahead := fsize - size; ahead < 0 || ahead >= fillChunk || (size < fillChunk && ahead != 0) {
			t.Fatalf("file size %d for a %d-byte segment: want zeros ahead only past %d bytes, less than a chunk", fsize, size, fillChunk)
		}
		filled = filled || fsize > size
		if fsize > size && !zeroedTail(openRead(t, path), size, fsize) {
			t.Fatalf("bytes past the end of %d-byte segment are not zeros", size)
		}
	}
	if !filled {
		t.Fatal("no zeros were written ahead of the end")
	}
	// A follower's truncation cuts the zeros with the batches past it.
	if err := l.Truncate(int64(5 * (len(written) - 3))); err != nil { // 5 records a batch
		t.Fatal(err)
	}
	written = written[:len(written)-3]
	path, size, _ := activeSegment(l)
	if fsize, _ := fileBlocks(t, path); fsize != size {
		t.Fatalf("file size %d after a truncation to %d bytes", fsize, size)
	}
	written = append(written, appendN(t, l, clock, 3, 5, 1000)...)
	path, size, _ = activeSegment(l)
	fsize, _ := fileBlocks(t, path)
	if fsize <= size {
		t.Fatalf("file size %d for a %d-byte segment: no zeros ahead after the truncation", fsize, size)
	}
	crash(l)
	// crash cut the zeros as a clean close does; a killed process would
	// have left them.
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(fsize); err != nil {
		t.Fatal(err)
	}
	f.Close()

	l = openTestLog(t, dir, cfg, clock)
	if got := readAll(t, l, 0); len(got) != len(written) {
		t.Fatalf("recovered %d batches, want %d", len(got), len(written))
	}
	if _, size, _ := activeSegment(l); size >= fsize {
		t.Fatalf("recovered segment of %d bytes: the zeros up to %d were kept", size, fsize)
	}
	written = append(written, appendN(t, l, clock, 3, 5, 1000)...)
	// Sealing cuts the zeros: the sealed segment ends at its last batch.
	clock.add(cfg.SegmentTime + time.Second) // past the first batch's max timestamp
	written = append(written, appendN(t, l, clock, 1, 5, 1000)...)
	if fsize, _ := fileBlocks(t, path); fsize != sizeOf(written[:len(written)-1]) {
		t.Fatalf("sealed segment file of %d bytes, its batches hold %d", fsize, sizeOf(written[:len(written)-1]))
	}
	closeTrimmedAndReopen(t, l, dir, cfg, clock, written)
}

func openRead(t *testing.T, path string) *os.File {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

func sizeOf(batches [][]byte) int64 {
	var n int64
	for _, b := range batches {
		n += int64(len(b))
	}
	return n
}
