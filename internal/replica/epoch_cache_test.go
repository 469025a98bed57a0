package replica

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func cacheOf(entries ...EpochEntry) *EpochCache {
	c := &EpochCache{}
	c.setEntries(slices.Clone(entries))
	return c
}

func TestEndOffsetFor(t *testing.T) {
	// Epochs 2@10, 4@20, 7@35; log end 50.
	c := cacheOf(EpochEntry{2, 10}, EpochEntry{4, 20}, EpochEntry{7, 35})
	tests := []struct {
		name      string
		requested int32
		epoch     int32
		end       int64
	}{
		{"undefined epoch", -1, UndefinedEpoch, UndefinedOffset},
		{"older than every epoch", 1, 1, 10},
		{"zero, older than every epoch", 0, 0, 10},
		{"first epoch ends where the second starts", 2, 2, 20},
		{"gap between epochs answers the floor epoch", 3, 2, 20},
		{"middle epoch", 4, 4, 35},
		{"gap before the latest", 6, 4, 35},
		{"latest epoch ends at the log end", 7, 7, 50},
		{"newer than every epoch", 8, UndefinedEpoch, UndefinedOffset},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			epoch, end := c.EndOffsetFor(tt.requested, 50)
			if epoch != tt.epoch || end != tt.end {
				t.Fatalf("EndOffsetFor(%d) = (%d, %d), want (%d, %d)", tt.requested, epoch, end, tt.epoch, tt.end)
			}
		})
	}
	if e, o := cacheOf().EndOffsetFor(3, 50); e != UndefinedEpoch || o != UndefinedOffset {
		t.Fatalf("empty cache: (%d, %d), want undefined", e, o)
	}
}

func TestEpochCacheChanges(t *testing.T) {
	base := []EpochEntry{{2, 10}, {4, 20}, {7, 35}}
	tests := []struct {
		name string
		op   func(c *EpochCache) error
		want []EpochEntry
	}{
		{"assign a newer epoch", func(c *EpochCache) error { return c.Assign(8, 40) }, []EpochEntry{{2, 10}, {4, 20}, {7, 35}, {8, 40}}},
		{"assign the latest epoch again later is a no-op", func(c *EpochCache) error { return c.Assign(7, 45) }, base},
		{"assign the latest epoch earlier moves it", func(c *EpochCache) error { return c.Assign(7, 30) }, []EpochEntry{{2, 10}, {4, 20}, {7, 30}}},
		{"assign replaces entries with higher epochs or offsets", func(c *EpochCache) error { return c.Assign(5, 25) }, []EpochEntry{{2, 10}, {4, 20}, {5, 25}}},
		{"negative epochs are ignored", func(c *EpochCache) error { return c.Assign(-1, 60) }, base},
		{"truncate from end at an epoch start", func(c *EpochCache) error { return c.TruncateFromEnd(20) }, []EpochEntry{{2, 10}}},
		{"truncate from end inside an epoch", func(c *EpochCache) error { return c.TruncateFromEnd(36) }, base},
		{"truncate from end at the first epoch", func(c *EpochCache) error { return c.TruncateFromEnd(10) }, []EpochEntry{}},
		{"truncate from start inside an epoch", func(c *EpochCache) error { return c.TruncateFromStart(25) }, []EpochEntry{{4, 25}, {7, 35}}},
		{"truncate from start at an epoch start", func(c *EpochCache) error { return c.TruncateFromStart(35) }, []EpochEntry{{7, 35}}},
		{"truncate from start below every epoch", func(c *EpochCache) error { return c.TruncateFromStart(5) }, base},
		{"truncate from start past the latest start", func(c *EpochCache) error { return c.TruncateFromStart(90) }, []EpochEntry{{7, 90}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := cacheOf(base...)
			if err := tt.op(c); err != nil {
				t.Fatal(err)
			}
			if got := c.Entries(); !slices.Equal(got, tt.want) && !(len(got) == 0 && len(tt.want) == 0) {
				t.Fatalf("entries %v, want %v", got, tt.want)
			}
		})
	}
}

