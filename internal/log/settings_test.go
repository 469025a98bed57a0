package log

import (
	"path/filepath"
	"testing"
	"time"
)

// TestLogsShareSettings checks that the logs of one Env with the same
// settings hold one copy of them, whether opened with them or changed
// to them (a topic config change reaches every partition of the topic),
// that a log sees its own settings after a change, and that another Env
// keeps its own.
func TestLogsShareSettings(t *testing.T) {
	dir := t.TempDir()
	syncer := NewSyncer(1)
	t.Cleanup(func() { syncer.Close() })
	env := NewEnv(Options{Syncer: syncer})
	open := func(name string, e *Env) *Log {
		l, err := Open(filepath.Join(dir, name), DefaultConfig(), Options{Env: e, Lazy: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		return l
	}
	a, b := open("t-0", env), open("t-1", env)
	if a.cfg.Load() != b.cfg.Load() {
		t.Fatal("two logs opened with the same settings hold a copy each")
	}
	changed := DefaultConfig()
	changed.RetentionTime = time.Hour
	for _, l := range []*Log{a, b} {
		if err := l.SetConfig(changed); err != nil {
			t.Fatal(err)
		}
	}
	if a.cfg.Load() != b.cfg.Load() {
		t.Fatal("two logs changed to the same settings hold a copy each")
	}
	if got := a.Config().RetentionTime; got != time.Hour {
		t.Fatalf("retention after the change: %v", got)
	}
	other := NewEnv(Options{Syncer: syncer})
	if c := open("t-2", other); c.cfg.Load() == a.cfg.Load() || c.env() != other || a.env() != env {
		t.Fatal("logs of different Envs share settings")
	}
}
