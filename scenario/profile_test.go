package scenario

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestProfiledWritesProfiles(t *testing.T) {
	dir := t.TempDir()
	cfg := Config{CPUProfile: filepath.Join(dir, "cpu"), MemProfile: filepath.Join(dir, "mem")}
	want := errors.New("drain failed")
	_, err := profiled(cfg, func() (drainOutcome, error) { return drainOutcome{consumed: 1}, want })
	if !errors.Is(err, want) {
		t.Fatalf("err %v, want the drain's error", err)
	}
	for _, p := range []string{cfg.CPUProfile, cfg.MemProfile} {
		st, err := os.Stat(p)
		if err != nil || st.Size() == 0 {
			t.Fatalf("%s: %v, size %v", p, err, st)
		}
	}
}

func TestProfilesOnlyForTheWeirClient(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Bootstrap, cfg.Client, cfg.CPUProfile = "127.0.0.1:9092", ClientJava, "cpu.out"
	if err := cfg.validate(); err == nil {
		t.Fatal("a profile of the Java client was accepted")
	}
	cfg.Client = ClientWeir
	if err := cfg.validate(); err != nil {
		t.Fatal(err)
	}
}