func TestEpochCheckpointPersists(t *testing.T) {
	dir := t.TempDir()
	c, ok, err := openEpochCache(openLog(t, dir))
	if err != nil || ok {
		t.Fatalf("fresh dir: ok=%v err=%v", ok, err)
	}
	for _, e := range []EpochEntry{{0, 0}, {3, 17}, {5, 99}} {
		if err := c.Assign(e.Epoch, e.StartOffset); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.TruncateFromEnd(99); err != nil {
		t.Fatal(err)
	}
	again, ok, err := openEpochCache(openLog(t, dir))
	if err != nil || !ok {
		t.Fatalf("reopen: ok=%v err=%v", ok, err)
	}
	if want := []EpochEntry{{0, 0}, {3, 17}}; !slices.Equal(again.Entries(), want) {
		t.Fatalf("reopened %v, want %v", again.Entries(), want)
	}
	if _, err := os.Stat(filepath.Join(dir, epochCheckpointFile+".tmp")); !os.IsNotExist(err) {
		t.Fatalf("temporary checkpoint left behind: %v", err)
	}
	// A damaged file is reported as not loaded, never half-applied.
	if err := os.WriteFile(filepath.Join(dir, epochCheckpointFile), []byte("v1\n2\n0 0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := openEpochCache(openLog(t, dir)); err != nil || ok {
		t.Fatalf("damaged checkpoint: ok=%v err=%v", ok, err)
	}
}

func TestDecodeEpochCheckpoint(t *testing.T) {
	tests := []struct {
		in   string
		want []EpochEntry
		ok   bool
	}{
		{"v1\n0\n", []EpochEntry{}, true},
		{"v1\n2\n1 0\n4 30\n", []EpochEntry{{1, 0}, {4, 30}}, true},
		{"v1\n2\n1 0\n4 30", nil, false},   // no final newline: torn write
		{"v1\n3\n1 0\n4 30\n", nil, false}, // count disagrees
		{"v1\n2\n4 0\n1 30\n", nil, false}, // epochs not increasing
		{"v1\n2\n1 30\n4 30\n", nil, false},
		{"v1\n1\n-1 0\n", nil, false},
		{"v1\n1\n1 -5\n", nil, false},
		{"v1\n1\n1  5\n", nil, false},
		{"v2\n0\n", nil, false},
		{"", nil, false},
		{"v1\n1\n2147483648 0\n", nil, false},
	}
	for _, tt := range tests {
		got, err := decodeEpochCheckpoint([]byte(tt.in))
		if (err == nil) != tt.ok || (tt.ok && !slices.Equal(got, tt.want)) {
			t.Errorf("decode(%q) = %v, %v; want %v ok=%v", tt.in, got, err, tt.want, tt.ok)
		}
	}
}

func FuzzDecodeEpochCheckpoint(f *testing.F) {
	f.Add([]byte("v1\n0\n"))
	f.Add([]byte("v1\n2\n1 0\n4 30\n"))
	f.Add(encodeEpochCheckpoint([]EpochEntry{{0, 0}, {7, 1 << 40}}))
	f.Add([]byte("v1\n99999999999\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		entries, err := decodeEpochCheckpoint(b)
		if err != nil {
			return
		}
		// Whatever decodes is a valid cache and survives a round trip.
		for i := 1; i < len(entries); i++ {
			if entries[i].Epoch <= entries[i-1].Epoch || entries[i].StartOffset <= entries[i-1].StartOffset {
				t.Fatalf("decoded entries not increasing: %v", entries)
			}
		}
		again, err := decodeEpochCheckpoint(encodeEpochCheckpoint(entries))
		if err != nil || !slices.Equal(again, entries) && len(entries) > 0 {
			t.Fatalf("round trip: %v -> %v, %v", entries, again, err)
		}
	})
}
