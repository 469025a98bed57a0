package log

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"time"
)

// syncPass is one visit of the log's Syncer: it serves fsync requests
// (group commit), flushes sealed segments, honours flush.ms, rewrites the
// checkpoint, closes the files of retired segments, and asks to be visited
// again while any of that work is left. Passes over one log never overlap.
func (l *Log) syncPass() {
	now := l.env().now()
	cfg := l.cfg.Load()
	periodic := cfg.FlushInterval >= 0 && now.Sub(l.lastFlush) >= cfg.FlushInterval
	writeCkpt := now.Sub(l.lastCkpt) >= l.env().ckpt
	if err := l.flush(writeCkpt || periodic, periodic); err != nil {
		l.env().logger.Error("log: flush failed", "dir", l.dir, "err", err)
		l.lastSyncErr.Store(&err)
		l.syncFailures.Add(1)
		l.wakeWaiters(false)
		l.ioFailed(err)
	}
	if periodic {
		l.lastFlush = now
	}
	if writeCkpt || periodic {
		l.lastCkpt = now
	}
	l.closeRetired(now)

	l.mu.Lock()
	l.armed = false
	l.armAfterLocked(l.nextPassLocked(now, cfg))
	l.mu.Unlock()
}

// nextPassLocked is when the next pass is needed, seen from the end of a
// pass at now: within tickInterval while data is unsynced or files wait
// to be closed, else (only the checkpoint left) when the checkpoint
// interval is up, so that a written-then-idle log is not visited every
// second until its checkpoint. Only syncPass may call it (it reads
// lastCkpt). mu held.
func (l *Log) nextPassLocked(now time.Time, cfg *settings) time.Duration {
	d := l.tickInterval()
	if len(l.retired) > 0 || len(l.toFlush) > 0 || cfg.FlushInterval >= 0 || len(l.segs) == 0 {
		return d
	}
	if active := l.segs[len(l.segs)-1]; active.synced < active.size && cfg.BackgroundSync {
		return d
	}
	return max(d, l.env().ckpt-now.Sub(l.lastCkpt))
}

// armLocked makes sure the Syncer visits the log again within
// tickInterval while it has background work left: data not yet fsynced or
// not yet under the recovery point, an index to write, files of deleted
// segments to close. A log without such work is not visited at all. mu
// held; every change that creates such work calls it.
func (l *Log) armLocked() {
	l.armAfterLocked(l.tickInterval())
}

// armAfterLocked is armLocked with the delay given. mu held.
func (l *Log) armAfterLocked(d time.Duration) {
	if l.armed || l.closed() || !l.hasBackgroundWorkLocked() {
		return
	}
	l.armed = true
	l.env().syncer.schedule(l, time.Now().Add(d))
}

func (l *Log) hasBackgroundWorkLocked() bool {
	bg := l.cfg.Load().BackgroundSync
	if len(l.retired) > 0 || len(l.toFlush) > 0 || bg && l.recoveryPoint < l.leo || l.hwUnwrittenLocked() || l.dirUnsynced {
		return true
	}
	if len(l.segs) == 0 {
		return false
	}
	active := l.segs[len(l.segs)-1]
	return bg && active.synced < active.size || active.dirty
}

// hwUnwrittenLocked reports whether the noted high watermark differs from
// the one in the checkpoint file. mu held.
func (l *Log) hwUnwrittenLocked() bool { return l.hw.Load() != l.ckptHW }

func (l *Log) tickInterval() time.Duration {
	d := time.Second
	if fi := l.cfg.Load().FlushInterval; fi >= 0 && fi < d {
		d = max(fi, time.Millisecond)
	}
	return d
}

