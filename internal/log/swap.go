package log

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
)

// Replacing a group of closed segments with one cleaned segment, so that
// a crash at any point leaves either the old segments or the new one.
//
// The cleaned segment takes the group's first base offset as its name
// and ends exactly where the group ended (the cleaner keeps the group's
// last batch, emptied if need be), so segments still follow on from each
// other. On disk:
//
//  1. The cleaned data is written to B.log.cleaned and fsynced.
//  2. B.log.cleaned is renamed to B.log.swap and the directory fsynced:
//     the swap is committed. Before this point recovery deletes the
//     .cleaned file and the old segments stay.
//  3. The index files (offset, time, aborted transactions) of the old
//     segments and the .log files of all but B are removed.
//  4. B.log.swap is renamed over B.log and the directory fsynced.
//  5. In memory, the new segment replaces the group; the old ones are
//     retired (their open files serve reads in flight for
//     FileDeleteDelay). The new segment's index files are written; its
//     aborted-transaction index keeps the old entries whose marker it
//     kept. Were the crash to come before, its offset and time indexes
//     are rebuilt at open, and a missing aborted-transaction index only
//     loses entries of transactions whose records were removed.
//
// Recovery (finishSwaps, at Open) removes every .cleaned file, and for a
// B.log.swap that reads back whole, removes every segment (with its index
// files) whose base lies in [B, end of the swap) and renames the swap to
// B.log: steps 3 and 4 again, which is idempotent. Index files are a
// cache and rebuilt when missing.
//
// Concurrency: the cleaner writes the .cleaned file with no lock. The
// swap (steps 2 to 5) holds segMu, which every other change of closed
// segments takes (truncation, retention, DeleteRecords, Close), and takes
// mu only to check the group is still there and to replace it in memory.

const (
	cleanedSuffix = ".cleaned"
	swapSuffix    = ".swap"
)

// swapStep names a point of the swap where a test can cut it short, as a
// crash would.
type swapStep int

const (
	stepCleanedWritten swapStep = iota // .cleaned complete and fsynced
	stepSwapRenamed                    // renamed to .swap
	stepSwapDurable                    // the directory fsynced: committed
	stepOldRemoved                     // one old file removed (once per file)
	stepRenamedIn                      // .swap renamed to .log
	stepInstalled                      // replaced in memory
	stepIndexed                        // index files written
)

// errSwapFault is what a test's fault returns to cut a swap short.
var errSwapFault = errors.New("log: swap cut short by a test")

// CleanedSegment is a new segment being filled by the cleaner to replace
// the closed segments holding [Base, End). Append batches in offset order,
// then Commit (or Abort). Not safe for concurrent use.
type CleanedSegment struct {
	l           *Log
	end         int64
	old         []*segment
	aborted     []AbortedTxn   // the old segments' aborted-transaction entries
	markers     map[int64]bool // offsets of the markers kept
	truncations uint64
	seg         *segment
	path        string   // the .cleaned file
	f           *os.File // open on path; the cache's once installed
	buf         []byte   // written at seg.size - len(buf)
	interval    int
	done        bool
}

// NewCleanedSegment starts a segment that will replace the closed
// segments from the one based at base to the one ending at end. They must
// be wholly below the recovery point. ErrStaleClean when the log no
// longer has such segments.
func (l *Log) NewCleanedSegment(base, end int64) (*CleanedSegment, error) {
	l.mu.Lock()
	if l.closed() || l.closing() {
		l.mu.Unlock()
		return nil, ErrClosed
	}
	i, j := l.groupLocked(base, end)
	if i < 0 || end > l.recoveryPoint {
		l.mu.Unlock()
		return nil, fmt.Errorf("%w: no closed segments [%d, %d) below the recovery point %d", ErrStaleClean, base, end, l.recoveryPoint)
	}
	w := &CleanedSegment{
		l:           l,
		end:         end,
		old:         append([]*segment(nil), l.segs[i:j+1]...),
		markers:     map[int64]bool{},
		truncations: l.truncations,
		interval:    l.cfg.Load().IndexIntervalBytes,
		buf:         cleanedBufs.Get().([]byte)[:0],
	}
	for _, s := range w.old {
		w.aborted = append(w.aborted, s.ix.aborted...)
	}
	l.mu.Unlock()
	prefix := segmentPrefix(l.dir, base)
	w.path = prefix + logSuffix + cleanedSuffix
	f, err := l.env().files.openFile(w.path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, err
	}
	w.f = f
	w.seg = &segment{base: base, prefix: prefix, next: base, maxTs: -1, created: l.env().now()}
	return w, nil
}

