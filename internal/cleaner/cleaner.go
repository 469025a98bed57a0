package cleaner

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"weir/internal/log"
)

// Config holds the broker's cleaner settings (Kafka's log.cleaner.*).
type Config struct {
	// Enabled is log.cleaner.enable: without it Start starts no worker.
	Enabled bool
	// Threads is log.cleaner.threads: workers cleaning logs at once.
	Threads int
	// DedupeBufferSize is log.cleaner.dedupe.buffer.size: the key maps of
	// all workers together; each gets its share.
	DedupeBufferSize int64
	// LoadFactor is log.cleaner.io.buffer.load.factor: how full a key map
	// may get.
	LoadFactor float64
	// IOBufferSize is log.cleaner.io.buffer.size: read buffers of all
	// workers together (each grows past its share for a larger batch).
	IOBufferSize int
	// IOMaxBytesPerSecond is log.cleaner.io.max.bytes.per.second: read and
	// write I/O of all workers together, on average.
	IOMaxBytesPerSecond float64
	// Backoff is log.cleaner.backoff.ms: how long an idle worker waits
	// before it looks for a dirty log again.
	Backoff time.Duration
	// Nice is weir.log.cleaner.nice: the CPU priority of each worker's
	// own OS thread, 0 (the broker's) to 19 (the lowest), so that the
	// kernel runs the produce and fetch paths first when both want a
	// core. 0: workers run on the runtime's shared threads.
	Nice int
}

// DefaultConfig returns Kafka's defaults.
func DefaultConfig() Config {
	return Config{
		Enabled:             true,
		Threads:             1,
		DedupeBufferSize:    128 << 20,
		LoadFactor:          0.9,
		IOBufferSize:        512 << 10,
		IOMaxBytesPerSecond: math.MaxFloat64,
		Backoff:             15 * time.Second,
		Nice:                DefaultNice,
	}
}

// Validate reports settings a cleaner cannot run with.
func (c Config) Validate() error {
	switch {
	case c.Threads < 0:
		return fmt.Errorf("cleaner: log.cleaner.threads %d is negative", c.Threads)
	case c.Threads > 0 && c.DedupeBufferSize/int64(c.Threads) < 2*entryBytes:
		return fmt.Errorf("cleaner: log.cleaner.dedupe.buffer.size %d leaves a worker room for no key; raise it or lower log.cleaner.threads", c.DedupeBufferSize)
	case !(c.LoadFactor > 0 && c.LoadFactor <= 1):
		return fmt.Errorf("cleaner: log.cleaner.io.buffer.load.factor %v is not in (0, 1]", c.LoadFactor)
	case c.IOBufferSize < 0:
		return fmt.Errorf("cleaner: log.cleaner.io.buffer.size %d is negative", c.IOBufferSize)
	case c.Backoff < 0:
		return fmt.Errorf("cleaner: log.cleaner.backoff.ms is negative")
	}
	if err := validNice(c.Nice); err != nil {
		return err
	}
	return nil
}

// Log is what the cleaner needs of a partition log; *log.Log has it.
type Log interface {
	Config() log.Config
	CleanerView() (log.CleanerView, error)
	EachCleanableBatch(from, to int64, buf []byte, fn func(segBase int64, b []byte) error) ([]byte, error)
	NewCleanedSegment(base, end int64) (*log.CleanedSegment, error)
	ScanHeaders(from int64, fn func(log.BatchHeader) bool) error
}

// Partition is one partition log handed to the cleaner. It is cleaned
// while its log's cleanup.policy includes compact (log.Config.Compact).
type Partition struct {
	TopicPartition
	// Dir is the log directory holding the partition's directory: its
	// checkpoint goes there.
	Dir string
	Log Log
	// Stable bounds cleaning: records at or past it are never cleaned
	// (the replica's high watermark: records above it may still be
	// truncated). nil: the high watermark the log last noted, or its end
	// when none was.
	Stable func() int64
	// Producers lists the producers whose state must survive cleaning
	// (the idempotent-producer state's entries). nil: every producer the
	// log's batch headers show, but those idle for the cleaner's
	// ProducerExpiration.
	Producers func() map[int64]ProducerLast
	// Transactions says which batches were aborted and how far the log
	// is stable. nil: the log's own (its aborted-transaction index and
	// last stable offset) when it tracks transactions; a partition whose
	// transactions nobody tracks keeps every transactional batch and
	// every marker.
	Transactions Transactions
}