// flush fsyncs what was appended (sealed segments and the active one),
// writes sealed segments' indexes and, with checkpointToo, the active index
// and the recovery checkpoint. It is a no-op when nothing changed. Without
// BackgroundSync the active segment is fsynced only when force is set
// (flush.ms, Flush, Close) or someone asked (signal: a waiter,
// flush.messages, a roll); the recovery point and the durable offset then
// move only as far as what was fsynced.
func (l *Log) flush(checkpointToo, force bool) error {
	if !l.live() {
		return nil
	}
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	l.mu.Lock()
	if l.closed() || len(l.segs) == 0 {
		l.mu.Unlock()
		return nil
	}
	leo := l.leo
	// Index slices are copied under the lock; entries below a published
	// length never change, so they can be encoded without it.
	var sealed []sealedCopy
	for _, s := range l.toFlush {
		sealed = append(sealed, sealedCopy{s, s.ix})
	}
	l.toFlush = nil
	active := l.segs[len(l.segs)-1]
	activeSize := active.size
	asked := l.syncAsked.Swap(false)
	unsynced := active.synced < activeSize
	needActive := unsynced && (l.cfg.Load().BackgroundSync || force || asked)
	// Everything below leo is fsynced once this flush is done.
	allSynced := !unsynced || needActive
	needIndex := checkpointToo && active.dirty
	activeIndex := active.ix
	if needIndex {
		active.dirty = false
	}
	truncations := l.truncations
	l.unflushed = 0
	needCkpt := checkpointToo && (allSynced && l.recoveryPoint < leo || l.hwUnwrittenLocked())
	newDir := l.dirUnsynced
	l.mu.Unlock()
	if l.flushCopied != nil {
		l.flushCopied()
	}

	// Aborted-transaction indexes are committed only if no truncation
	// came meanwhile: one may have rewritten them (see
	// truncateProducersLocked). A segment that is still there is then
	// queued to be written again, so that its index is on disk before the
	// recovery point passes it.
	commitFor := func(seg *segment) func(func() error) error {
		return func(f func() error) error {
			l.mu.Lock()
			defer l.mu.Unlock()
			if l.truncations == truncations {
				return f()
			}
			if i := slices.Index(l.segs, seg); i >= 0 {
				seg.dirty = true
				if i < len(l.segs)-1 {
					l.toFlush = append(l.toFlush, seg)
				}
				l.armLocked()
			}
			return nil
		}
	}
	if len(sealed) == 0 && !needActive && !needIndex && !needCkpt && !newDir {
		if allSynced {
			l.advanceDurable(leo, truncations)
		}
		return nil
	}
	// A failure (a full or failing disk) puts the work that was not done
	// back, so that a later flush does it once the disk can take it.
	failed := func(done int, err error) error {
		l.mu.Lock()
		defer l.mu.Unlock()
		var back []*segment
		for _, p := range sealed[done:] {
			// Only a segment still sealed: a truncation may have deleted
			// it or made it the active one.
			if i := slices.Index(l.segs, p.seg); i >= 0 && i < len(l.segs)-1 {
				back = append(back, p.seg)
			}
		}
		l.toFlush = append(back, l.toFlush...)
		if needIndex {
			active.dirty = true
		}
		if needActive {
			l.syncAsked.Store(true)
		}
		l.armLocked()
		return err
	}
	for i, p := range sealed {
		if err := l.syncFile(p.seg.h); err != nil {
			return failed(i, err)
		}
	}
	if needActive {
		if err := l.syncFile(active.h); err != nil {
			return failed(len(sealed), err)
		}
	}
	if err := l.writeIndexes(sealed, needIndex, active, activeIndex, commitFor); err != nil {
		// Which indexes were written is not known: the whole flush is
		// redone (fsyncing again costs nothing more than the sync).
		return failed(0, err)
	}
	if newDir {
		if err := l.syncNewDir(); err != nil {
			return failed(0, err)
		}
	}
	l.mu.Lock()
	if l.truncations != truncations {
		l.mu.Unlock()
		return nil // a truncation raced us; the next flush redoes the work
	}
	if needActive {
		active.synced = max(active.synced, activeSize)
	}
	for _, p := range sealed {
		p.seg.synced = p.seg.size
	}
	rp := l.recoveryPoint
	durable := int64(-1)
	switch {
	case allSynced:
		durable = leo
		if checkpointToo {
			rp = leo
		} else if len(sealed) > 0 {
			rp = sealed[len(sealed)-1].seg.next
		}
	case len(sealed) > 0:
		durable = sealed[len(sealed)-1].seg.next
		rp = durable
	}
	var err error
	if rp > l.recoveryPoint || checkpointToo && l.hwUnwrittenLocked() {
		l.recoveryPoint = max(rp, l.recoveryPoint)
		err = l.writeCheckpointLocked()
	}
	l.mu.Unlock()
	// The data is fsynced whether or not its checkpoint could be written;
	// under CloseAll it is durable only once the filesystem is synced
	// (syncedByCloseAll).
	if durable >= 0 && !l.has(stateDeferSync) {
		l.advanceDurable(durable, truncations)
	}
	return err
}

