package log

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"math"
	"os"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
	"unique"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Sentinel errors. Kafka-visible failures wrap kerr errors instead.
var (
	ErrClosed = errors.New("log: closed")
)

// discardLogger serves every Log opened without a logger; a logger is
// immutable, so one is enough.
var discardLogger = slog.New(slog.DiscardHandler)

// Options are the injected dependencies of a Log.
type Options struct {
	Logger *slog.Logger
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// CheckpointInterval is how often the recovery checkpoint is rewritten
	// when data was flushed in between (Kafka's
	// log.flush.offset.checkpoint.interval.ms). Zero means one minute.
	CheckpointInterval time.Duration
	// Syncer, when set, does this log's background work (fsyncs, group
	// commit, flush.ms, flush.messages, checkpoints) together with many
	// other logs on its fixed pool of goroutines. nil: the log starts a
	// private Syncer with one goroutine and closes it in Close.
	Syncer *Syncer
	// Env, when set, is shared with other logs and replaces Logger, Now,
	// CheckpointInterval, Syncer, OnIOError and Producers (see NewEnv).
	Env *Env
	// Lazy makes Open of a directory that does not exist create nothing:
	// no directory, no file, no goroutine. The log behaves as an empty log
	// starting at offset 0 until the first append creates the directory
	// and the first segment. A directory that exists is opened (and
	// recovered) as usual.
	Lazy bool
	// Producers, when set, makes the partition's producer state, which
	// the log then keeps in step with its batches (see ProducerState): it
	// tracks transactions for the last stable offset and the
	// aborted-transaction index, and is snapshotted and restored. It is
	// called once per log, when the log gets a body of its own: at Open of
	// a directory, at the first append of a lazy log, or at the first
	// call of Log.Producers. A never-written lazy log holds no state: it
	// has none to hold.
	Producers func() ProducerState
	// OnIOError, when set, is told of every write or sync of the log's
	// files that failed (a full or failing disk), with the error as the
	// file system returned it; the append or flush fails as well. The
	// broker marks the log directory offline on it. Running out of file
	// descriptors (EMFILE, ENFILE) is not such a failure and is not told:
	// the request fails, retriably, and the disk is fine. Called with no
	// lock of the log held; it must not call the log.
	OnIOError func(error)
	// Files bounds the segment files the log keeps open, shared with the
	// other logs given the same one (files.go). nil: the process's cache,
	// half of RLIMIT_NOFILE.
	Files *Files
}

// Log is one partition's log: an ordered list of segments, the last of
// which takes appends.
//
// Concurrency: appends, truncation and retention hold mu briefly and never
// across fsync; batch validation runs before mu is taken. Reads copy the
// segment views they need under mu and do their file I/O without it. The
// log's Syncer (shared, or private to the log) does every background fsync,
// index write and checkpoint, and closes files of deleted segments once
// their grace period ends, in passes that never overlap for one log. Close
// detaches the log from it, waiting for a pass in progress.
type Log struct {
	// prefix and n are the partition directory, split so logs share its
	// prefix (dirName, kept as two fields so that state fills the gap).
	prefix unique.Handle[string]
	n      int32
	// state holds the flags: stateLive, stateClosing, stateClosed and
	// stateHWNoted.
	state atomic.Uint32
	// cfg is the settings in force and the environment, shared with
	// every log of the same settings and Env (Env.settingsOf).
	cfg atomic.Pointer[settings]

	// segMu serialises the changes that remove or rewrite closed
	// segments (truncation, retention, DeleteRecords, the cleaner's swap,
	// Close) so that the cleaner can rename files with it held and mu
	// free; appends and rolls never take it.
	segMu sync.Mutex

	mu sync.Mutex

	// body is everything a log with files has. A lazy log never written
	// reads the shared emptyBody (no segments, nothing durable, no
	// producer state), which nothing writes, and costs only the fields
	// above (48 bytes); the first append, or the first call of Producers,
	// gives it its own. stateLive is set once it has, so a
	// reader without mu that sees it sees that body.
	*body
}

// The flags of Log.state.
const (
	stateLive    uint32 = 1 << iota // the log has a body of its own
	stateClosing                    // Close has started (set under mu)
	stateClosed                     // Close has closed the files (set under mu)
	// stateHWNoted: a never-written log had high watermark 0 noted, the
	// only one it can have (it ends at 0); its body starts with it.
	stateHWNoted
	// stateBlank: the log is the blank of its settings (blank.go), which
	// stands for many never-written logs and is never written itself.
	stateBlank
	// stateDeferSync: CloseAll is closing the log. Its flush writes
	// without fsync and its checkpoint waits (ckptPending) until the
	// filesystem syncs have made the data under it durable.
	stateDeferSync
)

func (l *Log) has(flag uint32) bool { return l.state.Load()&flag != 0 }

// live reports whether the log has a body of its own.
func (l *Log) live() bool { return l.has(stateLive) }

// closing and closed report Close's progress.
func (l *Log) closing() bool { return l.has(stateClosing) }
func (l *Log) closed() bool  { return l.has(stateClosed) }

// name is the partition directory, split.
func (l *Log) name() dirName { return dirName{l.prefix, l.n} }

