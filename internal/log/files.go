package log

import (
	"errors"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Files bounds how many segment files the logs sharing it keep open. A
// broker may host tens of thousands of partitions with data; a file
// descriptor per segment, as Kafka keeps, runs into RLIMIT_NOFILE (20,000
// on the machine where the controller scenario found it: each EMFILE took
// the log directory offline and the broker's leaderships flapped). Here a
// segment's .log file is a handle (segFile) that the cache may close while
// nobody uses it and that reopens on the next use; the .index, .timeindex
// and .txnindex files are only opened for a write or a load and closed
// again, so a segment costs at most one descriptor and an idle one none.
//
// Which handle is closed: a clock over the open handles (each use sets its
// bit, the sweep clears it and closes the first handle found clear), never
// a pinned one (an append, a sync, a read in the log doing I/O), never one
// whose file a read handed out as a FileRange within Grace (the range is
// sent after the read returns, with no pin: Grace is the request timeout
// clients use, after which nobody waits for that response), never a
// retired one (its name is gone or another file's, so it could not be
// reopened: it is closed when its delete delay ends, as before). The bound
// is thus soft: when every open handle is in one of those states the cache
// lets the count pass Max rather than fail.
//
// Closing a handle changes nothing the log knows: what was written through
// it is in the page cache, and an fsync through the reopened handle covers
// it (fsync flushes the file, not the descriptor; a write-back error still
// reaches the next fsync, which the kernel reports to a descriptor opened
// after it unless another one saw it first, and there is none). The
// segment's synced mark and the Syncer's bookkeeping are untouched, so the
// next flush reopens the file to sync it; blocks reserved and zeros
// written ahead of the end belong to the file, and trim cuts them through
// whichever handle is open then.
//
// Concurrency: a handle's mu guards its file and pins; Files.mu guards the
// ring of open handles and is taken after a handle's mu, never before it
// except with TryLock (the sweep skips a handle it cannot lock at once).
type Files struct {
	max   int64
	grace time.Duration
	// minGrace is the grace kept when the bound cannot be kept otherwise
	// (or the process ran out of descriptors): min(grace, 1 s).
	minGrace time.Duration

	mu   sync.Mutex
	ring []*segFile // open, evictable handles
	hand int

	open atomic.Int64 // files open through the cache, ring or not
	// over: a sweep after an open left more than max open (pinned or
	// handed-out files); the next unpin sweeps once more.
	over      atomic.Bool
	evictions atomic.Int64 // handles the cache closed
	reopens   atomic.Int64 // handles opened again after an eviction
}

// DefaultHandoutGrace is how long a handle stays open after a read handed
// its file out while the bound can be kept without it: a client's
// request.timeout.ms (30 s) bounds how long the response carrying it is
// waited for. When the bound cannot be kept otherwise, files handed out
// more than a second ago are closed too: a response is sent within
// milliseconds of its read, and a sendfile already started holds its
// descriptor until it ends (os.File counts its users), so only a range
// still queued behind a slow connection's earlier responses can fail
// (os.ErrClosed; the connection closes and the client fetches again).
const DefaultHandoutGrace = 30 * time.Second

// NewFiles returns a cache keeping at most max segment files open (soft:
// see Files); max < 1 means DefaultMaxOpenFiles. grace < 0 means
// DefaultHandoutGrace.
func NewFiles(max int, grace time.Duration) *Files {
	if max < 1 {
		max = DefaultMaxOpenFiles()
	}
	if grace < 0 {
		grace = DefaultHandoutGrace
	}
	return &Files{max: int64(max), grace: grace, minGrace: min(grace, time.Second)}
}

// DefaultMaxOpenFiles is half the process's RLIMIT_NOFILE soft limit
// (which Go's runtime raises to the hard limit at start), leaving the
// other half to sockets, index and checkpoint writes and everything else
// the process opens; 1,024 where the limit cannot be read.
func DefaultMaxOpenFiles() int {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil || rl.Cur == 0 {
		return 1024
	}
	if rl.Cur > 1<<40 {
		return 1 << 30
	}
	return max(int(rl.Cur/2), 64)
}

var (
	defaultFilesOnce sync.Once
	defaultFiles     *Files
)

// processFiles is the cache of logs opened without Options.Files: the
// descriptor limit is the process's, so by default every log in it shares
// one budget.
func processFiles() *Files {
	defaultFilesOnce.Do(func() { defaultFiles = NewFiles(0, -1) })
	return defaultFiles
}

// FilesFor is the cache of a broker configured with max open segment
// files (weir.log.max.open.files): 0 shares the process's, whose budget
// is DefaultMaxOpenFiles.
func FilesFor(max int) *Files {
	if max <= 0 {
		return processFiles()
	}
	return NewFiles(max, -1)
}

// Max is the number of open segment files the cache keeps to.
func (c *Files) Max() int { return int(c.max) }

// Open is the number of segment files open through the cache.
func (c *Files) Open() int { return int(c.open.Load()) }

// Evictions counts the files the cache closed for the bound; Reopens the
// ones opened again on a later use.
func (c *Files) Evictions() int64 { return c.evictions.Load() }
func (c *Files) Reopens() int64   { return c.reopens.Load() }

// isFDLimit reports whether err is the process (EMFILE) or system
// (ENFILE) running out of file descriptors: no fault of the disk.
func isFDLimit(err error) bool {
	return errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE)
}