// Options are the cleaner's injected dependencies.
type Options struct {
	Logger *slog.Logger
	// Now is the clock for horizons, lags and metrics; nil: time.Now.
	Now func() time.Time
	// Sleep is how the I/O throttle waits; nil: a timer.
	Sleep func(context.Context, time.Duration) error
	// ProducerExpiration is producer.id.expiration.ms, for partitions
	// without a Producers hook; zero: Kafka's default, one day.
	ProducerExpiration time.Duration
	// SetPriority gives the calling OS thread a nice value and returns
	// how to put its priority back; nil: the platform's (setpriority(2)
	// on Linux).
	SetPriority func(nice int) (restore func() error, err error)
}

// Cleaner compacts the logs added to it: a pool of log.cleaner.threads
// workers, each picking the dirtiest compacted log, cleaning a round of
// it, and recording where the round ended in its log directory's
// checkpoint. Start starts the workers, Close stops them and waits.
type Cleaner struct {
	logger     *slog.Logger
	now        func() time.Time
	throttle   *throttle
	expiration time.Duration
	priority   func(nice int) (func() error, error)

	priorityRefused atomic.Bool // logged once

	bytesRead, bytesWritten atomic.Int64

	mu       sync.Mutex
	cfg      Config
	parts    map[TopicPartition]*registered
	idle     sync.Cond // broadcast when a partition stops being cleaned
	ckpts    map[string]map[TopicPartition]int64
	lastLook time.Time
	maxRatio float64
	runs     int64
	stop     context.CancelFunc // nil when no worker runs
	wg       sync.WaitGroup
	wake     chan struct{}
	spare    *worker // for CleanOnce

	ckMu sync.Mutex // serialises checkpoint file writes
}

// registered is the cleaner's state of one partition, guarded by
// Cleaner.mu.
type registered struct {
	Partition
	busy            bool
	removed         bool
	cancel          context.CancelFunc
	seenTruncations uint64
	uncleanable     bool
	compact         bool
	since           time.Time // last clean, or when it was added
	ratio           float64
	runs            int64
}

// New makes a cleaner; Start starts its workers.
func New(cfg Config, opts Options) (*Cleaner, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	c := &Cleaner{
		logger: opts.Logger,
		now:    opts.Now,
		cfg:    cfg,
		parts:  map[TopicPartition]*registered{},
		ckpts:  map[string]map[TopicPartition]int64{},
		wake:   make(chan struct{}, 1),
	}
	if c.logger == nil {
		c.logger = slog.New(slog.DiscardHandler)
	}
	if c.now == nil {
		c.now = time.Now
	}
	c.priority = opts.SetPriority
	if c.priority == nil {
		c.priority = lowerThreadPriority
	}
	c.expiration = opts.ProducerExpiration
	if c.expiration <= 0 {
		c.expiration = 24 * time.Hour
	}
	sleep := opts.Sleep
	if sleep == nil {
		sleep = sleepCtx
	}
	c.idle.L = &c.mu
	c.throttle = newThrottle(cfg.IOMaxBytesPerSecond, c.now, sleep)
	c.lastLook = c.now()
	return c, nil
}