// body is the state of a log with files: segments, durability,
// transactions, checkpoint and syncer bookkeeping. Its fields are
// guarded by Log.mu unless noted.
type body struct {
	dir string // the partition directory, whole
	// producers is the state Options.Producers made with the body; nil
	// without Options.Producers (and in emptyBody).
	producers ProducerState
	// hw is the latest high watermark noted (NoteHighWatermark), written
	// with every checkpoint; -1 none.
	hw   atomic.Int64
	segs []*segment // copy-on-write: never modified in place
	// logStart and leo are the log start and end offsets: both 0 in
	// emptyBody (a never-written log is the empty log at offset 0; one
	// started elsewhere has a body of its own).
	logStart      int64
	leo           int64
	recoveryPoint int64 // as last written to the checkpoint file
	// openHW is the high watermark the checkpoint held when the log was
	// opened (-1: none).
	openHW int64
	ckptHW int64 // the high watermark in the checkpoint file
	// syncAsked: a pass was asked for (signal), so the active segment is
	// fsynced even without BackgroundSync.
	syncAsked   atomic.Bool
	unflushed   int64      // records appended since the last fsync request
	toFlush     []*segment // sealed, never the active one (see Truncate)
	retired     []retiredSegment
	truncations uint64 // bumped by every truncation, so a flush in flight does not over-claim
	truncatedTo int64  // lowest offset a truncation cut to since Open (math.MaxInt64: none), for the cleaner
	armed       bool   // the Syncer will visit: background work is pending
	stopped     bool   // the log closed: WaitDurable gives up (guarded by durableMu, not mu)
	// dirUnsynced: the directory createLocked made has no checkpoint
	// yet, and its names (the segment's, its own) are not fsynced; the
	// next flush writes and fsyncs them before anything counts durable.
	dirUnsynced bool
	// ckptPending: a checkpoint was due while stateDeferSync held it
	// back; CloseAll writes it once the data is durable (mu).
	ckptPending bool

	// unreplicated are the transactions Options.Producers completed whose
	// marker may not be below the high watermark yet (see
	// LastStableOffset); snapBuf is reused by snapshots.
	unreplicated []CompletedTxn
	snapBuf      []byte

	// flushMu serialises flushes (the Syncer's passes, Flush, Close): one
	// flush must not publish durability for segments another is still
	// fsyncing.
	flushMu sync.Mutex

	durable atomic.Int64 // everything below this offset is fsynced
	// syncFailures counts failed flushes; lastSyncErr is the last one's
	// error. WaitDurable fails a waiter when a flush fails after it began
	// waiting.
	syncFailures atomic.Int64
	lastSyncErr  atomic.Pointer[error]
	durableMu    sync.Mutex
	durableCh    chan struct{} // closed when durable advances or the log closes; nil until a waiter needs it

	fsyncs atomic.Int64 // data-file fsyncs by the syncer, for metrics and tests

	// flushCopied, set by tests only, runs in flush once the work is
	// copied under the lock and before any of it is done, so that a test
	// can change the log while a flush is in flight.
	flushCopied func()

	// swapFault, set by tests only, can cut a cleaner's swap short at
	// each step (swap.go).
	swapFault func(swapStep) error

	sync syncState // guarded by syncer.mu
	// Only syncPass touches these, and passes over one log never overlap.
	lastFlush, lastCkpt time.Time
}

// emptyBody is the body of every never-written lazy log: read, never
// written (the paths that would write it need segments, and the first
// append gives the log its own body first).
var emptyBody = newBody("")

func newBody(dir string) *body {
	b := &body{dir: dir, openHW: -1, ckptHW: -1, truncatedTo: math.MaxInt64, sync: syncState{heapIdx: -1}}
	b.hw.Store(-1)
	return b
}

// Env is what logs share: logger, clock, checkpoint interval, Syncer and
// the I/O error callback. Logs opened with the same Options.Env share
// one, so a never-written lazy log holds a pointer to it rather than its
// own copy.
type Env struct {
	logger    *slog.Logger
	now       func() time.Time
	ckpt      time.Duration
	syncer    *Syncer
	private   bool                 // the syncer belongs to one log (no shared Syncer given)
	onIOError func(error)          // Options.OnIOError; may be nil
	files     *Files               // Options.Files, or the process's
	producers func() ProducerState // Options.Producers; may be nil
	// fsync replaces (*os.File).Sync in tests that make it fail (set on a
	// log's private Env only).
	fsync func(*os.File) error
	// syncfs replaces syncFS in tests of CloseAll.
	syncfs func(dir string) error
	// settings interns the settings of this Env's logs, so that the
	// logs of a topic share one; nil for the Env Open makes for a
	// single log.
	settings *sync.Map // *Config -> *settings
}

// settings are a log's Config and Env: the logs of a topic share them.
type settings struct {
	*Config
	env *Env
	// blank is the blank log of these settings, made on first use.
	blank atomic.Pointer[Log]
}

// configs interns log settings across Envs: equal Configs are one.
var configs sync.Map // Config -> *Config

func internConfig(c Config) *Config {
	if v, ok := configs.Load(c); ok {
		return v.(*Config)
	}
	v, _ := configs.LoadOrStore(c, &c)
	return v.(*Config)
}

// settingsOf returns the settings of a log of e with c.
func (e *Env) settingsOf(c Config) *settings {
	ic := internConfig(c)
	if e.settings == nil {
		return &settings{Config: ic, env: e}
	}
	if v, ok := e.settings.Load(ic); ok {
		return v.(*settings)
	}
	v, _ := e.settings.LoadOrStore(ic, &settings{Config: ic, env: e})
	return v.(*settings)
}

// env is the log's environment.
func (l *Log) env() *Env { return l.cfg.Load().env }

// NewEnv returns the shared environment of the logs opened with opts
// (Logger, Now, CheckpointInterval, Syncer, OnIOError, Producers, Files; nil
// Syncer: each log makes a private one).
func NewEnv(opts Options) *Env {
	e := &Env{logger: opts.Logger, now: opts.Now, ckpt: opts.CheckpointInterval, syncer: opts.Syncer, onIOError: opts.OnIOError, producers: opts.Producers, files: opts.Files, settings: new(sync.Map)}
	if e.files == nil {
		e.files = processFiles()
	}
	if e.logger == nil {
		e.logger = discardLogger
	}
	if e.now == nil {
		e.now = time.Now
	}
	if e.ckpt <= 0 {
		e.ckpt = time.Minute
	}
	return e
}

