package log

import (
	"time"
)

// syncLoop is the Log's background goroutine: it serves fsync requests
// (group commit), flushes sealed segments, honours flush.ms, rewrites the
// checkpoint, and closes the files of retired segments.
func (l *Log) syncLoop() {
	defer close(l.done)
	tick := time.NewTicker(l.tickInterval())
	defer tick.Stop()
	lastCkpt := l.now()
	lastFlush := l.now()
	for {
		select {
		case <-l.stop:
			return
		case <-l.kick:
		case <-tick.C:
		}
		now := l.now()
		cfg := l.cfg.Load()
		periodic := cfg.FlushInterval >= 0 && now.Sub(lastFlush) >= cfg.FlushInterval
		writeCkpt := now.Sub(lastCkpt) >= l.ckpt
		if err := l.flush(writeCkpt || periodic); err != nil {
			l.logger.Error("log: flush failed", "dir", l.dir, "err", err)
		}
		if periodic {
			lastFlush = now
		}
		if writeCkpt || periodic {
			lastCkpt = now
		}
		l.closeRetired(now)
		tick.Reset(l.tickInterval())
	}
}

func (l *Log) tickInterval() time.Duration {
	d := time.Second
	if fi := l.cfg.Load().FlushInterval; fi >= 0 && fi < d {
		d = max(fi, time.Millisecond)
	}
	return d
}

// flush fsyncs what was appended (sealed segments and the active one),
// writes sealed segments' indexes and, with checkpoint, the active index
// and the recovery checkpoint. It is a no-op when nothing changed.
func (l *Log) flush(checkpointToo bool) error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	leo := l.leo
	sealed := l.toFlush
	l.toFlush = nil
	active := l.segs[len(l.segs)-1]
	activeSize := active.size
	needActive := active.synced < activeSize
	needIndex := checkpointToo && active.dirty
	var activeIndex index
	if needIndex {
		activeIndex = active.ix
		active.dirty = false
	}
	truncations := l.truncations
	l.unflushed = 0
	l.mu.Unlock()

	nothing := len(sealed) == 0 && !needActive && !needIndex && (!checkpointToo || l.recoveryPointIs(leo))
	if nothing {
		l.advanceDurable(leo, truncations)
		return nil
	}
	for _, s := range sealed {
		if err := s.f.Sync(); err != nil {
			return err
		}
		if err := s.writeIndex(); err != nil {
			return err
		}
	}
	if needActive {
		if err := active.f.Sync(); err != nil {
			return err
		}
	}
	if needIndex {
		tmp := segment{prefix: active.prefix, ix: activeIndex}
		if err := tmp.writeIndex(); err != nil {
			return err
		}
	}
	l.mu.Lock()
	if l.truncations != truncations {
		l.mu.Unlock()
		return nil // a truncation raced us; the next flush will redo it
	}
	active.synced = max(active.synced, activeSize)
	for _, s := range sealed {
		s.synced = s.size
	}
	write := checkpointToo || len(sealed) > 0
	rp := leo
	if !checkpointToo && len(sealed) > 0 {
		// The active segment's index was not written: the checkpoint
		// may only cover the sealed segments.
		rp = sealed[len(sealed)-1].next
	}
	var ck checkpoint
	if write && rp > l.recoveryPoint {
		l.recoveryPoint = rp
		ck = checkpoint{recoveryPoint: rp, logStartOffset: l.logStart}
	} else {
		write = false
	}
	l.mu.Unlock()
	if write {
		if err := writeCheckpoint(l.dir, ck); err != nil {
			return err
		}
	}
	l.advanceDurable(leo, truncations)
	return nil
}

func (l *Log) recoveryPointIs(off int64) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.recoveryPoint >= off
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
	if !ok {
		return
	}
	l.durableMu.Lock()
	close(l.durableCh)
	l.durableCh = make(chan struct{})
	l.durableMu.Unlock()
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
		s.f.Close()
	}
}