// Add hands a partition to the cleaner. Its log directory's checkpoint
// is read the first time one of its partitions is added.
func (c *Cleaner) Add(p Partition) error {
	if p.Log == nil {
		return errors.New("cleaner: partition without a log")
	}
	c.mu.Lock()
	_, loaded := c.ckpts[p.Dir]
	c.mu.Unlock()
	var ck map[TopicPartition]int64
	if !loaded {
		var err error
		if ck, err = readCheckpoint(p.Dir); err != nil {
			c.logger.Warn("cleaner: checkpoint unreadable; its partitions are cleaned from their start", "dir", p.Dir, "err", err)
			ck = map[TopicPartition]int64{}
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.ckpts[p.Dir]; !ok {
		c.ckpts[p.Dir] = ck
	}
	if _, ok := c.parts[p.TopicPartition]; ok {
		return fmt.Errorf("cleaner: %s added twice", p.TopicPartition)
	}
	c.parts[p.TopicPartition] = &registered{Partition: p, since: c.now()}
	return nil
}

// Remove stops cleaning a partition, waiting for a round of it in
// progress to stop (its cleaned segment is dropped). Its checkpoint entry
// stays; Delete drops it too.
func (c *Cleaner) Remove(tp TopicPartition) {
	c.remove(tp)
}

// Delete is Remove for a partition whose log is deleted: its checkpoint
// entry goes, so that a partition of the same name starts clean.
func (c *Cleaner) Delete(tp TopicPartition) error {
	dir, ok := c.remove(tp)
	if !ok {
		return nil
	}
	c.mu.Lock()
	if _, had := c.ckpts[dir][tp]; !had {
		c.mu.Unlock()
		return nil
	}
	delete(c.ckpts[dir], tp)
	c.mu.Unlock()
	return c.saveCheckpoint(dir)
}

func (c *Cleaner) remove(tp TopicPartition) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	p, ok := c.parts[tp]
	if !ok {
		return "", false
	}
	p.removed = true
	if p.cancel != nil {
		p.cancel()
	}
	for p.busy {
		c.idle.Wait()
	}
	delete(c.parts, tp)
	return p.Dir, true
}

// Start starts the workers (none unless log.cleaner.enable).
func (c *Cleaner) Start() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.startLocked()
}

func (c *Cleaner) startLocked() {
	if c.stop != nil || !c.cfg.Enabled || c.cfg.Threads == 0 {
		return
	}
	ctx, stop := context.WithCancel(context.Background())
	c.stop = stop
	c.wg.Add(c.cfg.Threads)
	for range c.cfg.Threads {
		w := c.newWorker(c.cfg)
		go c.run(ctx, w, c.cfg)
	}
}

// Close stops the workers and waits for them; rounds in progress are
// abandoned (their cleaned segments dropped). Partitions stay added, so
// that a later Start resumes.
func (c *Cleaner) Close() error {
	c.mu.Lock()
	stop := c.stop
	c.stop = nil
	c.mu.Unlock()
	if stop != nil {
		stop()
	}
	c.wg.Wait()
	return nil
}

// Reconfigure applies new settings (a dynamic broker config change): the
// I/O limit at once; threads, buffer sizes, backoff and nice by restarting the
// workers.
func (c *Cleaner) Reconfigure(cfg Config) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	c.throttle.setRate(cfg.IOMaxBytesPerSecond)
	c.mu.Lock()
	running := c.stop != nil
	c.mu.Unlock()
	if running {
		c.Close()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.cfg = cfg
	c.spare = nil
	if running {
		c.startLocked()
	}
	return nil
}

// Wake has an idle worker look for a dirty log now rather than after its
// backoff.
func (c *Cleaner) Wake() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

func (c *Cleaner) newWorker(cfg Config) *worker {
	threads := max(cfg.Threads, 1)
	return &worker{
		keys: newKeyMap(cfg.DedupeBufferSize/int64(threads), cfg.LoadFactor),
		buf:  make([]byte, 0, max(cfg.IOBufferSize/threads/2, 64<<10)),
	}
}

// run is one worker: clean the dirtiest log, or wait for the backoff (or
// a Wake) when none is dirty enough.
func (c *Cleaner) run(ctx context.Context, w *worker, cfg Config) {
	defer c.wg.Done()
	if cfg.Nice > 0 {
		defer c.lowerPriority(cfg.Nice)()
	}
	backoff := cfg.Backoff
	t := time.NewTimer(backoff)
	defer t.Stop()
	for {
		cleaned, _ := c.cleanOne(ctx, w)
		if ctx.Err() != nil {
			return
		}
		if cleaned {
			continue
		}
		t.Reset(backoff)
		select {
		case <-ctx.Done():
			return
		case <-c.wake:
		case <-t.C:
		}
	}
}