// groupLocked finds the closed segments from base to end: indexes i..j
// of l.segs, or -1. mu held.
func (l *Log) groupLocked(base, end int64) (int, int) {
	for i, s := range l.segs[:max(len(l.segs)-1, 0)] {
		if s.base != base {
			continue
		}
		for j := i; j < len(l.segs)-1; j++ {
			if l.segs[j].next == end {
				return i, j
			}
		}
	}
	return -1, -1
}

// flushAt is how much the writer buffers before a write.
const flushAt = 1 << 20

// cleanedBufs holds cleaned segments' write buffers between segments, so
// that a round allocates none after its first: room for a flush's worth
// and one more batch.
var cleanedBufs = sync.Pool{New: func() any { return make([]byte, 0, flushAt+256<<10) }}

// releaseBuf hands the write buffer back once nothing is left to write.
func (w *CleanedSegment) releaseBuf() {
	if w.buf != nil {
		cleanedBufs.Put(w.buf[:0])
		w.buf = nil
	}
}

// Append adds one batch (as written by BatchFilter.Filter or copied from
// the old segments). Batches must come in offset order within [base, end).
func (w *CleanedSegment) Append(b []byte) error {
	if w.done {
		return errors.New("log: cleaned segment already committed or aborted")
	}
	h, err := ParseBatchHeader(b)
	if err != nil {
		return err
	}
	if int(h.Length) != len(b) || h.BaseOffset < w.seg.next || h.LastOffset() >= w.end || h.LastOffset()-w.seg.base > 1<<32-1 {
		return fmt.Errorf("log: cleaned batch [%d, %d] out of place in [%d, %d) after %d", h.BaseOffset, h.LastOffset(), w.seg.base, w.end, w.seg.next)
	}
	if w.seg.size+int64(len(b)) > 1<<32-1 {
		return fmt.Errorf("log: cleaned segment would pass 4 GiB")
	}
	if h.IsControl() {
		w.markers[h.LastOffset()] = true
	}
	w.seg.index(&h, w.seg.size, len(b), w.interval)
	w.seg.size += int64(len(b))
	w.seg.next = h.NextOffset()
	w.buf = append(w.buf, b...)
	if len(w.buf) >= flushAt {
		return w.flush()
	}
	return nil
}

// Bytes is the size of what was appended so far.
func (w *CleanedSegment) Bytes() int64 { return w.seg.size }

func (w *CleanedSegment) flush() error {
	if len(w.buf) == 0 {
		return nil
	}
	if _, err := w.f.WriteAt(w.buf, w.seg.size-int64(len(w.buf))); err != nil {
		return err
	}
	w.buf = w.buf[:0]
	return nil
}

// Abort drops the cleaned segment; the log stays as it was.
func (w *CleanedSegment) Abort() {
	if w.done {
		return
	}
	w.done = true
	w.releaseBuf()
	w.f.Close()
	_ = os.Remove(w.path)
}

