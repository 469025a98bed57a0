package log

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Segment files are named after their base offset, zero padded to 20
// digits so that a directory listing sorts them: 00000000000000000042.log.
const (
	logSuffix       = ".log"
	indexSuffix     = ".index"
	timeIndexSuffix = ".timeindex"
)

func segmentPrefix(dir string, base int64) string {
	return filepath.Join(dir, fmt.Sprintf("%020d", base))
}

func parseSegmentName(name string) (int64, bool) {
	if !strings.HasSuffix(name, logSuffix) {
		return 0, false
	}
	digits := strings.TrimSuffix(name, logSuffix)
	if len(digits) != 20 {
		return 0, false
	}
	base, err := strconv.ParseInt(digits, 10, 64)
	return base, err == nil && base >= 0
}

// segment is one .log file of consecutive batches plus its sparse index.
// All fields are guarded by the owning Log's mutex; readers copy what they
// need (see view) and then read the file without the lock.
type segment struct {
	base    int64
	prefix  string   // path without suffix
	h       *segFile // the .log file, opened and closed by its Files cache
	size    int64    // bytes of valid batches
	next    int64    // offset after the last batch
	maxTs   int64    // largest batch max timestamp, -1 when empty
	ix      index
	sinceIx int       // bytes appended since the last index entry
	created time.Time // for segment.ms
	dirty   bool      // index files are behind the in-memory index
	synced  int64     // size as of the last fsync
	// alloc is how far the file's blocks are reserved (see reserve); 0
	// until this process reserves any. noReserve stops trying after the
	// filesystem refused.
	alloc     int64
	noReserve bool
	// filled is how far the file holds zeros written ahead of size (see
	// fill), size when none; noFill stops filling after a failed write.
	filled int64
	noFill bool
}

func (s *segment) empty() bool { return s.size == 0 }

// view is an immutable snapshot of a segment for lock-free reads. It
// pins the segment's file handle (the cache does not close it) until
// unpinViews; f is the open file once file has been called.
type view struct {
	base    int64
	h       *segFile
	f       *os.File
	size    int64
	next    int64
	entries []indexEntry
	aborted []AbortedTxn
}

// view copies the segment and pins its file. mu held.
func (s *segment) view() view {
	s.h.pin()
	return view{base: s.base, h: s.h, size: s.size, next: s.next, entries: s.ix.entries, aborted: s.ix.aborted}
}

// file opens the view's file (reopening it if the cache closed it).
func (v *view) file() (*os.File, error) {
	if v.f == nil {
		f, err := v.h.file(false)
		if err != nil {
			return nil, err
		}
		v.f = f
	}
	return v.f, nil
}

// unpinViews releases the pins view took.
func unpinViews(vs []view) {
	for i := range vs {
		vs[i].h.unpin()
	}
}

// readHeader is readHeaderAt on the view's file.
func (v *view) readHeader(pos, end int64, h *header) error {
	if pos >= end {
		return io.EOF
	}
	f, err := v.file()
	if err != nil {
		return err
	}
	return readHeaderAt(f, pos, end, h)
}

func createSegment(c *Files, dir string, base int64, now time.Time) (*segment, error) {
	prefix := segmentPrefix(dir, base)
	h, err := openSegFile(c, prefix+logSuffix, os.O_RDWR|os.O_CREATE|os.O_TRUNC)
	if err != nil {
		return nil, err
	}
	h.unpin()
	// Stale index files of an earlier segment with the same base must not
	// be mistaken for this one's after a crash.
	_ = os.Remove(prefix + indexSuffix)
	_ = os.Remove(prefix + timeIndexSuffix)
	_ = os.Remove(prefix + txnIndexSuffix)
	return &segment{base: base, prefix: prefix, h: h, next: base, maxTs: -1, created: now}, nil
}