// dirName is a directory path as an interned prefix and a trailing
// number ("/data/orders-" and 7 for "/data/orders-7"; the whole path and
// -1 when it does not end in a plain number): the partitions of a topic
// share the prefix, so a never-written log holds no path of its own.
type dirName struct {
	prefix unique.Handle[string]
	n      int32
}

func splitDir(dir string) dirName {
	i := len(dir)
	for i > 0 && dir[i-1] >= '0' && dir[i-1] <= '9' {
		i--
	}
	if i < len(dir) && len(dir)-i <= 9 && (dir[i] != '0' || i == len(dir)-1) {
		if n, err := strconv.Atoi(dir[i:]); err == nil {
			return dirName{unique.Make(dir[:i]), int32(n)}
		}
	}
	return dirName{unique.Make(dir), -1}
}

func (d dirName) String() string {
	if d.n < 0 {
		return d.prefix.Value()
	}
	return d.prefix.Value() + strconv.Itoa(int(d.n))
}

type retiredSegment struct {
	seg      *segment
	deadline time.Time
}

// FileRange is a byte range of a segment file; a fetch can send it to a
// socket without copying it through user space.
type FileRange struct {
	File *os.File
	Pos  int64
	Len  int64
}

// AppendOptions carry the broker's part of an append.
type AppendOptions struct {
	// LeaderEpoch is stamped into the batch (partitionLeaderEpoch).
	LeaderEpoch int32
	// Guard runs under the append lock after validation and before the
	// write, with the offset the batch will get; an error aborts the append
	// and is returned as is. The idempotent-producer check lives here so
	// that it is atomic with the append.
	Guard func(info BatchInfo, baseOffset int64) error
	// Appended runs under the append lock once the batch is written.
	Appended func(info BatchInfo)
}

// AppendResult describes a successful append.
type AppendResult struct {
	BaseOffset     int64
	LastOffset     int64
	LogAppendTime  int64 // -1 unless the topic uses LogAppendTime
	LogStartOffset int64
	Info           BatchInfo
}

// Open opens or creates the log in dir, recovering it first (see
// recover.go). With opts.Lazy and no dir, nothing is created until the
// first append.
func Open(dir string, cfg Config, opts Options) (*Log, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	lazy := false
	if opts.Lazy {
		if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
			lazy = true
		} else if err != nil {
			return nil, err
		}
	}
	if !lazy {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
	}
	env := opts.Env
	if env != nil && opts.Producers != nil {
		return nil, errors.New("log: Options.Producers with an Env belongs in the Env")
	}
	if env == nil {
		env = NewEnv(opts)
		env.settings = nil // one log: nothing to share
		if env.syncer == nil {
			env.syncer, env.private = newSyncer(1), true
		}
	}
	name := splitDir(dir)
	l := &Log{prefix: name.prefix, n: name.n, body: emptyBody}
	l.cfg.Store(env.settingsOf(cfg))
	if !lazy {
		l.materialize(l.env().now())
		if err := l.recover(); err != nil {
			l.closeFiles()
			return nil, err
		}
		if l.env().private {
			l.env().syncer.start()
		}
	}
	return l, nil
}

// materialize gives the log a body of its own, with its producer state.
// mu held, or the log not shared yet.
func (l *Log) materialize(now time.Time) {
	b := newBody(l.name().String())
	b.lastFlush, b.lastCkpt = now, now
	if mk := l.env().producers; mk != nil {
		b.producers = mk()
	}
	if l.has(stateHWNoted) {
		b.hw.Store(0)
	}
	l.body = b
	l.state.Or(stateLive)
}

// createLocked makes the directory and first segment of a lazy log that
// has never been written, as recovery of an empty directory would, and
// starts its private Syncer. mu held.
func (l *Log) createLocked(now time.Time) error {
	if l.IsBlank() {
		return errBlank
	}
	if err := os.MkdirAll(l.name().String(), 0o755); err != nil {
		return err
	}
	if l.body == emptyBody {
		l.materialize(now)
	}
	seg, err := createSegment(l.env().files, l.dir, l.leo, now)
	if err != nil {
		return err
	}
	// The checkpoint and the fsyncs of the two directories (for the
	// segment's name and the directory's own) are left to the Syncer's
	// next flush (dirUnsynced), which does them before it counts anything
	// durable: here they were three fsyncs on the first append's path,
	// which a follower catching up on thousands of new partitions paid
	// one after another in its fetcher. A crash before that flush leaves
	// the directory without a checkpoint, which recovery reads from the
	// start of its segments, or no directory, as a never-written log.
	l.segs = []*segment{seg}
	l.recoveryPoint = l.leo
	l.dirUnsynced = true
	l.armLocked()
	if l.env().private {
		l.env().syncer.start()
	}
	l.env().logger.Debug("log: created", "dir", l.dir)
	return nil
}

func (c *Config) validate() error {
	switch {
	case c.SegmentBytes < BatchHeaderSize || c.SegmentBytes > math.MaxInt32:
		return fmt.Errorf("log: segment.bytes %d out of range [%d, %d]", c.SegmentBytes, BatchHeaderSize, math.MaxInt32)
	case c.SegmentTime <= 0:
		return fmt.Errorf("log: segment.ms must be positive")
	case c.IndexIntervalBytes < 0:
		return fmt.Errorf("log: index.interval.bytes must not be negative")
	case c.MaxMessageBytes < 0:
		return fmt.Errorf("log: max.message.bytes must not be negative")
	case c.FlushMessages < 1:
		return fmt.Errorf("log: flush.messages must be at least 1")
	}
	return nil
}