// IsFDLimit reports whether err is running out of file descriptors
// (EMFILE, ENFILE) rather than an I/O error: the request that met it may
// be retried, and the log directory is healthy.
func IsFDLimit(err error) bool { return isFDLimit(err) }

// retry runs op and, when it ran out of descriptors, closes idle handles
// and runs it once more.
func (c *Files) retry(op func() error) error {
	err := op()
	if err != nil && isFDLimit(err) {
		c.shed()
		err = op()
	}
	return err
}

// openFile is os.OpenFile with one retry after shedding idle handles.
func (c *Files) openFile(path string, flag int, perm os.FileMode) (*os.File, error) {
	var f *os.File
	err := c.retry(func() (err error) {
		f, err = os.OpenFile(path, flag, perm)
		return err
	})
	return f, err
}

// segFile is a segment's .log file as a handle of a Files cache.
type segFile struct {
	c    *Files
	path string

	mu   sync.Mutex
	f    *os.File // nil while closed
	pins int32
	ref  bool // used since the sweep last passed
	// held: retired, swapped out or closed for good; never evicted and
	// never reopened (the path names no file or another one).
	held bool
	out  int64 // when a read last handed the file out (UnixNano)
	idx  int   // position in c.ring, -1 when absent; guarded by c.mu
}

var errSegmentGone = errors.New("log: segment file closed: its segment was deleted")

// newSegFile makes f, just opened at path, a handle of c, pinned once:
// the caller unpins it when done with f.
func newSegFile(c *Files, path string, f *os.File) *segFile {
	h := &segFile{c: c, path: path, f: f, idx: -1, ref: true, pins: 1}
	c.open.Add(1)
	c.add(h)
	c.trim()
	return h
}

// openSegFile opens path as a handle of c, pinned once (newSegFile).
func openSegFile(c *Files, path string, flag int) (*segFile, error) {
	f, err := c.openFile(path, flag, 0o644)
	if err != nil {
		return nil, err
	}
	return newSegFile(c, path, f), nil
}

// pin keeps the handle from being closed until unpin; it does not open it.
func (h *segFile) pin() {
	h.mu.Lock()
	h.pins++
	h.mu.Unlock()
}

// unpin releases pin. When a sweep after an open could not close enough
// files (pinned ones kept the cache over its bound), the next unpin
// sweeps once more, and so on while sweeps close some: a cache held over
// its bound by handed-out files costs its appends nothing.
func (h *segFile) unpin() {
	h.mu.Lock()
	h.pins--
	h.mu.Unlock()
	if h.c.over.Load() && h.c.over.CompareAndSwap(true, false) {
		if reached, closed := h.c.enforce(); !reached && closed > 0 {
			h.c.over.Store(true)
		}
	}
}

// file returns the open file of a pinned handle, reopening it if the
// cache closed it. With handout, the caller gives the file out of the
// log (a FileRange), and the handle stays open for the grace period.
func (h *segFile) file(handout bool) (*os.File, error) {
	h.mu.Lock()
	f, opened, err := h.fileLocked(handout)
	h.mu.Unlock()
	if opened {
		h.c.trim()
	}
	return f, err
}

// acquire is pin and file in one: the file, open and pinned until unpin.
func (h *segFile) acquire() (*os.File, error) {
	h.mu.Lock()
	h.pins++
	f, opened, err := h.fileLocked(false)
	if err != nil {
		h.pins--
	}
	h.mu.Unlock()
	if opened {
		h.c.trim()
	}
	return f, err
}

// fileLocked is file with h.mu held; opened reports a reopen, after
// which the caller trims the cache (without h.mu).
func (h *segFile) fileLocked(handout bool) (f *os.File, opened bool, err error) {
	h.ref = true
	if handout {
		h.out = time.Now().UnixNano()
	}
	if h.f != nil {
		return h.f, false, nil
	}
	if h.held {
		return nil, false, errSegmentGone
	}
	if f, err = h.c.openFile(h.path, os.O_RDWR, 0o644); err != nil {
		return nil, false, err
	}
	h.f = f
	h.c.open.Add(1)
	h.c.reopens.Add(1)
	h.c.add(h)
	return f, true, nil
}