// lowerPriority moves the calling worker to an OS thread of its own and
// gives that thread the CPU priority nice; where the priority is refused
// the worker runs as it is (logged once). The worker calls what it
// returns as it stops: the thread's priority is put back and the thread
// unlocked, or, where that fails, the thread stays locked and so ends
// with the goroutine (Go's rule for a goroutine that exits locked)
// instead of running the broker's goroutines at a low priority.
func (c *Cleaner) lowerPriority(nice int) (done func()) {
	runtime.LockOSThread()
	restore, err := c.priority(nice)
	if err != nil {
		if c.priorityRefused.CompareAndSwap(false, true) {
			c.logger.Warn("cleaner: workers keep the broker's CPU priority", "weir.log.cleaner.nice", nice, "err", err)
		}
		restore = func() error { return nil }
	}
	return func() {
		if err := restore(); err != nil {
			c.logger.Debug("cleaner: worker thread's priority not put back; the thread ends with the worker", "err", err)
			return
		}
		runtime.UnlockOSThread()
	}
}

// CleanOnce plans every partition and cleans one round of the dirtiest
// one that needs it, in the caller's goroutine; it reports whether it
// cleaned, with the round's stats. Tests and tools use it; the workers do
// the same.
func (c *Cleaner) CleanOnce(ctx context.Context) (Stats, bool, error) {
	c.mu.Lock()
	if c.spare == nil {
		c.spare = c.newWorker(c.cfg)
	}
	w := c.spare
	c.spare = nil // one caller at a time uses it
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		c.spare = w
		c.mu.Unlock()
	}()
	st, err := c.cleanRound(ctx, w)
	return st, err == nil, ignoreNothing(err)
}

func ignoreNothing(err error) error {
	if errors.Is(err, errNothingDirty) {
		return nil
	}
	return err
}

func (c *Cleaner) cleanOne(ctx context.Context, w *worker) (bool, error) {
	_, err := c.cleanRound(ctx, w)
	return err == nil, err
}

type planned struct {
	p    *registered
	view log.CleanerView
	plan Plan
}

// cleanRound plans, picks and cleans. errNothingDirty when no log needs
// cleaning.
func (c *Cleaner) cleanRound(ctx context.Context, w *worker) (Stats, error) {
	pick, ok := c.pick()
	if !ok {
		return Stats{}, errNothingDirty
	}
	p := pick.p
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	c.mu.Lock()
	if p.removed {
		p.busy = false
		c.idle.Broadcast()
		c.mu.Unlock()
		return Stats{}, errNothingDirty
	}
	p.cancel = cancel
	c.mu.Unlock()

	st, err := w.clean(ctx, c, p, pick.view, pick.plan)

	c.mu.Lock()
	p.busy, p.cancel = false, nil
	c.idle.Broadcast()
	c.mu.Unlock()
	tp := p.TopicPartition
	switch {
	case err == nil:
		c.mu.Lock()
		c.ckpts[p.Dir][tp] = st.EndOffset
		p.seenTruncations = pick.view.Truncations
		p.since = c.now()
		p.runs++
		c.runs++
		c.mu.Unlock()
		c.logger.Info("cleaner: cleaned", "topic", tp.Topic, "partition", tp.Partition, "first_dirty", pick.plan.FirstDirty, "end_offset", st.EndOffset,
			"bytes_read", st.BytesRead, "bytes_written", st.BytesWritten, "swaps", st.SegmentsSwaps, "duration", st.Duration)
		if err := c.saveCheckpoint(p.Dir); err != nil {
			c.logger.Warn("cleaner: checkpoint not written", "dir", p.Dir, "err", err)
		}
		return st, nil
	case errors.Is(err, log.ErrStaleClean), errors.Is(err, log.ErrClosed), errors.Is(err, context.Canceled),
		errors.Is(err, os.ErrClosed): // a segment deleted meanwhile outlived its file.delete.delay.ms
		c.logger.Debug("cleaner: round abandoned", "topic", tp.Topic, "partition", tp.Partition, "err", err)
	default:
		c.mu.Lock()
		p.uncleanable = true
		c.mu.Unlock()
		c.logger.Error("cleaner: partition marked uncleanable", "topic", tp.Topic, "partition", tp.Partition, "err", err)
	}
	return st, err
}