// SetConfig replaces the settings (a topic config change). It takes effect
// from the next append.
func (l *Log) SetConfig(cfg Config) error {
	if err := cfg.validate(); err != nil {
		return err
	}
	if l.IsBlank() {
		return errBlank
	}
	l.cfg.Store(l.env().settingsOf(cfg))
	l.signal()
	return nil
}

// Config returns the settings in force.
func (l *Log) Config() Config { return *l.cfg.Load().Config }

// Producers is the producer state Options.Producers made: nil when the
// log was opened without. A never-written lazy log is given its body
// (no files: the first append makes them) and the state with it, which
// is for a caller about to write it (an idempotence check, a
// transaction's verification).
func (l *Log) Producers() ProducerState {
	if l.live() || l.IsBlank() {
		return l.producers
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.live() && l.env().producers != nil {
		l.materialize(l.env().now())
	}
	return l.producers
}

// Dir is the partition directory.
func (l *Log) Dir() string {
	if l.live() || l.IsBlank() {
		return l.body.dir
	}
	return l.name().String()
}

// EndOffset is the log end offset: the offset the next batch will get.
func (l *Log) EndOffset() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.leo
}

// StartOffset is the log start offset: the first offset a read may ask for.
func (l *Log) StartOffset() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.logStart
}

// Size is the total bytes of all segments.
func (l *Log) Size() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	var n int64
	for _, s := range l.segs {
		n += s.size
	}
	return n
}

// Fsyncs counts the data-file fsyncs the syncer has issued.
func (l *Log) Fsyncs() int64 {
	if !l.live() {
		return 0
	}
	return l.fsyncs.Load()
}

// DurableOffset is the offset below which every batch has been fsynced.
func (l *Log) DurableOffset() int64 {
	if !l.live() {
		return 0
	}
	return l.durable.Load()
}

// Append validates one v2 record batch, assigns it the next offsets and
// writes it. b is modified in place (base offset, leader epoch, timestamps
// for LogAppendTime) and written byte for byte. On error nothing is
// written. With SyncBeforeAck the caller should then WaitDurable for
// LastOffset+1 before acknowledging.
func (l *Log) Append(b []byte, opts AppendOptions) (AppendResult, error) {
	cfg := l.cfg.Load()
	now := l.env().now()
	rules := cfg.rules()
	info, err := ValidateBatch(b, &rules, now)
	if err != nil {
		return AppendResult{}, err
	}
	if info.IsControl() {
		return AppendResult{}, fmt.Errorf("%w: control batches are written by the broker only", kerr.InvalidRecord)
	}
	if cfg.Compact && info.NullKey {
		return AppendResult{}, errNullKeyCompacted
	}
	return l.append(b, &info, opts, cfg, now, true)
}

func (l *Log) append(b []byte, info *BatchInfo, opts AppendOptions, cfg *settings, now time.Time, assign bool) (AppendResult, error) {
	if l.IsBlank() {
		return AppendResult{}, errBlank // not an I/O failure: nothing was tried
	}
	l.mu.Lock()
	if l.closed() {
		l.mu.Unlock()
		return AppendResult{}, ErrClosed
	}
	base := l.leo
	if !assign {
		// A leader's cleaned log has gaps: a replicated batch may start
		// past the log end, never before it.
		base = info.BaseOffset
		if base < l.leo || base-l.leo > math.MaxUint32 {
			l.mu.Unlock()
			return AppendResult{}, fmt.Errorf("%w: replicated batch starts at %d, log ends at %d", kerr.UnknownServerError, base, l.leo)
		}
	}
	if opts.Guard != nil {
		if err := opts.Guard(*info, base); err != nil {
			l.mu.Unlock()
			return AppendResult{}, err
		}
	}
	if len(l.segs) == 0 {
		if err := l.createLocked(now); err != nil {
			l.mu.Unlock()
			l.ioFailed(err)
			return AppendResult{}, fmt.Errorf("%w: create log: %w", kerr.KafkaStorageError, err)
		}
	}
	if err := l.maybeRoll(len(b), base+int64(info.LastOffsetDelta), cfg, now); err != nil {
		l.mu.Unlock()
		l.ioFailed(err)
		return AppendResult{}, err
	}
	if assign {
		stampBatch(b, info, base, opts.LeaderEpoch, cfg.LogAppendTime, now)
	}
	active := l.segs[len(l.segs)-1]
	if err := active.appendBatch(b, &info.BatchHeader, cfg.IndexIntervalBytes, cfg.Preallocate, cfg.SegmentBytes); err != nil {
		// A failed write may have left part of the batch in the file;
		// cut it off so the log stays a valid prefix.
		_ = active.h.do(func(f *os.File) error { return f.Truncate(active.size) })
		active.cutAt(active.size)
		l.mu.Unlock()
		l.ioFailed(err)
		return AppendResult{}, fmt.Errorf("%w: %w", kerr.KafkaStorageError, err)
	}
	l.leo = info.NextOffset()
	l.applyLocked(info)
	if opts.Appended != nil {
		opts.Appended(*info)
	}
	l.unflushed += int64(info.NumRecords)
	needFlush := l.unflushed >= cfg.FlushMessages
	l.armLocked()
	res := AppendResult{BaseOffset: base, LastOffset: info.LastOffset(), LogAppendTime: -1, LogStartOffset: l.logStart, Info: *info}
	l.mu.Unlock()
	if cfg.LogAppendTime {
		res.LogAppendTime = info.MaxTimestamp
	}
	if needFlush {
		l.signal()
	}
	return res, nil
}

