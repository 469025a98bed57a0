package log

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"
)

// recover rebuilds the in-memory state from the files in l.dir.
//
// The rule: batches below the checkpoint's recovery point were fsynced and
// are trusted from their headers (indexes are loaded when they check out,
// rebuilt otherwise). From the recovery point on, every batch is read whole
// and must have a correct CRC and start after the one before ends (the
// cleaner leaves gaps inside segments; segments still follow on exactly).
// The first batch that fails marks a torn or corrupt tail: the segment is
// cut there and every later segment deleted, so the log is always a valid
// prefix of what was written, and contains everything that was fsynced.
func (l *Log) recover() error {
	ck, haveCk := readCheckpoint(l.dir)
	if haveCk {
		l.openHW = ck.highWatermark
		l.hw.Store(ck.highWatermark)
	}
	// A cleaner's swap cut short is finished or rolled back first (swap.go).
	entries, err := l.finishSwaps()
	if err != nil {
		return err
	}
	var bases []int64
	logs := map[int64]bool{}
	for _, e := range entries {
		name := e.Name()
		if base, ok := parseSegmentName(name); ok {
			bases = append(bases, base)
			logs[base] = true
		}
	}
	// Index files without a segment are leftovers of a deletion.
	for _, e := range entries {
		name := e.Name()
		for _, suffix := range []string{indexSuffix, timeIndexSuffix, txnIndexSuffix} {
			if base, ok := parseSegmentName(strings.TrimSuffix(name, suffix) + logSuffix); ok && strings.HasSuffix(name, suffix) && !logs[base] {
				_ = os.Remove(filepath.Join(l.dir, name))
			}
		}
	}
	sort.Slice(bases, func(i, j int) bool { return bases[i] < bases[j] })
	rp := int64(0)
	if haveCk {
		rp = ck.recoveryPoint
	}
	now := l.env().now()
	var buf []byte
	var cut bool
	var toSync []*segment
	for i, base := range bases {
		prefix := segmentPrefix(l.dir, base)
		if cut || (len(l.segs) > 0 && base != l.segs[len(l.segs)-1].next) {
			if !cut {
				l.env().logger.Warn("log: segment does not continue the log; deleting it and later segments", "dir", l.dir, "base", base)
			}
			cut = true
			(&segment{prefix: prefix}).removeFiles()
			continue
		}
		h, err := openSegFile(l.env().files, prefix+logSuffix, os.O_RDWR)
		if err != nil {
			return err
		}
		seg := &segment{base: base, prefix: prefix, h: h, maxTs: -1}
		l.segs = append(l.segs, seg)
		// Pinned (openSegFile) until the segment is recovered.
		f, err := h.file(false)
		if err != nil {
			return err
		}
		fi, err := f.Stat()
		if err != nil {
			return err
		}
		size := fi.Size()
		wholeTrusted := i+1 < len(bases) && bases[i+1] <= rp
		st := scanStart{next: base, maxTs: -1}
		ix, ixErr := loadIndex(prefix+indexSuffix, prefix+timeIndexSuffix, size)
		if ixErr == nil && len(ix.entries) > 0 {
			// Resume from the last entry we may trust: the last one for a
			// segment wholly below the recovery point, else the last one at
			// or below it, so everything past it is verified.
			n := len(ix.entries)
			if !wholeTrusted {
				n = sort.Search(len(ix.entries), func(j int) bool { return base+int64(ix.entries[j].rel) > rp })
			}
			if n > 0 {
				e := ix.entries[n-1]
				st = scanStart{pos: int64(e.pos), next: base + int64(e.rel), maxTs: e.maxTsBef, entries: ix.entries[:n], indexed: true}
			}
		}
		r, b, err := seg.scan(f, st, size, rp, l.cfg.Load().IndexIntervalBytes, buf)
		buf = b
		if err != nil {
			return err
		}
		seg.size, seg.next, seg.maxTs, seg.ix, seg.sinceIx = r.validEnd, r.next, r.maxTs, r.ix, r.sinceIx
		seg.created = now
		if first, err := firstBatchTimestamp(f, seg.size); err == nil && first >= 0 {
			seg.created = time.UnixMilli(first)
		}
		if r.validEnd < size {
			if zeroedTail(f, r.validEnd, size) {
				l.env().logger.Info("log: cutting zeros written ahead of the end", "dir", l.dir, "segment", base, "valid_bytes", r.validEnd, "file_bytes", size, "end_offset", r.next)
			} else if r.next < rp {
				l.env().logger.Error("log: data below the recovery point is unreadable; truncating", "dir", l.dir, "segment", base, "offset", r.next, "recovery_point", rp)
			} else {
				l.env().logger.Warn("log: truncating torn or corrupt tail", "dir", l.dir, "segment", base, "valid_bytes", r.validEnd, "file_bytes", size, "end_offset", r.next)
			}
			if err := f.Truncate(r.validEnd); err != nil {
				return fmt.Errorf("log: truncate torn tail: %w", err)
			}
			seg.dirty = true
			toSync = append(toSync, seg)
			cut = true
		}
		// Fsynced: a segment with batches past the recovery point, which
		// nothing has fsynced as far as the checkpoint knows. Its index
		// written again: one not as the scan rebuilt it (a segment with
		// no entry has no index files until it gets one). A log closed
		// cleanly has neither.
		if r.next > rp && !slices.Contains(toSync, seg) {
			toSync = append(toSync, seg)
		}
		badIndex := ixErr != nil && !errors.Is(ixErr, fs.ErrNotExist)
		if r.stopped || badIndex || !slices.Equal(r.ix.entries, ix.entries) {
			seg.dirty = true
		}
		h.unpin()
	}
	start := ck.logStartOffset
	if len(l.segs) == 0 {
		seg, err := createSegment(l.env().files, l.dir, start, now)
		if err != nil {
			return err
		}
		seg.dirty = true // a new file: fsynced, with its index and the directory
		toSync, cut = append(toSync, seg), true
		l.segs = []*segment{seg}
	}
	last := l.segs[len(l.segs)-1]
	l.leo = last.next
	l.logStart = min(max(start, l.segs[0].base), l.leo)
	if err := l.recoverProducers(rp, entries); err != nil {
		return err
	}
	// Everything now in the log passed recovery; fsync what the
	// checkpoint does not cover, so that it counts as durable. A log
	// closed cleanly has nothing to write: a restart costs it no fsync.
	for _, s := range l.segs {
		if slices.Contains(toSync, s) {
			if err := l.env().files.retry(func() error { return s.h.do((*os.File).Sync) }); err != nil {
				return err
			}
		}
		if s.dirty {
			if err := l.env().files.retry(s.writeIndex); err != nil {
				return err
			}
			s.dirty = false
		}
		s.synced = s.size
	}
	l.durable.Store(l.leo)
	end := checkpoint{recoveryPoint: l.leo, logStartOffset: l.logStart, highWatermark: l.hw.Load()}
	if cut || !haveCk || ck.recoveryPoint > l.leo || ck.logStartOffset != end.logStartOffset || ck.highWatermark != end.highWatermark {
		// Written now: the checkpoint would not be true of this log.
		if err := l.env().files.retry(func() error { return writeCheckpoint(l.dir, end) }); err != nil {
			return err
		}
		l.recoveryPoint = l.leo
	} else {
		// Still true (everything below its recovery point is durable);
		// a log killed after its last appends gets a recovery point at
		// its end from its next checkpointing flush, off the start-up.
		l.recoveryPoint = ck.recoveryPoint
	}
	l.ckptHW = l.hw.Load()
	l.env().logger.Debug("log: opened", "dir", l.dir, "segments", len(l.segs), "log_start_offset", l.logStart, "log_end_offset", l.leo)
	return nil
}

// zeroedTail reports whether the file holds only zeros from pos to its
// end: what fill wrote ahead of a segment's end, which is no tear. The
// cut is the same either way; only what recovery says about it differs.
func zeroedTail(f *os.File, pos, size int64) bool {
	buf := make([]byte, 32<<10)
	for pos < size {
		n, err := f.ReadAt(buf[:min(int64(len(buf)), size-pos)], pos)
		for _, c := range buf[:n] {
			if c != 0 {
				return false
			}
		}
		if err != nil {
			return false
		}
		pos += int64(n)
	}
	return true
}

func firstBatchTimestamp(f *os.File, size int64) (int64, error) {
	var h header
	if err := readHeaderAt(f, 0, size, &h); err != nil {
		return -1, err
	}
	return h.maxTs, nil
}
