package cleaner

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// threadsAt lists this process's threads whose nice value is nice, read
// from /proc/self/task/<tid>/stat (field 19).
func threadsAt(t *testing.T, nice int) []int {
	t.Helper()
	stats, err := filepath.Glob("/proc/self/task/*/stat")
	if err != nil {
		t.Fatal(err)
	}
	var tids []int
	for _, p := range stats {
		b, err := os.ReadFile(p)
		if err != nil {
			continue // the thread ended meanwhile
		}
		// Fields after the command's closing parenthesis start at field 3.
		f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
		if n, err := strconv.Atoi(f[19-3]); err == nil && n == nice {
			tid, _ := strconv.Atoi(filepath.Base(filepath.Dir(p)))
			tids = append(tids, tid)
		}
	}
	return tids
}

// TestWorkersRunAtTheirNice: each worker gets an OS thread of its own at
// weir.log.cleaner.nice with the lowest best-effort I/O priority, the
// rest of the process keeps its priority, and the threads end with the
// workers instead of going back to the runtime at a low priority.
func TestWorkersRunAtTheirNice(t *testing.T) {
	const nice = 13 // no other thread of the test binary has it
	if n := threadsAt(t, nice); len(n) != 0 {
		t.Fatalf("threads at nice %d before the cleaner started: %v", nice, n)
	}
	cfg := DefaultConfig()
	cfg.Threads = 2
	cfg.Nice = nice
	cfg.Backoff = time.Millisecond // many waits: an unlocked worker would change threads
	e := newEnv(t, testLogConfig(), cfg, nil)
	var moved atomic.Int32
	e.c.priority = func(n int) (func() error, error) {
		tid := syscall.Gettid()
		restore, err := lowerThreadPriority(n)
		if err != nil {
			return nil, err
		}
		return func() error {
			if syscall.Gettid() != tid {
				moved.Add(1) // the worker left the thread it lowered
			}
			return restore()
		}, nil
	}
	var looks atomic.Int32
	now := e.c.now
	e.c.now = func() time.Time { looks.Add(1); return now() }
	e.dirtyThreeSegments()
	e.c.Start()
	eventually(t, 5*time.Second, func() bool { return len(threadsAt(t, nice)) == 2 })
	for _, tid := range threadsAt(t, nice) {
		prio, _, errno := syscall.Syscall(syscall.SYS_IOPRIO_GET, ioprioWhoProcess, uintptr(tid), 0)
		if errno != 0 || prio != ioprioLowestBE {
			t.Errorf("thread %d: I/O priority %#x (%v), want %#x", tid, prio, errno, ioprioLowestBE)
		}
	}
	if self := threadsAt(t, 0); len(self) == 0 {
		t.Error("no thread left at nice 0: the broker's threads were lowered too")
	}
	eventually(t, 5*time.Second, func() bool { return len(e.records()) == 2 })
	same(t, e.records(), []string{"1:a=2", "2:b=1"})
	eventually(t, 5*time.Second, func() bool { return looks.Load() > 500 }) // hundreds of waits each
	if err := e.c.Close(); err != nil {
		t.Fatal(err)
	}
	eventually(t, 5*time.Second, func() bool { return len(threadsAt(t, nice)) == 0 })
	if n := moved.Load(); n != 0 {
		t.Fatalf("%d workers stopped on another thread than the one they lowered", n)
	}
}

// TestNiceZeroLeavesThreadsAlone: without weir.log.cleaner.nice the
// workers neither lock a thread nor change a priority.
func TestNiceZeroLeavesThreadsAlone(t *testing.T) {
	var calls atomic.Int32
	cfg := DefaultConfig()
	cfg.Nice = 0
	cfg.Threads = 2
	c, err := New(cfg, Options{SetPriority: func(int) (func() error, error) { calls.Add(1); return func() error { return nil }, nil }})
	if err != nil {
		t.Fatal(err)
	}
	c.Start()
	c.Close()
	if n := calls.Load(); n != 0 {
		t.Fatalf("priority set %d times with nice 0", n)
	}
}

// TestRefusedPriorityIsLoggedOnce: where setpriority is refused the
// workers clean at the broker's priority, and the refusal is logged once
// however many workers meet it.
func TestRefusedPriorityIsLoggedOnce(t *testing.T) {
	var calls atomic.Int32
	logs := &recordingHandler{}
	cfg := DefaultConfig()
	cfg.Nice = 5
	cfg.Threads = 3
	cfg.Backoff = 10 * time.Millisecond
	e := newEnv(t, testLogConfig(), cfg, nil)
	e.c.logger = logs.logger()
	e.c.priority = func(n int) (func() error, error) {
		if n != 5 {
			t.Errorf("priority %d asked, want 5", n)
		}
		calls.Add(1)
		return nil, syscall.EACCES
	}
	e.dirtyThreeSegments()
	e.c.Start()
	eventually(t, 5*time.Second, func() bool { return calls.Load() == 3 && len(e.records()) == 2 })
	if err := e.c.Close(); err != nil {
		t.Fatal(err)
	}
	warns := logs.find("cleaner: workers keep the broker's CPU priority")
	if len(warns) != 1 {
		t.Fatalf("refusal logged %d times, want once", len(warns))
	}
	if !errors.Is(warns[0].err, syscall.EACCES) {
		t.Errorf("logged error %v, want EACCES", warns[0].err)
	}
}

// recordingHandler keeps the records logged through it.
type recordingHandler struct {
	mu   sync.Mutex
	recs []slog.Record
}

type logged struct {
	msg string
	err error
}

func (h *recordingHandler) logger() *slog.Logger { return slog.New(h) }

func (h *recordingHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *recordingHandler) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *recordingHandler) WithGroup(string) slog.Handler            { return h }
func (h *recordingHandler) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	h.recs = append(h.recs, r.Clone())
	h.mu.Unlock()
	return nil
}

// find returns the records logged with msg, with their "err" attribute.
func (h *recordingHandler) find(msg string) []logged {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []logged
	for _, r := range h.recs {
		if r.Message != msg {
			continue
		}
		l := logged{msg: r.Message}
		r.Attrs(func(a slog.Attr) bool {
			if a.Key == "err" {
				l.err, _ = a.Value.Any().(error)
			}
			return true
		})
		out = append(out, l)
	}
	return out
}