// AppendReplicated appends batches that already carry their offsets, as a
// follower copies them from its leader. Each batch is checked for CRC and
// structure and must start at the log end offset.
func (l *Log) AppendReplicated(batches []byte) (int64, error) {
	cfg := l.cfg.Load()
	now := l.env().now()
	for len(batches) > 0 {
		h, err := ParseBatchHeader(batches)
		if err != nil {
			return l.EndOffset(), err
		}
		if int(h.Length) > len(batches) {
			return l.EndOffset(), fmt.Errorf("%w: partial batch", kerr.CorruptMessage)
		}
		b := batches[:h.Length]
		info, err := validateReplicated(b, now)
		if err != nil {
			return l.EndOffset(), err
		}
		if _, err := l.append(b, &info, AppendOptions{}, cfg, now, false); err != nil {
			return l.EndOffset(), err
		}
		batches = batches[h.Length:]
	}
	return l.EndOffset(), nil
}

// maybeRoll starts a new active segment when the batch would not fit in
// the current one, the current one is older than segment.ms, or its
// relative offsets would overflow (last is the batch's last offset).
// Called with mu held.
func (l *Log) maybeRoll(size int, last int64, cfg *settings, now time.Time) error {
	active := l.segs[len(l.segs)-1]
	if active.empty() {
		return nil
	}
	full := active.size+int64(size) > cfg.SegmentBytes
	old := now.Sub(active.created) >= cfg.SegmentTime
	overflow := last-active.base > math.MaxUint32
	if !full && !old && !overflow {
		return nil
	}
	return l.roll(now)
}

// roll seals the active segment (the syncer flushes it in the background)
// and opens a new one at the log end offset. Called with mu held.
func (l *Log) roll(now time.Time) error {
	prev := l.segs[len(l.segs)-1]
	if err := prev.trim(); err != nil && prev.filled > prev.size {
		// Zeros past a sealed segment's batches would read as a torn
		// tail after a restart and cut the segments after it.
		return fmt.Errorf("%w: cut the zeros past a sealed segment: %w", kerr.KafkaStorageError, err)
	} else if err != nil {
		l.env().logger.Warn("log: could not free blocks reserved past a sealed segment", "dir", l.dir, "base", prev.base, "err", err)
	}
	seg, err := createSegment(l.env().files, l.dir, l.leo, now)
	if err != nil {
		return fmt.Errorf("%w: roll segment: %w", kerr.KafkaStorageError, err)
	}
	l.toFlush = append(l.toFlush, prev)
	l.segs = append(l.segs[:len(l.segs):len(l.segs)], seg)
	l.snapshotProducersLocked(false)
	l.env().logger.Debug("log: rolled segment", "dir", l.dir, "base", seg.base)
	l.signal()
	return nil
}

// ReadResult is what Read found.
type ReadResult struct {
	Ranges []FileRange
	Bytes  int64
}

// Read returns, as file ranges, the batches starting with the one that
// holds offset, up to maxBytes (but at least one whole batch, so a reader
// always makes progress) and only batches that end below maxOffset (the
// high watermark the caller passes). Ranges end on batch boundaries. An
// offset below the log start or past the log end fails with
// OFFSET_OUT_OF_RANGE. dst is reused for the ranges.
func (l *Log) Read(dst []FileRange, offset int64, maxBytes int64, maxOffset int64) (ReadResult, error) {
	res, _, err := l.read(dst, offset, maxBytes, maxOffset, false, nil)
	return res, err
}

// read is Read; with wantNext it also returns the offset that follows the
// last batch returned (offset when nothing is). With copied, the ranges'
// bytes are appended to it while their files are pinned, and the files
// are not handed out.
func (l *Log) read(dst []FileRange, offset int64, maxBytes int64, maxOffset int64, wantNext bool, copied *[]byte) (ReadResult, int64, error) {
	res := ReadResult{Ranges: dst[:0]}
	next := offset
	l.mu.Lock()
	if l.closed() {
		l.mu.Unlock()
		return res, next, ErrClosed
	}
	if offset < l.logStart || offset > l.leo {
		start, end := l.logStart, l.leo
		l.mu.Unlock()
		return res, next, fmt.Errorf("%w: offset %d outside [%d, %d]", kerr.OffsetOutOfRange, offset, start, end)
	}
	if offset >= maxOffset || offset >= l.leo {
		l.mu.Unlock()
		return res, next, nil
	}
	i := l.segmentFor(offset)
	var views [4]view
	vs := views[:0]
	// A read spans a few segments at most; more would only matter for
	// tiny segments, and the reader simply asks again.
	for _, s := range l.segs[i:min(i+len(views), len(l.segs))] {
		vs = append(vs, s.view())
	}
	l.mu.Unlock()
	defer unpinViews(vs)

	first := true
	for _, v := range vs {
		if v.base >= maxOffset || (maxBytes <= 0 && !first) {
			break
		}
		start := int64(0)
		if first {
			p, err := v.offsetPos(offset)
			if err != nil {
				return res, next, err
			}
			start = p
		}
		end := v.size
		if maxOffset < v.next {
			p, err := v.offsetPos(maxOffset)
			if err != nil {
				return res, next, err
			}
			end = p
		}
		if end <= start {
			continue
		}
		limit := start + maxBytes
		if first && maxBytes < end-start {
			var h header
			if err := v.readHeader(start, end, &h); err != nil {
				return res, next, err
			}
			limit = max(limit, start+h.length) // at least one whole batch
		}
		if limit < end {
			p, err := v.boundaryBefore(start, limit)
			if err != nil {
				return res, next, err
			}
			end = p
		}
		if end > start {
			// The file leaves the log: the cache keeps it open for its
			// grace period (files.go).
			f, err := v.h.file(copied == nil)
			if err != nil {
				return res, next, err
			}
			res.Ranges = append(res.Ranges, FileRange{File: f, Pos: start, Len: end - start})
			res.Bytes += end - start
			maxBytes -= end - start
			if wantNext {
				n, err := v.offsetAtBoundary(end)
				if err != nil {
					return res, next, err
				}
				next = n
			}
		}
		first = false
		if end < v.size {
			break
		}
	}
	if copied != nil {
		return res, next, copyRanges(copied, res.Ranges)
	}
	return res, next, nil
}

