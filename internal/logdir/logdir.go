package logdir

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Config configures a Dir.
type Config struct {
	// Path is the log directory.
	Path string
	// MinFree is the free space the file system must have for the
	// directory to come back online (default 16 MiB).
	MinFree int64
	// Interval is the time between probes while offline (default 1 s).
	Interval time.Duration
	Logger   *slog.Logger
	// OnChange is told when the directory goes offline (false) or comes
	// back (true). Nil: nobody is told.
	OnChange func(online bool)

	// probe checks that the directory takes writes (tests replace it).
	probe func(path string, minFree int64) error
}

// Dir is one log directory's health.
type Dir struct {
	cfg Config

	mu      sync.Mutex // leaf
	err     error      // why it is offline; nil when online
	since   time.Time
	probing bool
	closed  bool
	stop    chan struct{}
	wg      sync.WaitGroup
}

// New returns the health of an online directory.
func New(cfg Config) *Dir {
	if cfg.MinFree <= 0 {
		cfg.MinFree = 16 << 20
	}
	if cfg.Interval <= 0 {
		cfg.Interval = time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.probe == nil {
		cfg.probe = probe
	}
	return &Dir{cfg: cfg, stop: make(chan struct{})}
}

// Failed takes the directory offline after an I/O error of a log in it;
// a later failure while offline changes nothing. Errors that say nothing
// about the disk (a closed file, a cancelled wait, the process or system
// out of file descriptors: EMFILE, ENFILE) are ignored.
func (d *Dir) Failed(err error) {
	if err == nil || errors.Is(err, os.ErrClosed) || errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE) {
		return
	}
	d.mu.Lock()
	if d.err != nil || d.closed {
		d.mu.Unlock()
		return
	}
	d.err, d.since = err, time.Now()
	start := !d.probing
	d.probing = true
	if start {
		d.wg.Add(1)
		go d.probeLoop()
	}
	d.mu.Unlock()
	d.cfg.Logger.Error("log directory offline: writes to it fail", "dir", d.cfg.Path, "err", err)
	if d.cfg.OnChange != nil {
		d.cfg.OnChange(false)
	}
}

// Err is nil while the directory is online, else a KAFKA_STORAGE_ERROR
// saying why it is offline.
func (d *Dir) Err() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.err == nil {
		return nil
	}
	return fmt.Errorf("%w: log directory %s offline since %s: %v", kerr.KafkaStorageError, d.cfg.Path, d.since.UTC().Format(time.RFC3339), d.err)
}

// Online reports whether the directory takes writes.
func (d *Dir) Online() bool { return d.Err() == nil }

// Close stops the probe and waits for it.
func (d *Dir) Close() {
	d.mu.Lock()
	if !d.closed {
		d.closed = true
		close(d.stop)
	}
	d.mu.Unlock()
	d.wg.Wait()
}

// probeLoop brings the directory back once a probe succeeds.
func (d *Dir) probeLoop() {
	defer d.wg.Done()
	tick := time.NewTicker(d.cfg.Interval)
	defer tick.Stop()
	for {
		select {
		case <-d.stop:
			return
		case <-tick.C:
		}
		if err := d.cfg.probe(d.cfg.Path, d.cfg.MinFree); err != nil {
			continue
		}
		d.mu.Lock()
		was, since := d.err, d.since
		d.err, d.probing = nil, false
		d.mu.Unlock()
		d.cfg.Logger.Info("log directory online again", "dir", d.cfg.Path, "offline_for", time.Since(since).Round(time.Millisecond), "was", was)
		if d.cfg.OnChange != nil {
			d.cfg.OnChange(true)
		}
		return
	}
}

// probeFile is written, synced and removed by each probe.
const probeFile = ".weir-disk-probe"

// probe checks that the file system holding path has minFree bytes free
// and that a 4 KiB file can be written, synced and removed there.
func probe(path string, minFree int64) error {
	var st syscall.Statfs_t
	if err := syscall.Statfs(path, &st); err != nil {
		return err
	}
	if free := int64(st.Bavail) * int64(st.Bsize); free < minFree {
		return fmt.Errorf("logdir: %d bytes free, %d needed", free, minFree)
	}
	name := filepath.Join(path, probeFile)
	f, err := os.OpenFile(name, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	_, werr := f.Write(make([]byte, 4096))
	if werr == nil {
		werr = f.Sync()
	}
	cerr := f.Close()
	rerr := os.Remove(name)
	return errors.Join(werr, cerr, rerr)
}
