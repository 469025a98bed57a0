package producer

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

func openAllocator(t *testing.T, dir string, block int64) *Allocator {
	t.Helper()
	r, err := OpenFileReserver(dir)
	if err != nil {
		t.Fatalf("OpenFileReserver: %v", err)
	}
	return NewAllocator(r, block)
}

func nextIDs(t *testing.T, a *Allocator, n int) []int64 {
	t.Helper()
	out := make([]int64, n)
	for i := range out {
		id, err := a.NextID()
		if err != nil {
			t.Fatalf("NextID: %v", err)
		}
		out[i] = id
	}
	return out
}

func TestAllocatorNeverReusesAcrossReopen(t *testing.T) {
	dir := t.TempDir()
	seen := make(map[int64]bool)
	last := int64(-1)
	for round, want := range []struct {
		take  int
		first int64
	}{
		{25, 0},  // blocks [0,10) [10,20) [20,30)
		{1, 30},  // the rest of [20,30) is skipped
		{0, -1},  // a restart that hands out nothing reserves nothing
		{12, 40}, // [40,50) [50,60)
	} {
		a := openAllocator(t, dir, 10)
		ids := nextIDs(t, a, want.take)
		for i, id := range ids {
			if seen[id] || id <= last {
				t.Fatalf("round %d: id %d reused or not increasing after %d", round, id, last)
			}
			if i == 0 && id != want.first {
				t.Fatalf("round %d: first id %d, want %d", round, id, want.first)
			}
			seen[id] = true
			last = id
		}
	}
}

func TestAllocatorConcurrent(t *testing.T) {
	dir := t.TempDir()
	a := openAllocator(t, dir, 7)
	const workers, each = 8, 300
	got := make([][]int64, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for range each {
				id, err := a.NextID()
				if err != nil {
					t.Errorf("NextID: %v", err)
					return
				}
				got[w] = append(got[w], id)
			}
		})
	}
	wg.Wait()
	seen := make(map[int64]bool)
	maxID := int64(-1)
	for w, ids := range got {
		for i, id := range ids {
			if seen[id] {
				t.Fatalf("id %d handed out twice", id)
			}
			if i > 0 && id <= ids[i-1] {
				t.Fatalf("worker %d saw %d after %d", w, id, ids[i-1])
			}
			seen[id] = true
			maxID = max(maxID, id)
		}
	}
	if len(seen) != workers*each {
		t.Fatalf("%d distinct ids, want %d", len(seen), workers*each)
	}
	after := nextIDs(t, openAllocator(t, dir, 7), 1)[0]
	if after <= maxID {
		t.Fatalf("after reopen got %d, not above %d", after, maxID)
	}
}

func TestFileReserverFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, BlockFileName)
	if err := os.WriteFile(path+".tmp", []byte("half a write"), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := OpenFileReserver(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path + ".tmp"); !os.IsNotExist(err) {
		t.Fatalf("stale temporary file kept: %v", err)
	}
	if first, err := r.Reserve(100); err != nil || first != 0 {
		t.Fatalf("Reserve = %d, %v", first, err)
	}
	good, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if next, err := decodeBlockFile(good); err != nil || next != 100 {
		t.Fatalf("file says %d, %v", next, err)
	}

	flip := []byte(string(good))
	flip[len(blockFileHeader)+6] ^= 1 // a digit of the mark
	for name, content := range map[string][]byte{
		"garbage":       []byte("hello"),
		"empty":         nil,
		"bit flip":      flip,
		"truncated":     good[:len(good)-3],
		"negative mark": encodeBlockFile(-5),
	} {
		if err := os.WriteFile(path, content, 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := OpenFileReserver(dir); err == nil {
			t.Errorf("%s: opened a bad file", name)
		}
	}
}

func TestAllocatorExhaustion(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, BlockFileName), encodeBlockFile(math.MaxInt64-15), 0o644); err != nil {
		t.Fatal(err)
	}
	a := openAllocator(t, dir, 10)
	ids := nextIDs(t, a, 10)
	if ids[0] != math.MaxInt64-15 {
		t.Fatalf("first id %d", ids[0])
	}
	if _, err := a.NextID(); !errors.Is(err, ErrExhausted) {
		t.Fatalf("NextID past the end: %v", err)
	}
	if _, _, err := a.InitProducerID(nil); !errors.Is(err, kerr.UnknownServerError) {
		t.Fatalf("InitProducerID past the end: %v", err)
	}
}

type flakyReserver struct {
	fail bool
	next int64
}

func (r *flakyReserver) Reserve(n int64) (int64, error) {
	if r.fail {
		return 0, errors.New("disk on fire")
	}
	first := r.next
	r.next += n
	return first, nil
}

func TestInitProducerID(t *testing.T) {
	src := &flakyReserver{next: 500}
	a := NewAllocator(src, 2)
	var prev int64 = -1
	for range 6 { // three whole blocks
		id, epoch, err := a.InitProducerID(nil)
		if err != nil || epoch != 0 || id <= prev {
			t.Fatalf("InitProducerID = %d, %d, %v after %d", id, epoch, err, prev)
		}
		prev = id
	}
	for _, txn := range []string{"orders", ""} {
		id, epoch, err := a.InitProducerID(&txn)
		if !errors.Is(err, kerr.TransactionalIDAuthorizationFailed) || !errors.Is(err, ErrTransactionsUnsupported) || id != NoProducerID || epoch != NoProducerEpoch {
			t.Fatalf("transactional id %q: %d, %d, %v", txn, id, epoch, err)
		}
	}

	// prev used the last id of its block; the next one needs a reservation.
	src.fail = true
	if _, _, err := a.InitProducerID(nil); !errors.Is(err, kerr.UnknownServerError) {
		t.Fatalf("failed reservation: %v", err)
	}
	src.fail = false
	if id, _, err := a.InitProducerID(nil); err != nil || id <= prev {
		t.Fatalf("after recovery: %d, %v", id, err)
	}
}