// Block reservation ahead of the active segment's end. On ext4 (and other
// delayed-allocation filesystems) a write past the allocated blocks takes
// the inode's allocation lock, which the kernel's writeback holds while it
// allocates blocks for the same file's dirty pages; with gigabytes of dirty
// page cache that wait reached 1.4 s per append here (docs/DESIGN.md,
// "Block reservation ahead of the end"). Writes into reserved blocks take
// no such lock. A segment starts reserving once it holds reserveFrom bytes
// (so that many small partitions cost no disk) and then keeps as much
// reserved ahead as it holds, up to reserveMax, never past the segment
// size limit.
const (
	reserveFrom = 1 << 20
	reserveMax  = 16 << 20
)

// reserve makes sure the blocks for a write of n bytes at the end are
// reserved, extending the reservation by a chunk when they are not. A
// filesystem that refuses turns reservation off for the segment; the write
// then allocates as it goes, as it would without it.
func (s *segment) reserve(f *os.File, n, limit int64) {
	end := s.size + n
	if s.noReserve || s.size < reserveFrom || end <= s.alloc {
		return
	}
	from := max(s.alloc, s.size)
	to := min(end+min(s.size, reserveMax), max(limit, end))
	if err := reserveBlocks(f, from, to-from); err != nil {
		s.noReserve = true
		return
	}
	s.alloc = to
}

// Zero fill ahead of the active segment's end. A buffered write that
// extends a file into pages the page cache does not hold yet pays for
// each page it adds (allocation, accounting, the filesystem's delayed
// allocation); one large write adds them in large folios at a fraction of
// that. Appends are batches of a few KiB (a producer's batch per
// partition per request), so the segment writes zeros fillChunk at a time
// past its end and its appends then overwrite pages already cached: on
// ext4 5 KiB appends took 700 µs of CPU per MiB without and 360 with
// (docs/DESIGN.md, "Zeros ahead of the end"). It starts once the segment
// holds fillChunk, so small partitions cost nothing, and stops at the
// segment size limit. The zeros move the file's end past the log's, which
// recovery treats as any torn tail: the scan stops at the first header
// that is not a batch and the file is cut there. A sealed or closed
// segment is cut back to its batches (trim).
const fillChunk = 128 << 10

var zeros [fillChunk]byte

// fill makes sure the file holds zeros up to the end of a write of n
// bytes at the end, writing them a chunk at a time. A write that fails is
// cut back and filling stops for the segment; the append then writes as
// it would without.
func (s *segment) fill(f *os.File, n, limit int64) {
	end := s.size + n
	if s.noFill || s.size < fillChunk || end <= s.filled {
		return
	}
	from := max(s.filled, s.size)
	to := min((end+fillChunk-1)/fillChunk*fillChunk, max(limit, end))
	for from < to {
		k := min(to-from, fillChunk)
		if _, err := f.WriteAt(zeros[:k], from); err != nil {
			s.noFill = true
			if f.Truncate(s.size) == nil {
				s.filled = s.size
			}
			return
		}
		from += k
		s.filled = from
	}
}

// trim gives back blocks reserved and zeros written past the end (a
// sealed segment never grows again): truncating to s.size frees what lies
// beyond.
func (s *segment) trim() error {
	if s.alloc <= s.size && s.filled <= s.size {
		return nil
	}
	if err := s.h.do(func(f *os.File) error { return f.Truncate(s.size) }); err != nil {
		return err
	}
	s.cutAt(s.size)
	return nil
}

// cutAt notes that the file was truncated at pos.
func (s *segment) cutAt(pos int64) {
	s.alloc = min(s.alloc, pos)
	s.filled = min(s.filled, pos)
}

// appendBatch writes a stamped batch at the end of the segment and indexes
// it. The batch must start at s.next.
// The file is pinned for the write: the cache may close it between
// appends, never during one.
func (s *segment) appendBatch(b []byte, h *BatchHeader, indexInterval int, reserve bool, limit int64) error {
	f, err := s.h.acquire()
	if err != nil {
		return err
	}
	defer s.h.unpin()
	if reserve {
		s.reserve(f, int64(len(b)), limit)
		s.fill(f, int64(len(b)), limit)
	}
	if _, err := f.WriteAt(b, s.size); err != nil {
		return err
	}
	s.index(h, s.size, int(h.Length), indexInterval)
	s.size += int64(len(b))
	s.next = h.NextOffset()
	return nil
}

