package broker

import (
	"encoding/binary"
	"hash/crc32"
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
// Such a batch, when uncompressed, goes out trimmed instead: a copy that
// keeps the header's base offset, last offset delta and timestamps, and
// only the records whose offsets are acquired, byte for byte. Its record
// count, length and CRC are the copy's own. This is the shape of a batch
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

// trimBatch returns a copy of the whole v2 batch raw that keeps only the
// records whose offsets are in acq (sorted, not overlapping). ok is false
// when the batch is compressed, a control batch or malformed, or when the
// copy would keep every record or none: the caller then sends raw as it
// is. raw is only read.
func trimBatch(raw []byte, acq []share.AcquiredRange) (out []byte, ok bool) {
	h, err := wlog.ParseBatchHeader(raw)
	if err != nil || h.Magic != 2 || int(h.Length) != len(raw) ||
		h.Compression() != wlog.CompressionNone || h.IsControl() || len(acq) == 0 {
		return nil, false
	}
	body := raw[wlog.BatchHeaderSize:]
	lastWanted := acq[len(acq)-1].Last
	// spans are the byte runs of kept records, [start, end) in body.
	var spans [][2]int
	kept, size := int32(0), 0
	pos, j, run := 0, 0, -1
	for i := int32(0); i < h.NumRecords; i++ {
		start := pos
		n, k := binary.Varint(body[pos:])
		if k <= 0 || n < 1 || n > int64(len(body)-pos-k) {
			return nil, false
		}
		rec := body[pos+k : pos+k+int(n)]
		pos += k + int(n)
		// attributes (1 byte), timestamp delta, offset delta.
		_, k1 := binary.Varint(rec[1:])
		if k1 <= 0 {
			return nil, false
		}
		delta, k2 := binary.Varint(rec[1+k1:])
		if k2 <= 0 {
			return nil, false
		}
		off := h.BaseOffset + delta
		if off > lastWanted {
			pos = start
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
		return nil, false
	}
	out = make([]byte, wlog.BatchHeaderSize, wlog.BatchHeaderSize+size)
	copy(out, raw[:wlog.BatchHeaderSize])
	for _, s := range spans {
		out = append(out, body[s[0]:s[1]]...)
	}
	binary.BigEndian.PutUint32(out[trimAt.length:], uint32(len(out)-trimAt.lengthOverhead))
	binary.BigEndian.PutUint32(out[trimAt.count:], uint32(kept))
	binary.BigEndian.PutUint32(out[trimAt.crc:], crc32.Checksum(out[trimAt.attributes:], trimCRCTable))
	return out, true
}

// trimReadBufs holds the buffers batches are read into for trimming; a
// trimmed copy never aliases them.
var trimReadBufs sync.Pool

// trimmedBatch reads the batch at fr and trims it to acq; ok is false when
// it cannot be read or trimmed (the caller sends the file range).
func trimmedBatch(fr wlog.FileRange, acq []share.AcquiredRange) ([]byte, bool) {
	var buf []byte
	if p, _ := trimReadBufs.Get().(*[]byte); p != nil {
		buf = *p
	}
	if int64(cap(buf)) < fr.Len {
		buf = make([]byte, fr.Len)
	}
	buf = buf[:fr.Len]
	defer trimReadBufs.Put(&buf)
	if _, err := fr.File.ReadAt(buf, fr.Pos); err != nil {
		return nil, false
	}
	return trimBatch(buf, acq)
}