// do runs op on the handle's file, pinned for the call.
func (h *segFile) do(op func(*os.File) error) error {
	f, err := h.acquire()
	if err != nil {
		return err
	}
	defer h.unpin()
	return op(f)
}

// hold keeps the handle open, out of the cache's reach, until close: its
// file is about to lose its name (a retired or swapped-out segment). A
// closed handle is opened first when must is set or a reader has it
// pinned (so that the read finds the file); otherwise it stays closed,
// for good.
func (h *segFile) hold(must bool) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.held {
		return nil
	}
	if h.f == nil && (must || h.pins > 0) {
		f, err := h.c.openFile(h.path, os.O_RDWR, 0o644)
		if err != nil {
			return err
		}
		h.f = f
		h.c.open.Add(1)
		h.c.reopens.Add(1)
	} else if h.f != nil {
		h.c.remove(h)
	}
	h.held = true
	return nil
}

// close closes the handle for good.
func (h *segFile) close() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.held = true
	if h.f == nil {
		return nil
	}
	h.c.remove(h)
	err := h.f.Close()
	h.f = nil
	h.c.open.Add(-1)
	return err
}

// add puts an open handle in the ring. h.mu held.
func (c *Files) add(h *segFile) {
	c.mu.Lock()
	if h.idx < 0 {
		h.idx = len(c.ring)
		c.ring = append(c.ring, h)
	}
	c.mu.Unlock()
}

// remove takes h out of the ring. h.mu held.
func (c *Files) remove(h *segFile) {
	c.mu.Lock()
	c.removeLocked(h)
	c.mu.Unlock()
}

func (c *Files) removeLocked(h *segFile) {
	i := h.idx
	if i < 0 {
		return
	}
	last := len(c.ring) - 1
	c.ring[i] = c.ring[last]
	c.ring[i].idx = i
	c.ring[last] = nil
	c.ring = c.ring[:last]
	h.idx = -1
	if c.hand > last {
		c.hand = 0
	}
}

// trim closes handles while more than max are open: after an open.
func (c *Files) trim() {
	if c.open.Load() <= c.max {
		return
	}
	if reached, _ := c.enforce(); !reached {
		c.over.Store(true)
	}
}

// enforce sweeps down to max, with the full grace for handed-out files
// first and, if that is not enough, with minGrace.
func (c *Files) enforce() (reached bool, closed int) {
	reached, closed = c.sweep(c.max, true, c.grace)
	if !reached && c.minGrace < c.grace {
		var more int
		reached, more = c.sweep(c.max, true, c.minGrace)
		closed += more
	}
	return reached, closed
}

// shed closes idle handles after the process ran out of descriptors: a
// quarter of those open, used recently or not, handed out or not but
// within minGrace.
func (c *Files) shed() {
	c.sweep(c.open.Load()*3/4, false, c.minGrace)
}

// sweepSteps bounds the handles one sweep looks at beyond twice the
// number it must close, so that a cache kept over its bound by pinned
// and handed-out files does not scan them all at every open; the hand
// stays where it stopped.
const sweepSteps = 256

// sweep runs the clock until at most target files are open, two turns
// found nothing more to close, or (with clock) it looked at sweepSteps
// more handles than it had to close twice over. With clock, a handle
// used since the last turn is spared once; a handle handed out within
// grace is spared. It reports whether target was reached and how many
// files it closed.
func (c *Files) sweep(target int64, clock bool, grace time.Duration) (reached bool, closed int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	steps := 2 * len(c.ring)
	if clock {
		steps = min(steps, int(2*(c.open.Load()-target))+sweepSteps)
	}
	now := time.Now().UnixNano()
	for ; steps > 0 && c.open.Load() > target && len(c.ring) > 0; steps-- {
		if c.hand >= len(c.ring) {
			c.hand = 0
		}
		h := c.ring[c.hand]
		if !h.mu.TryLock() {
			c.hand++
			continue
		}
		switch {
		case h.pins > 0 || h.held || h.f == nil || now-h.out < int64(grace):
			c.hand++
		case clock && h.ref:
			h.ref = false
			c.hand++
		default:
			_ = h.f.Close()
			h.f = nil
			c.removeLocked(h) // the last handle moves to c.hand
			c.open.Add(-1)
			c.evictions.Add(1)
			closed++
		}
		h.mu.Unlock()
	}
	return c.open.Load() <= target, closed
}