// copyRanges appends the bytes of ranges to out.
func copyRanges(out *[]byte, ranges []FileRange) error {
	for _, r := range ranges {
		n := len(*out)
		*out = append(*out, make([]byte, r.Len)...)
		if _, err := r.File.ReadAt((*out)[n:], r.Pos); err != nil && !errors.Is(err, io.EOF) {
			return err
		}
	}
	return nil
}

// ReadBytes is Read copied into memory, for callers that cannot send file
// ranges (tests, replication over a copy path).
func (l *Log) ReadBytes(offset, maxBytes, maxOffset int64) ([]byte, error) {
	out := []byte{}
	if _, _, err := l.read(nil, offset, maxBytes, maxOffset, false, &out); err != nil {
		return nil, err
	}
	return out, nil
}

// segmentFor returns the index of the segment holding offset. mu held.
func (l *Log) segmentFor(offset int64) int {
	i := sort.Search(len(l.segs), func(i int) bool { return l.segs[i].base > offset })
	return max(i-1, 0)
}

// Truncate removes every batch at or past offset: the log end offset
// becomes the base offset of the batch holding offset (replication
// truncates a divergent suffix this way). Truncating below the first
// segment empties the log and restarts it at offset.
func (l *Log) Truncate(offset int64) error {
	l.segMu.Lock()
	defer l.segMu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed() {
		return ErrClosed
	}
	if offset >= l.leo {
		return nil
	}
	if len(l.segs) == 0 {
		return nil // never written (or blank): already the empty log at offset 0
	}
	l.truncations++
	l.truncatedTo = min(l.truncatedTo, offset)
	now := l.env().now()
	if offset <= l.segs[0].base || offset < l.logStart {
		return l.restartAt(max(offset, 0), now)
	}
	i := l.segmentFor(offset)
	seg := l.segs[i]
	v := seg.view()
	defer unpinViews([]view{v})
	pos, err := v.offsetPos(offset)
	if err != nil {
		return err
	}
	f, err := v.file()
	if err != nil {
		return fmt.Errorf("%w: truncate: %w", kerr.KafkaStorageError, err)
	}
	for _, s := range l.segs[i+1:] {
		l.retire(s, now)
	}
	if err := f.Truncate(pos); err != nil {
		return fmt.Errorf("%w: truncate: %w", kerr.KafkaStorageError, err)
	}
	seg.cutAt(pos) // truncating freed the reserved blocks and zeros too
	if err := f.Sync(); err != nil {
		return fmt.Errorf("%w: truncate: %w", kerr.KafkaStorageError, err)
	}
	// Rebuild what the cut invalidated from the remaining headers.
	r, _, err := seg.scan(f, scanStart{next: seg.base, maxTs: -1}, pos, math.MaxInt64, l.cfg.Load().IndexIntervalBytes, nil)
	if err != nil {
		return err
	}
	seg.size, seg.next, seg.maxTs, seg.ix, seg.sinceIx = r.validEnd, r.next, r.maxTs, r.ix, r.sinceIx
	seg.ix.aborted = keepAborted(v.aborted, seg.next)
	seg.synced = min(seg.synced, seg.size)
	seg.dirty = true
	_ = os.Remove(seg.prefix + indexSuffix)
	_ = os.Remove(seg.prefix + timeIndexSuffix)
	l.segs = append([]*segment(nil), l.segs[:i+1]...)
	// The cut segment is the active one now, so it leaves the queue of
	// sealed segments (it may have been sealed and not yet flushed): a
	// flush takes what it finds there as sealed and, once done, claims
	// the segment's end as the recovery point, which for an active
	// segment would cover appends made meanwhile that the flush neither
	// fsynced nor indexed (an abort missing from the .txnindex that
	// recovery then trusts). The active segment is covered by the
	// checkpointing flush instead.
	l.toFlush = keepSegments(l.toFlush, l.segs[:i])
	l.leo = seg.next
	if err := l.truncateProducersLocked(false); err != nil {
		return err
	}
	return l.afterTruncate()
}

// TruncateFullyAndStartAt drops every batch and restarts the log, empty,
// at offset: log start, end and recovery point all become offset. A
// follower whose log ends below the leader's log start does this before
// it fetches from there (Kafka's truncateFullyAndStartAt).
func (l *Log) TruncateFullyAndStartAt(offset int64) error {
	if offset < 0 {
		return fmt.Errorf("%w: cannot start a log at %d", kerr.InvalidRequest, offset)
	}
	l.segMu.Lock()
	defer l.segMu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed() {
		return ErrClosed
	}
	now := l.env().now()
	if l.IsBlank() {
		return errBlank
	}
	if len(l.segs) == 0 {
		// Never written: nothing to drop; the directory and its first
		// segment start at offset, as an append there would make them.
		// The offsets are the log's own from now on, files or not.
		if l.body == emptyBody {
			l.materialize(now)
		}
		l.leo, l.logStart = offset, offset
		return l.createLocked(now)
	}
	l.truncations++
	l.truncatedTo = min(l.truncatedTo, l.logStart)
	if err := l.restartAt(offset, now); err != nil {
		return err
	}
	l.recoveryPoint = offset
	if l.durable.Load() < offset {
		l.durable.Store(offset) // nothing below offset is left to sync
	}
	return l.writeCheckpointLocked()
}

// restartAt drops every segment and starts an empty log at offset. mu held.
func (l *Log) restartAt(offset int64, now time.Time) error {
	for _, s := range l.segs {
		l.retire(s, now)
	}
	seg, err := createSegment(l.env().files, l.dir, offset, now)
	if err != nil {
		return fmt.Errorf("%w: %w", kerr.KafkaStorageError, err)
	}
	l.segs = []*segment{seg}
	l.toFlush = nil
	l.leo, l.logStart = offset, offset
	if err := l.truncateProducersLocked(true); err != nil {
		return err
	}
	return l.afterTruncate()
}