// syncNewDir makes a directory createLocked made durable: its checkpoint
// written (which fsyncs the directory, so the segments' names are
// durable) and its parent fsynced (for the directory's own name).
func (l *Log) syncNewDir() error {
	l.mu.Lock()
	if !l.dirUnsynced || l.closed() {
		l.mu.Unlock()
		return nil
	}
	// Under mu, as every checkpoint write, so that none is overwritten
	// with older figures.
	err := l.writeCheckpointLocked()
	if err == nil && l.has(stateDeferSync) {
		l.dirUnsynced = false // CloseAll's filesystem sync covers the names
		l.mu.Unlock()
		return nil
	}
	l.mu.Unlock()
	if err == nil {
		err = l.env().files.retry(func() error { return syncDir(filepath.Dir(l.dir)) })
	}
	if err != nil {
		return err
	}
	l.mu.Lock()
	l.dirUnsynced = false
	l.mu.Unlock()
	return nil
}

// syncFile fsyncs a segment's file, reopening it if the cache closed it
// (an fsync covers what was written through an earlier descriptor); a
// file closed for good belongs to a segment deleted meanwhile and needs
// nothing.
func (l *Log) syncFile(h *segFile) error {
	if l.has(stateDeferSync) {
		return nil // CloseAll syncs the filesystem instead
	}
	l.fsyncs.Add(1)
	sync := (*os.File).Sync
	if l.env().fsync != nil {
		sync = l.env().fsync
	}
	err := l.env().files.retry(func() error { return h.do(sync) })
	if err != nil && !errors.Is(err, os.ErrClosed) && !errors.Is(err, errSegmentGone) {
		return err
	}
	return nil
}

// advanceDurable publishes that everything below leo is fsynced and wakes
// WaitDurable callers.
func (l *Log) advanceDurable(leo int64, truncations uint64) {
	l.mu.Lock()
	ok := l.truncations == truncations && leo > l.durable.Load()
	if ok {
		l.durable.Store(leo)
	}
	l.mu.Unlock()
	if ok {
		l.wakeWaiters(false)
	}
}

// closeRetired closes the files of deleted segments whose grace period is
// over.
func (l *Log) closeRetired(now time.Time) {
	l.mu.Lock()
	var keep []retiredSegment
	var done []*segment
	for _, r := range l.retired {
		if now.Before(r.deadline) {
			keep = append(keep, r)
		} else {
			done = append(done, r.seg)
		}
	}
	l.retired = keep
	l.mu.Unlock()
	for _, s := range done {
		s.h.close()
	}
}

// sealedCopy is a sealed segment a flush took, with its index as it was
// then.
type sealedCopy struct {
	seg *segment
	ix  index
}

// writeIndexes writes the copied indexes of the sealed segments a flush
// took and, with withActive, the active segment's, holding segMu so that
// no retention, truncation or cleaner swap changes the segments' files
// meanwhile: a segment deleted or replaced since the copy is skipped (its
// files are gone, or are now another segment's), which a write without
// segMu would bring back or overwrite with the old segment's entries.
func (l *Log) writeIndexes(sealed []sealedCopy, withActive bool, active *segment, activeIx index, commitFor func(*segment) func(func() error) error) error {
	l.segMu.Lock()
	defer l.segMu.Unlock()
	l.mu.Lock()
	live := make(map[*segment]bool, len(l.segs))
	for _, s := range l.segs {
		live[s] = true
	}
	l.mu.Unlock()
	for _, p := range sealed {
		if !live[p.seg] {
			continue
		}
		if err := l.writeIndexFile(p.seg, p.ix, commitFor); err != nil {
			return err
		}
	}
	if withActive && live[active] {
		if err := l.writeIndexFile(active, activeIx, commitFor); err != nil {
			return err
		}
	}
	return nil
}

// writeIndexFile writes a copied index of seg, once more after shedding
// idle files when the process ran out of descriptors.
func (l *Log) writeIndexFile(seg *segment, ix index, commitFor func(*segment) func(func() error) error) error {
	sync := !l.has(stateDeferSync)
	return l.env().files.retry(func() error {
		return (&segment{prefix: seg.prefix, ix: ix}).writeIndexWith(commitFor(seg), sync)
	})
}