// index records a batch written at pos in the in-memory index.
func (s *segment) index(h *BatchHeader, pos int64, length, interval int) {
	if s.sinceIx >= interval && pos > 0 {
		s.ix.entries = append(s.ix.entries, indexEntry{rel: uint32(h.BaseOffset - s.base), pos: uint32(pos), maxTsBef: s.maxTs})
		s.sinceIx = 0
		s.dirty = true
	}
	s.sinceIx += length
	if h.MaxTimestamp > s.maxTs {
		s.maxTs = h.MaxTimestamp
	}
}

// writeIndex persists the in-memory index next to the segment.
func (s *segment) writeIndex() error { return s.writeIndexWith(nil, true) }

// writeIndexWith is writeIndex with the aborted-transaction index
// committed through commit (see writeTxnIndexWith), each file fsynced
// when sync is set.
func (s *segment) writeIndexWith(commit func(func() error) error, sync bool) error {
	if err := writeFile(s.prefix+indexSuffix, s.ix.encodeOffsets(), sync); err != nil {
		return err
	}
	if err := writeTxnIndexWith(s.prefix, s.ix.aborted, commit, sync); err != nil {
		return err
	}
	return writeFile(s.prefix+timeIndexSuffix, s.ix.encodeTimes(), sync)
}

func writeFileSync(path string, b []byte) error { return writeFile(path, b, true) }

// writeFile writes b to path, replacing what it held, and fsyncs it when
// sync is set.
func writeFile(path string, b []byte, sync bool) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	if sync {
		if err := f.Sync(); err != nil {
			f.Close()
			return err
		}
	}
	return f.Close()
}

func (s *segment) removeFiles() {
	for _, suffix := range []string{logSuffix, indexSuffix, timeIndexSuffix, txnIndexSuffix} {
		_ = os.Remove(s.prefix + suffix)
	}
}

// header is a batch header read back from a segment file.
type header struct {
	base    int64
	last    int64
	length  int64
	maxTs   int64
	rawHead [BatchHeaderSize]byte
}

// readHeaderAt reads the batch header at pos. It reports io.EOF when pos is
// at or past end, and an error when the header does not fit before end.
func readHeaderAt(f *os.File, pos, end int64, h *header) error {
	if pos >= end {
		return io.EOF
	}
	if end-pos < BatchHeaderSize {
		return fmt.Errorf("log: partial batch header at %d", pos)
	}
	if _, err := f.ReadAt(h.rawHead[:], pos); err != nil {
		return err
	}
	h.base = int64(binary.BigEndian.Uint64(h.rawHead[offBaseOffset:]))
	length := int64(int32(binary.BigEndian.Uint32(h.rawHead[offBatchLength:]))) + batchLengthOverhead
	h.last = h.base + int64(int32(binary.BigEndian.Uint32(h.rawHead[offLastOffsetDelt:])))
	h.maxTs = int64(binary.BigEndian.Uint64(h.rawHead[offMaxTimestamp:]))
	if length < BatchHeaderSize || length > end-pos || h.rawHead[offMagic] != 2 || h.last < h.base {
		return fmt.Errorf("log: invalid batch header at %d", pos)
	}
	h.length = length
	return nil
}

// offsetPos returns the position of the first batch whose last offset is
// at or past offset, or v.size when there is none.
func (v *view) offsetPos(offset int64) (int64, error) {
	pos := int64(0)
	if offset > v.base {
		if e, ok := floorEntry(v.entries, uint32(min(offset-v.base, 1<<32-1))); ok {
			pos = int64(e.pos)
		}
	}
	var h header
	for {
		err := v.readHeader(pos, v.size, &h)
		if err == io.EOF {
			return v.size, nil
		}
		if err != nil {
			return 0, err
		}
		if h.last >= offset {
			return pos, nil
		}
		pos += h.length
	}
}