// Commit swaps the cleaned segment in for the old ones. ErrStaleClean
// (and nothing changed) when the log lost or rewrote one of them
// meanwhile. An error after the swap is committed on disk leaves the old
// segments serving reads until the log is reopened, which finishes it.
func (w *CleanedSegment) Commit() error {
	if w.done {
		return errors.New("log: cleaned segment already committed or aborted")
	}
	if w.seg.next != w.end {
		w.Abort()
		return fmt.Errorf("log: cleaned segment ends at %d, the segments it replaces at %d", w.seg.next, w.end)
	}
	// The aborted transactions whose marker stays keep their entries (a
	// read_committed consumer still needs those whose records stay); the
	// others' records went with their marker.
	for _, a := range w.aborted {
		if w.markers[a.LastOffset] {
			w.seg.ix.aborted = append(w.seg.ix.aborted, a)
		}
	}
	err := w.flush()
	if err == nil {
		w.releaseBuf()
		err = w.f.Sync()
	}
	if err == nil {
		err = w.l.fault(stepCleanedWritten)
	}
	if err != nil {
		if errors.Is(err, errSwapFault) {
			w.f.Close() // as a crash would leave it
		} else {
			w.Abort()
		}
		return err
	}
	w.done = true
	l := w.l
	l.segMu.Lock()
	defer l.segMu.Unlock()
	if !l.groupStill(w) {
		w.f.Close()
		_ = os.Remove(w.path)
		return ErrStaleClean
	}
	// The old segments' names go next: their files must be open from now
	// on, out of the cache's reach, so that reads find them until the
	// delete delay ends (and the old segments serve reads if the swap
	// fails half way).
	for _, s := range w.old {
		if err := s.h.hold(true); err != nil {
			w.f.Close()
			_ = os.Remove(w.path)
			return err
		}
	}
	if err := w.swapFiles(); err != nil {
		w.f.Close()
		if !errors.Is(err, errSwapFault) {
			l.env().logger.Error("log: swap of a cleaned segment failed; reopening the log finishes it", "dir", l.dir, "base", w.seg.base, "err", err)
		}
		return err
	}
	l.install(w)
	if err := l.fault(stepInstalled); err != nil {
		return err
	}
	if err := w.seg.writeIndex(); err != nil {
		// Index files are a cache: a missing one is rebuilt at open.
		l.env().logger.Warn("log: could not write a cleaned segment's index", "dir", l.dir, "base", w.seg.base, "err", err)
		return nil
	}
	return l.fault(stepIndexed)
}

// groupStill reports whether the group is still in the log, closed and
// untouched by a truncation, and the log open. segMu held.
func (l *Log) groupStill(w *CleanedSegment) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed() || l.closing() || l.truncations != w.truncations {
		return false
	}
	i, j := l.groupLocked(w.seg.base, w.end)
	if i < 0 || j-i+1 != len(w.old) {
		return false
	}
	for k, s := range w.old {
		if l.segs[i+k] != s {
			return false
		}
	}
	return true
}

// swapFiles does steps 2 to 4 on disk. segMu held, mu not.
func (w *CleanedSegment) swapFiles() error {
	l := w.l
	swap := w.seg.prefix + logSuffix + swapSuffix
	if err := os.Rename(w.path, swap); err != nil {
		_ = os.Remove(w.path)
		return err
	}
	if err := l.fault(stepSwapRenamed); err != nil {
		return err
	}
	if err := syncDir(l.dir); err != nil {
		return err
	}
	if err := l.fault(stepSwapDurable); err != nil {
		return err
	}
	for _, s := range w.old {
		for _, suffix := range []string{indexSuffix, timeIndexSuffix, txnIndexSuffix, logSuffix} {
			if suffix == logSuffix && s.base == w.seg.base {
				continue // replaced by the rename below
			}
			if err := os.Remove(s.prefix + suffix); err != nil && !errors.Is(err, os.ErrNotExist) {
				return err
			}
			if err := l.fault(stepOldRemoved); err != nil {
				return err
			}
		}
	}
	if err := os.Rename(swap, w.seg.prefix+logSuffix); err != nil {
		return err
	}
	if err := l.fault(stepRenamedIn); err != nil {
		return err
	}
	return syncDir(l.dir)
}

