package sharegroup

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"os"
	"sync"

	wlog "weir/internal/log"
	"weir/internal/share"
)

// A ShareFetch answers with the log batches that hold the acquired
// records. When a batch is acquired whole it goes out as a file range,
// without a copy. When only part of it is (share.acquire.mode=record_limit
// slices batches to max.poll.records; a release or a lock expiry leaves
// holes), sending it whole makes the client read, check and decode every
// record of the batch to keep a few: with the producer's 256 KB batches
// and 500-record polls, four fifths of every answer were thrown away.
//
// Such a batch, when uncompressed, goes out trimmed instead: a header that
// keeps the base offset, last offset delta and timestamps, followed by
// only the records whose offsets are acquired, byte for byte (sent from
// the batch as read, without a copy). The record count, length and CRC
// are the trimmed batch's own. This is the shape of a batch
// from a compacted log (records missing, base offset and last offset delta
// kept), which every client reads; the acquired ranges still say which
// offsets are the member's. Compressed batches and control batches go out
// whole: trimming them would mean recompressing.

// The fields of a v2 batch header a trim rewrites, by position: the
// length (which does not count the 12 bytes up to and including itself),
// the CRC-32C (of everything from the attributes on) and the record count.
var trimAt = struct{ length, crc, attributes, count, lengthOverhead int }{8, 17, 21, 57, 12}

var trimCRCTable = crc32.MakeTable(crc32.Castagnoli)

// coversBatch reports whether acq (sorted, not overlapping) holds every
// offset from b.Base to b.Last.
func coversBatch(acq []share.AcquiredRange, b share.Batch) bool {
	next := b.Base
	for _, r := range acq {
		if r.First > next {
			return false
		}
		next = max(next, r.Last+1)
		if next > b.Last {
			return true
		}
	}
	return false
}

// trimHint is where a walk of a batch's records may start: record number
// index, of offset offset, begins at byte at of the records. The zero hint
// is the first record.
type trimHint struct {
	offset int64
	at     int
	index  int32
}

// trimBatch returns the whole v2 batch raw trimmed to the records whose
// offsets are in acq (sorted, not overlapping), as pieces to send one
// after the other: a new header, then the runs of kept records as slices
// of raw, which is only read and must not change while the pieces are in
// use. ok is false when the batch is compressed, a control batch or
// malformed, or when the trim would keep every record or none: the caller
// then sends raw as it is.
//
// The walk starts at from when no acquired offset lies before it, and
// next is where the walk stopped: a record_limit consumer takes a batch
// in slices, each starting where the last one ended, so the next trim of
// the batch starts there instead of at its first record.
func trimBatch(raw []byte, acq []share.AcquiredRange, from trimHint) (out [][]byte, next trimHint, ok bool) {
	h, err := wlog.ParseBatchHeader(raw)
	if err != nil || h.Magic != 2 || int(h.Length) != len(raw) ||
		h.Compression() != wlog.CompressionNone || h.IsControl() || len(acq) == 0 {
		return nil, trimHint{}, false
	}
	body := raw[wlog.BatchHeaderSize:]
	lastWanted := acq[len(acq)-1].Last
	// spans are the byte runs of kept records, [start, end) in body.
	var spans [][2]int
	kept, size := int32(0), 0
	pos, j, run := 0, 0, -1
	off, i := h.BaseOffset-1, int32(0)
	if from.at > 0 && from.at <= len(body) && from.offset > h.BaseOffset && from.offset <= acq[0].First && from.index < h.NumRecords {
		pos, off, i = from.at, from.offset-1, from.index
	}
	// In a batch without gaps (offset deltas 0 to count-1, as the log
	// validates on append) a record's offset is its place; otherwise it is
	// read from the record.
	dense := h.LastOffsetDelta == h.NumRecords-1
	for ; i < h.NumRecords; i++ {
		start := pos
		n, k := binary.Varint(body[pos:])
		if k <= 0 || n < 1 || n > int64(len(body)-pos-k) {
			return nil, trimHint{}, false
		}
		rec := body[pos+k : pos+k+int(n)]
		pos += k + int(n)
		off++
		if !dense {
			// attributes (1 byte), timestamp delta, offset delta.
			_, k1 := binary.Varint(rec[1:])
			if k1 <= 0 {
				return nil, trimHint{}, false
			}
			delta, k2 := binary.Varint(rec[1+k1:])
			if k2 <= 0 {
				return nil, trimHint{}, false
			}
			off = h.BaseOffset + delta
		}
		if off > lastWanted {
			pos = start
			next = trimHint{offset: off, at: start, index: i}
			break
		}
		for j < len(acq) && acq[j].Last < off {
			j++
		}
		keep := j < len(acq) && acq[j].First <= off
		switch {
		case keep && run < 0:
			run = start
		case !keep && run >= 0:
			spans = append(spans, [2]int{run, start})
			size += start - run
			run = -1
		}
		if keep {
			kept++
		}
	}
	if run >= 0 {
		spans = append(spans, [2]int{run, pos})
		size += pos - run
	}
	if kept == 0 || kept == h.NumRecords {
		return nil, next, false
	}
	head := make([]byte, wlog.BatchHeaderSize)
	copy(head, raw)
	binary.BigEndian.PutUint32(head[trimAt.length:], uint32(wlog.BatchHeaderSize+size-trimAt.lengthOverhead))
	binary.BigEndian.PutUint32(head[trimAt.count:], uint32(kept))
	out = make([][]byte, 0, 1+len(spans))
	out = append(out, head)
	crc := crc32.Update(0, trimCRCTable, head[trimAt.attributes:])
	for _, s := range spans {
		out = append(out, body[s[0]:s[1]])
		crc = crc32.Update(crc, trimCRCTable, body[s[0]:s[1]])
	}
	binary.BigEndian.PutUint32(head[trimAt.crc:], crc)
	return out, next, true
}