// afterTruncate pulls the durability marks back to the new end and makes
// the checkpoint say so before anything new is appended. mu held.
func (l *Log) afterTruncate() error {
	if l.durable.Load() > l.leo {
		l.durable.Store(l.leo)
	}
	if l.logStart > l.leo {
		l.logStart = l.leo
	}
	l.recoveryPoint = min(l.recoveryPoint, l.leo)
	l.armLocked()
	return l.writeCheckpointLocked()
}

// writeCheckpointLocked persists the recovery point and log start offset.
// It runs with mu held so that checkpoints are written in the order the
// state changed; they are rare (roll, truncation, retention, the periodic
// flush), so the short stall of appends is accepted.
func (l *Log) writeCheckpointLocked() error {
	if l.has(stateDeferSync) {
		l.ckptPending = true // CloseAll writes it after the data's sync
		return nil
	}
	hw := l.hw.Load()
	ck := checkpoint{recoveryPoint: l.recoveryPoint, logStartOffset: l.logStart, highWatermark: hw}
	if err := l.env().files.retry(func() error { return writeCheckpoint(l.dir, ck) }); err != nil {
		return fmt.Errorf("%w: checkpoint: %w", kerr.KafkaStorageError, err)
	}
	l.ckptHW = hw
	return nil
}

// NoteHighWatermark records the partition's high watermark for the next
// checkpoint (the periodic flush, a roll, a truncation, Close). It takes
// no lock once the log was written (a never-written one takes mu); a
// checkpoint may lag the high watermark, which only makes a restarted
// replica start lower than it could.
func (l *Log) NoteHighWatermark(hw int64) {
	if l.live() {
		l.hw.Store(hw)
		return
	}
	if l.IsBlank() {
		return // noted 0 for good: its logs end at 0
	}
	// Never written, so at most 0: a flag, not the shared body.
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.live(): // written meanwhile
		l.hw.Store(hw)
	case hw >= 0:
		l.state.Or(stateHWNoted)
	default:
		l.state.And(^stateHWNoted)
	}
}

// NotedHighWatermark is the high watermark NoteHighWatermark last
// recorded (at Open, the checkpoint's; -1 when none). It takes no lock.
func (l *Log) NotedHighWatermark() int64 {
	switch {
	case l.live():
		return l.hw.Load()
	case l.has(stateHWNoted):
		return 0
	}
	return -1
}

// CheckpointedHighWatermark is the high watermark the checkpoint held when
// the log was opened, and whether it held one (logs written before
// version 2 checkpoints, or never checkpointed, hold none). It may exceed
// the log end after a crash cut an unsynced tail.
func (l *Log) CheckpointedHighWatermark() (int64, bool) { return l.openHW, l.openHW >= 0 }

func keepSegments(list, alive []*segment) []*segment {
	var out []*segment
	for _, s := range list {
		for _, a := range alive {
			if s == a {
				out = append(out, s)
				break
			}
		}
	}
	return out
}

// retire unlinks a segment's files now and closes its file after the
// delete delay, so reads that already hold its ranges can finish. The
// cache no longer closes it; one it closed already stays closed unless a
// read has it pinned. mu held.
func (l *Log) retire(s *segment, now time.Time) {
	if err := s.h.hold(false); err != nil {
		l.env().logger.Warn("log: could not reopen a deleted segment for the reads in flight", "dir", l.dir, "base", s.base, "err", err)
	}
	s.removeFiles()
	l.retired = append(l.retired, retiredSegment{seg: s, deadline: now.Add(l.cfg.Load().FileDeleteDelay)})
	l.armLocked()
}

// AdvanceStartOffset raises the log start offset (DeleteRecords). offset
// must not pass the high watermark hw, which the caller supplies. Whole
// segments below the new start are deleted.
func (l *Log) AdvanceStartOffset(offset, hw int64) (int64, error) {
	l.segMu.Lock()
	defer l.segMu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed() {
		return 0, ErrClosed
	}
	if offset > hw || offset > l.leo {
		return l.logStart, fmt.Errorf("%w: %d is past the high watermark %d", kerr.OffsetOutOfRange, offset, min(hw, l.leo))
	}
	if offset <= l.logStart {
		return l.logStart, nil
	}
	l.logStart = offset
	now := l.env().now()
	if err := l.deleteBelow(now, func(s *segment) bool { return s.next <= offset }); err != nil {
		return l.logStart, err
	}
	return l.logStart, l.writeCheckpointLocked()
}

// deleteBelow deletes leading segments for which del is true, rolling the
// active segment first if it would go too. mu held.
func (l *Log) deleteBelow(now time.Time, del func(*segment) bool) error {
	n := 0
	for n < len(l.segs) && del(l.segs[n]) && !l.segs[n].empty() {
		n++
	}
	if n == 0 {
		return nil
	}
	if n == len(l.segs) {
		if err := l.roll(now); err != nil {
			return err
		}
	}
	for _, s := range l.segs[:n] {
		l.retire(s, now)
	}
	l.segs = append([]*segment(nil), l.segs[n:]...)
	l.toFlush = keepSegments(l.toFlush, l.segs)
	if first := l.segs[0].base; first > l.logStart {
		l.logStart = first
	}
	removeSnapshotsOutside(l.dir, l.segs[0].base, l.leo)
	return nil
}