// install replaces the group with the cleaned segment in memory. The old
// segments' files are already unlinked (or renamed over); they stay open
// for reads in flight. segMu held.
func (l *Log) install(w *CleanedSegment) {
	l.mu.Lock()
	defer l.mu.Unlock()
	i, j := l.groupLocked(w.seg.base, w.end)
	w.seg.synced = w.seg.size
	w.seg.h = newSegFile(l.env().files, w.seg.prefix+logSuffix, w.f)
	w.seg.h.unpin()
	segs := make([]*segment, 0, len(l.segs)-(j-i))
	segs = append(segs, l.segs[:i]...)
	segs = append(segs, w.seg)
	segs = append(segs, l.segs[j+1:]...)
	l.segs = segs
	l.toFlush = keepSegments(l.toFlush, l.segs)
	now := l.env().now()
	for _, s := range w.old {
		l.retired = append(l.retired, retiredSegment{seg: s, deadline: now.Add(l.cfg.Load().FileDeleteDelay)})
	}
	l.armLocked()
}

// fault calls the test's fault hook, if any.
func (l *Log) fault(step swapStep) error {
	if l.swapFault == nil {
		return nil
	}
	return l.swapFault(step)
}

// finishSwaps completes or rolls back a swap cut short (see the top of
// this file). Called by recover before it lists the segments.
func (l *Log) finishSwaps() ([]os.DirEntry, error) {
	entries, err := os.ReadDir(l.dir)
	if err != nil {
		return nil, err
	}
	changed := false
	var swaps []int64
	for _, e := range entries {
		name := e.Name()
		switch {
		case strings.HasSuffix(name, cleanedSuffix):
			l.env().logger.Warn("log: removing the output of an unfinished cleaning", "dir", l.dir, "file", name)
			if err := os.Remove(filepath.Join(l.dir, name)); err != nil {
				return nil, err
			}
			changed = true
		case strings.HasSuffix(name, logSuffix+swapSuffix):
			if base, ok := parseSegmentName(strings.TrimSuffix(name, swapSuffix)); ok {
				swaps = append(swaps, base)
			}
		}
	}
	sort.Slice(swaps, func(i, j int) bool { return swaps[i] < swaps[j] })
	for _, base := range swaps {
		if err := l.finishSwap(base); err != nil {
			return nil, err
		}
		changed = true
	}
	if !changed {
		return entries, nil
	}
	if err := syncDir(l.dir); err != nil {
		return nil, err
	}
	return os.ReadDir(l.dir) // what the swaps left
}

// finishSwap completes the swap of B.log.swap when it reads back whole.
func (l *Log) finishSwap(base int64) error {
	prefix := segmentPrefix(l.dir, base)
	swap := prefix + logSuffix + swapSuffix
	f, size, err := openSized(swap, os.O_RDONLY)
	if err != nil {
		return err
	}
	s := &segment{base: base, prefix: prefix}
	r, _, err := s.scan(f, scanStart{next: base, maxTs: -1}, size, 0, l.cfg.Load().IndexIntervalBytes, nil)
	f.Close()
	if err != nil {
		return err
	}
	if r.stopped || r.validEnd != size {
		// It was fsynced before it was named .swap, so this is damage
		// from outside; keep what the old segments still hold.
		l.env().logger.Error("log: a committed cleaned segment does not read back; dropping it", "dir", l.dir, "base", base, "valid_bytes", r.validEnd, "file_bytes", size)
		return os.Remove(swap)
	}
	entries, err := os.ReadDir(l.dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		b, ok := parseSegmentName(e.Name())
		if !ok || b < base || b >= r.next {
			continue
		}
		old := segmentPrefix(l.dir, b)
		for _, suffix := range []string{indexSuffix, timeIndexSuffix, txnIndexSuffix, logSuffix} {
			if suffix == logSuffix && b == base {
				continue
			}
			if err := os.Remove(old + suffix); err != nil && !errors.Is(err, os.ErrNotExist) {
				return err
			}
		}
	}
	for _, suffix := range []string{indexSuffix, timeIndexSuffix, txnIndexSuffix} {
		if err := os.Remove(prefix + suffix); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	l.env().logger.Info("log: finished the swap of a cleaned segment", "dir", l.dir, "base", base, "end_offset", r.next)
	return os.Rename(swap, prefix+logSuffix)
}

// openSized opens a file and returns its size.
func openSized(path string, flag int) (*os.File, int64, error) {
	f, err := os.OpenFile(path, flag, 0o644)
	if err != nil {
		return nil, 0, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, err
	}
	return f, fi.Size(), nil
}