// pick plans every partition not being cleaned and marks the dirtiest
// cleanable one busy. Views are taken without the cleaner's lock.
func (c *Cleaner) pick() (planned, bool) {
	c.mu.Lock()
	var regs []*registered
	var cands []Candidate
	for _, p := range c.parts {
		if p.busy || p.uncleanable || p.removed {
			continue
		}
		regs = append(regs, p)
		ck, ok := c.ckpts[p.Dir][p.TopicPartition]
		if !ok {
			ck = -1
		}
		cands = append(cands, Candidate{Checkpoint: ck, SeenTruncations: p.seenTruncations})
	}
	c.mu.Unlock()

	now := c.now()
	var ps []planned
	var plans []Plan
	var cfgs []log.Cleaning
	for i, p := range regs {
		if !p.Log.Config().Compact {
			continue // cheap: a broker hands over every partition
		}
		v, err := p.Log.CleanerView()
		if err != nil || !v.Config.Compact {
			continue
		}
		cand := cands[i]
		cand.View = v
		cand.Stable = p.stable(&v)
		pl := PlanLog(cand, now)
		ps = append(ps, planned{p: p, view: v, plan: pl})
		plans = append(plans, pl)
		cfgs = append(cfgs, v.Config.Cleaning)
	}
	best := Choose(plans, cfgs)

	c.mu.Lock()
	defer c.mu.Unlock()
	c.lastLook = now
	c.maxRatio = 0
	for _, p := range regs {
		p.compact = false
	}
	for _, x := range ps {
		x.p.compact = true
		x.p.ratio = x.plan.Ratio
		c.maxRatio = max(c.maxRatio, x.plan.Ratio)
	}
	if best < 0 || ps[best].p.busy || ps[best].p.removed {
		return planned{}, false
	}
	ps[best].p.busy = true
	return ps[best], true
}

// stable is the offset rounds stop before.
func (p *registered) stable(v *log.CleanerView) int64 {
	s := v.HighWatermark
	if p.Stable != nil {
		s = p.Stable()
	} else if s < 0 {
		s = v.EndOffset
	}
	if t := p.txns(); t != nil {
		s = min(s, t.LastStableOffset(s))
	}
	return s
}

// txns is the partition's transaction state: its hook, else its log's
// when the log tracks transactions; nil when nobody does.
func (p *registered) txns() Transactions {
	if p.Transactions != nil {
		return p.Transactions
	}
	if tr, ok := p.Log.(interface{ TracksTransactions() bool }); ok && !tr.TracksTransactions() {
		return nil
	}
	t, _ := p.Log.(Transactions)
	return t
}

func (p *registered) producers(now time.Time, expiration time.Duration) (map[int64]ProducerLast, error) {
	if p.Producers != nil {
		return p.Producers(), nil
	}
	return producersFromLog(p.Log, now, expiration)
}

func (p *registered) aborted(from, to int64) []log.AbortedTxn {
	if t := p.txns(); t != nil {
		return t.AbortedTransactions(from, to)
	}
	return nil
}

// saveCheckpoint writes dir's checkpoint as it stands.
func (c *Cleaner) saveCheckpoint(dir string) error {
	c.ckMu.Lock()
	defer c.ckMu.Unlock()
	c.mu.Lock()
	m := maps.Clone(c.ckpts[dir])
	c.mu.Unlock()
	return writeCheckpoint(dir, m)
}

// Has reports whether the partition was added (and not removed).
func (c *Cleaner) Has(tp TopicPartition) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.parts[tp]
	return ok
}

// Checkpoint returns the first dirty offset recorded for a partition.
func (c *Cleaner) Checkpoint(tp TopicPartition, dir string) (int64, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	off, ok := c.ckpts[dir][tp]
	return off, ok
}