// trimReadSlots is how many batches trimReads keeps: a few per share
// partition being drained in record_limit mode at once.
const trimReadSlots = 16

// trimReads keeps the last batches read for trimming, with the hint of
// their last walk. A record_limit consumer slices a 256 KB batch of small
// records into several polls; the batch is read from its segment once,
// not at every poll. Before an entry is used its header is read again and
// compared, so a batch truncated and rewritten at the same place is never
// served from memory. A kept batch is never written to, so trims read it
// without the lock.
type trimReads struct {
	mu      sync.Mutex
	entries [trimReadSlots]trimRead
	next    int
}

type trimRead struct {
	file *os.File
	pos  int64
	raw  []byte
	hint trimHint
}

// trimmed reads the batch at fr (or finds it kept) and trims it to acq;
// ok is false when it cannot be read or trimmed (the caller sends the
// file range).
func (c *trimReads) trimmed(fr wlog.FileRange, acq []share.AcquiredRange) ([][]byte, bool) {
	raw, hint, slot := c.lookup(fr)
	if raw == nil {
		raw = make([]byte, fr.Len)
		if _, err := fr.File.ReadAt(raw, fr.Pos); err != nil {
			return nil, false
		}
	}
	out, next, ok := trimBatch(raw, acq, hint)
	c.mu.Lock()
	defer c.mu.Unlock()
	if slot < 0 {
		slot = c.next
		c.next = (c.next + 1) % trimReadSlots
	} else if e := &c.entries[slot]; e.file != fr.File || e.pos != fr.Pos {
		return out, ok // replaced meanwhile
	}
	c.entries[slot] = trimRead{file: fr.File, pos: fr.Pos, raw: raw, hint: next}
	return out, ok
}

// lookup finds the kept copy of the batch at fr, checking its header
// against the file; slot is -1 when there is none.
func (c *trimReads) lookup(fr wlog.FileRange) ([]byte, trimHint, int) {
	c.mu.Lock()
	slot := -1
	var e trimRead
	for i := range c.entries {
		if c.entries[i].file == fr.File && c.entries[i].pos == fr.Pos && int64(len(c.entries[i].raw)) == fr.Len {
			slot, e = i, c.entries[i]
			break
		}
	}
	c.mu.Unlock()
	if slot < 0 {
		return nil, trimHint{}, -1
	}
	var head [wlog.BatchHeaderSize]byte
	if _, err := fr.File.ReadAt(head[:], fr.Pos); err != nil || !bytes.Equal(head[:], e.raw[:wlog.BatchHeaderSize]) {
		return nil, trimHint{}, slot
	}
	return e.raw, e.hint, slot
}
