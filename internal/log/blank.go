package log

import "errors"

// A blank log is the empty log at offset 0 that stands for every
// never-written log of one Env and settings, so that a caller holding
// many partitions that were never written (internal/replica) keeps one
// pointer for each rather than a Log of its own, and opens the partition's
// log only to write it. A blank has no directory and reads as a
// never-written lazy log does; it is never written: the writes that would
// give it files (Append, AppendMarker, AppendReplicated,
// TruncateFullyAndStartAt, SetConfig) fail with an error, the rest
// (Truncate, AdvanceStartOffset, EnforceRetention, NoteHighWatermark,
// Close) leave it as it is, and Producers is nil. Its high watermark is
// 0.

// errBlank is the error of a write to a blank log.
var errBlank = errors.New("log: a blank log is not written (open the partition's own log)")

// Blank is the blank log of l's settings.
func (l *Log) Blank() *Log { return l.cfg.Load().blankLog() }

// BlankFor is the blank log of the settings cfg in l's Env: a topic
// config change of a never-written log held as a blank.
func (l *Log) BlankFor(cfg Config) (*Log, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return l.env().settingsOf(cfg).blankLog(), nil
}

// IsBlank reports whether l is a blank log.
func (l *Log) IsBlank() bool { return l.has(stateBlank) }

// NeverWritten reports whether l is a lazy log that was never written
// and is open: it has no files, and a blank of its settings reads as it
// does.
func (l *Log) NeverWritten() bool { return !l.live() && !l.closing() && !l.IsBlank() }

func (s *settings) blankLog() *Log {
	if b := s.blank.Load(); b != nil {
		return b
	}
	b := &Log{body: emptyBody}
	b.state.Store(stateBlank | stateHWNoted)
	b.cfg.Store(s)
	if s.blank.CompareAndSwap(nil, b) {
		return b
	}
	return s.blank.Load()
}
