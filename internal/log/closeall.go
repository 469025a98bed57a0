package log

import (
	"errors"
	"os"
	"path/filepath"

	"weir/internal/parallel"
)

// CloseAll closes logs as Close closes each, sharing the fsyncs. Close
// fsyncs a log's active segment, writes and fsyncs its indexes, its
// producer snapshot and its checkpoint and fsyncs its directory: some
// five journal commits a log, seconds for a broker stopping with
// thousands of written logs. CloseAll writes all of that without fsync,
// syncs each filesystem once (syncfs), writes the checkpoints to
// temporary files, syncs again, renames them into place and syncs a last
// time. A checkpoint thus never names as recovered data a crash could
// still take, and a crash at any step leaves each checkpoint old or new;
// a log whose checkpoint stayed old is scanned at the next open, as after
// any crash. Where syncfs is missing each log is closed with Close.
// workers bounds the logs closed at once; logs a Close already began
// are skipped.
func CloseAll(logs []*Log, workers int) error {
	errs := make([]error, len(logs)+1)
	if !haveSyncFS {
		parallel.Do(len(logs), workers, func(i int) {
			if err := logs[i].Close(); err != nil && !errors.Is(err, ErrClosed) {
				errs[i] = err
			}
		})
		return errors.Join(errs...)
	}
	// Every log leaves its Syncer first, so that no background fsync
	// runs while the others close.
	took := make([]bool, len(logs))
	parallel.Do(len(logs), workers, func(i int) {
		took[i] = !logs[i].IsBlank() && logs[i].startClose(true)
	})
	parallel.Do(len(logs), workers, func(i int) {
		if took[i] {
			errs[i] = logs[i].finishClose()
		}
	})
	// The filesystems to sync, each named by a log directory's parent,
	// with the Env's test hook, if any.
	type fsDir struct {
		dir  string
		hook func(string) error
	}
	var dirs []fsDir
	seen := map[string]bool{}
	var pending []*Log
	for i, l := range logs {
		if !took[i] || !l.live() {
			continue
		}
		pending = append(pending, l)
		if d := filepath.Dir(l.dir); !seen[d] {
			seen[d] = true
			dirs = append(dirs, fsDir{d, l.env().syncfs})
		}
	}
	syncAll := func() error {
		var errs []error
		for _, d := range dirs {
			sync := syncFS
			if d.hook != nil {
				sync = d.hook
			}
			if err := sync(d.dir); err != nil {
				errs = append(errs, err)
			}
		}
		return errors.Join(errs...)
	}
	if err := syncAll(); err != nil {
		// Nothing is known durable: no checkpoint moves.
		errs[len(logs)] = err
		return errors.Join(errs...)
	}
	for _, l := range pending {
		l.syncedByCloseAll()
	}
	tmps := make([]string, len(pending))
	ckErrs := make([]error, len(pending))
	parallel.Do(len(pending), workers, func(i int) {
		b, ok := pending[i].takePendingCheckpoint()
		if !ok {
			return
		}
		tmp := filepath.Join(pending[i].dir, checkpointFile) + tmpSuffix
		if err := os.WriteFile(tmp, b, 0o644); err != nil {
			_ = os.Remove(tmp)
			ckErrs[i] = err
			return
		}
		tmps[i] = tmp
	})
	if err := syncAll(); err != nil {
		for _, tmp := range tmps {
			if tmp != "" {
				_ = os.Remove(tmp)
			}
		}
		ckErrs = append(ckErrs, err)
		return errors.Join(append(errs, ckErrs...)...)
	}
	parallel.Do(len(pending), workers, func(i int) {
		if tmps[i] == "" {
			return
		}
		if err := os.Rename(tmps[i], filepath.Join(pending[i].dir, checkpointFile)); err != nil {
			ckErrs[i] = err
		}
	})
	ckErrs = append(ckErrs, syncAll())
	return errors.Join(append(errs, ckErrs...)...)
}

// syncedByCloseAll publishes that the whole log is durable, once
// CloseAll's first filesystem sync has made it so (its flush, which
// skipped the fsyncs, did not).
func (l *Log) syncedByCloseAll() {
	l.mu.Lock()
	leo, truncations := l.leo, l.truncations
	l.mu.Unlock()
	l.advanceDurable(leo, truncations)
}

// takePendingCheckpoint returns the checkpoint a CloseAll flush held back,
// encoded, and false when none was due.
func (l *Log) takePendingCheckpoint() ([]byte, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.ckptPending {
		return nil, false
	}
	l.ckptPending = false
	return checkpoint{recoveryPoint: l.recoveryPoint, logStartOffset: l.logStart, highWatermark: l.hw.Load()}.encode(), true
}