// EnforceRetention deletes whole segments that retention.ms or
// retention.bytes no longer keeps, never past the high watermark hw. It
// returns how many segments went.
func (l *Log) EnforceRetention(hw int64) (int, error) {
	if l.IsBlank() {
		return 0, nil
	}
	cfg := l.cfg.Load()
	l.segMu.Lock()
	defer l.segMu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed() {
		return 0, ErrClosed
	}
	now := l.env().now()
	var total int64
	for _, s := range l.segs {
		total += s.size
	}
	retiredBefore := len(l.retired)
	err := l.deleteBelow(now, func(s *segment) bool {
		if s.next > hw {
			return false
		}
		expired := cfg.RetentionTime >= 0 && s.maxTs >= 0 && now.UnixMilli()-s.maxTs > cfg.RetentionTime.Milliseconds()
		oversize := cfg.RetentionBytes >= 0 && total-s.size >= cfg.RetentionBytes
		if expired || oversize {
			total -= s.size
			return true
		}
		return false
	})
	deleted := len(l.retired) - retiredBefore
	if deleted > 0 {
		l.env().logger.Info("log: retention deleted segments", "dir", l.dir, "segments", deleted, "log_start_offset", l.logStart)
		if werr := l.writeCheckpointLocked(); werr != nil && err == nil {
			err = werr
		}
	}
	return deleted, err
}

// Flush fsyncs everything appended so far, writes the indexes and the
// recovery checkpoint.
func (l *Log) Flush() error {
	return l.flush(true, true)
}

// WaitDurable blocks until every batch below offset is fsynced, asking the
// syncer for an fsync; appends waiting together share one fsync.
func (l *Log) WaitDurable(ctx context.Context, offset int64) error {
	if !l.live() {
		// Never written: nothing below offset 0, and no append has
		// handed out a larger one.
		l.mu.Lock()
		closing := l.closing()
		l.mu.Unlock()
		switch {
		case closing:
			return ErrClosed
		case offset <= 0:
			return nil
		}
		return fmt.Errorf("log: wait for offset %d of a log never written", offset)
	}
	for {
		if l.durable.Load() >= offset {
			return nil
		}
		l.durableMu.Lock()
		if l.stopped {
			l.durableMu.Unlock()
			return ErrClosed
		}
		if l.durableCh == nil {
			l.durableCh = make(chan struct{})
		}
		ch := l.durableCh
		l.durableMu.Unlock()
		// advanceDurable stores durable before it closes the channel, so
		// checking after taking ch cannot miss a wake-up.
		if l.durable.Load() >= offset {
			return nil
		}
		failures := l.syncFailures.Load()
		l.signal()
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
		// A flush that failed after this waiter asked fails it: the
		// data may never become durable (a full or failing disk).
		if l.durable.Load() < offset && l.syncFailures.Load() != failures {
			if err := l.lastSyncErr.Load(); err != nil {
				return fmt.Errorf("%w: %w", kerr.KafkaStorageError, *err)
			}
		}
	}
}

// ioFailed tells the owner of an I/O failure (never with mu held).
// Running out of descriptors is not one (Options.OnIOError).
func (l *Log) ioFailed(err error) {
	if l.env().onIOError != nil && err != nil && !isFDLimit(err) {
		l.env().onIOError(err)
	}
}

// wakeWaiters wakes every WaitDurable caller to look again. With stop, they
// give up with ErrClosed.
func (l *Log) wakeWaiters(stop bool) {
	if !l.live() {
		return
	}
	l.durableMu.Lock()
	if stop {
		l.stopped = true
	}
	if l.durableCh != nil {
		close(l.durableCh)
		l.durableCh = nil
	}
	l.durableMu.Unlock()
}

// signal asks the Syncer for a pass over the log now.
func (l *Log) signal() {
	if !l.live() {
		return // nothing to flush
	}
	l.syncAsked.Store(true)
	l.env().syncer.request(l)
}

// Close flushes the log, writes the final checkpoint and closes its files.
// A lazy log that was never written is left as it was: nothing on disk.
func (l *Log) Close() error {
	if l.IsBlank() {
		return nil // the logs it stands for were never opened
	}
	if !l.startClose(false) {
		return ErrClosed
	}
	return l.finishClose()
}

// startClose marks the log closing and detaches it from its Syncer; false
// when a Close began before. With deferSync the close leaves durability
// to CloseAll's filesystem syncs (stateDeferSync).
func (l *Log) startClose(deferSync bool) bool {
	l.segMu.Lock() // waits for a cleaner's swap in progress
	l.mu.Lock()
	if l.closing() {
		l.mu.Unlock()
		l.segMu.Unlock()
		return false
	}
	flags := stateClosing
	if deferSync {
		flags |= stateDeferSync
	}
	l.state.Or(flags)
	l.mu.Unlock()
	l.segMu.Unlock()
	l.stopSyncing()
	return true
}

// finishClose flushes what was appended, snapshots the producers' state
// and closes the files.
func (l *Log) finishClose() error {
	err := l.flush(true, true)
	l.mu.Lock()
	if err == nil {
		l.snapshotProducersLocked(!l.has(stateDeferSync))
	}
	l.state.Or(stateClosed)
	l.mu.Unlock()
	l.closeFiles()
	return err
}

// stopSyncing detaches the log from its Syncer (waiting for a pass in
// progress), stops a private Syncer, and fails WaitDurable callers.
func (l *Log) stopSyncing() {
	if l.live() {
		l.env().syncer.detach(l)
	}
	if l.env().private {
		l.env().syncer.Close()
	}
	l.wakeWaiters(true)
}

func (l *Log) closeFiles() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.body == emptyBody {
		return
	}
	for _, s := range l.segs {
		if err := s.trim(); err != nil {
			l.env().logger.Warn("log: could not free blocks reserved past the log end", "dir", l.dir, "base", s.base, "err", err)
		}
		s.h.close()
	}
	for _, r := range l.retired {
		r.seg.h.close()
	}
	l.retired = nil
}