// boundaryBefore returns the largest batch boundary at or below limit
// (which must be at least from, itself a boundary).
func (v *view) boundaryBefore(from, limit int64) (int64, error) {
	if limit >= v.size {
		return v.size, nil
	}
	pos := from
	// Jump with the index to the last indexed batch start not past limit.
	if n := len(v.entries); n > 0 {
		lo, hi := 0, n
		for lo < hi {
			mid := (lo + hi) / 2
			if int64(v.entries[mid].pos) <= limit {
				lo = mid + 1
			} else {
				hi = mid
			}
		}
		if lo > 0 && int64(v.entries[lo-1].pos) > pos {
			pos = int64(v.entries[lo-1].pos)
		}
	}
	var h header
	for {
		err := v.readHeader(pos, v.size, &h)
		if err == io.EOF {
			return pos, nil
		}
		if err != nil {
			return 0, err
		}
		if pos+h.length > limit {
			return pos, nil
		}
		pos += h.length
	}
}

// scanResult is what a scan of a segment file found.
type scanResult struct {
	validEnd int64 // position after the last good batch
	next     int64 // offset after the last good batch
	maxTs    int64
	ix       index
	sinceIx  int
	firstTs  int64 // max timestamp of the first batch scanned, -1 if none
	stopped  bool  // the scan stopped before fileSize: torn or corrupt tail
}

// scanStart is where a scan begins: a batch boundary and what is already
// known about the batches before it (from a loaded index entry).
type scanStart struct {
	pos     int64
	next    int64
	maxTs   int64
	entries []indexEntry
	// indexed: the last of entries points at pos, so the batch there
	// already has its entry (the scan continues the index exactly as the
	// appends built it).
	indexed bool
}

// scan walks the segment from st.pos to fileSize, rebuilding the index.
// Batches at or past offset verifyFrom are read whole and must have a
// correct CRC and start after the previous batch ends; the scan stops at the
// first one that does not, which marks a torn or corrupt tail. Batches
// before verifyFrom (below the recovery point, fsynced earlier) are trusted
// from their headers.
func (s *segment) scan(f *os.File, st scanStart, fileSize, verifyFrom int64, interval int, buf []byte) (scanResult, []byte, error) {
	r := scanResult{validEnd: st.pos, next: st.next, maxTs: st.maxTs, firstTs: -1}
	r.ix.entries = append(make([]indexEntry, 0, len(st.entries)+64), st.entries...)
	var h header
	pos := st.pos
	for {
		err := readHeaderAt(f, pos, fileSize, &h)
		if err == io.EOF {
			break
		}
		if err != nil {
			if _, ok := err.(*os.PathError); ok {
				return r, buf, err
			}
			r.stopped = true // torn or garbage header
			break
		}
		verify := h.base >= verifyFrom || r.next >= verifyFrom
		if h.base < r.next {
			// Offsets only grow; a gap is a batch the cleaner removed
			// (or a leader's cleaned batch a follower copied).
			r.stopped = true
			break
		}
		if verify {
			if int64(cap(buf)) < h.length {
				buf = make([]byte, h.length)
			}
			buf = buf[:h.length]
			if _, err := f.ReadAt(buf, pos); err != nil {
				return r, buf, err
			}
			if crc32.Checksum(buf[offAttributes:], castagnoli) != binary.BigEndian.Uint32(buf[offCRC:]) {
				r.stopped = true
				break
			}
		}
		if r.sinceIx >= interval && pos > 0 && !(st.indexed && pos == st.pos) {
			r.ix.entries = append(r.ix.entries, indexEntry{rel: uint32(h.base - s.base), pos: uint32(pos), maxTsBef: r.maxTs})
			r.sinceIx = 0
		}
		r.sinceIx += int(h.length)
		if h.maxTs > r.maxTs {
			r.maxTs = h.maxTs
		}
		if r.firstTs < 0 {
			r.firstTs = h.maxTs
		}
		pos += h.length
		r.next = h.last + 1
		r.validEnd = pos
	}
	return r, buf, nil
}
