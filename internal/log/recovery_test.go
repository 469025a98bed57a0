package log

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"weir/internal/crashtest"
)

// batchLoc is where a batch sits on disk.
type batchLoc struct {
	file       string
	pos, end   int64
	base, next int64
}

// layout lists every batch in the segment files of dir, in offset order.
func layout(t *testing.T, dir string) []batchLoc {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "*.log"))
	sort.Strings(files)
	var out []batchLoc
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for pos := 0; pos+BatchHeaderSize <= len(b); {
			h, err := ParseBatchHeader(b[pos:])
			if err != nil || pos+int(h.Length) > len(b) {
				break
			}
			out = append(out, batchLoc{file: f, pos: int64(pos), end: int64(pos) + int64(h.Length), base: h.BaseOffset, next: h.NextOffset()})
			pos += int(h.Length)
		}
	}
	return out
}

// TestTornWrites cuts segment files at random byte positions past what
// was fsynced, sometimes adding garbage or damaging indexes, and checks
// that recovery yields a valid prefix of what was written that holds every
// fsynced batch.
func TestTornWrites(t *testing.T) {
	rounds := 60
	if testing.Short() {
		rounds = 20
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range rounds {
		t.Run(strconv.Itoa(round), func(t *testing.T) {
			clock := newFakeClock()
			dir := t.TempDir()
			cfg := DefaultConfig()
			cfg.SegmentBytes = int64(500 + rng.IntN(3000))
			cfg.IndexIntervalBytes = 1 + rng.IntN(400)
			l := openTestLog(t, dir, cfg, clock)
			var written [][]byte
			add := func(n int) {
				for range n {
					codec := rng.IntN(5)
					recs := make([]testRecord, 1+rng.IntN(5))
					for i := range recs {
						recs[i] = testRecord{key: []byte{byte(i)}, value: bytes.Repeat([]byte{byte(rng.IntN(256))}, rng.IntN(300)), tsDelta: int64(i)}
					}
					b := makeBatch(t, batchSpec{records: recs, baseTs: clock.now().UnixMilli(), codec: codec})
					if _, err := l.Append(b, AppendOptions{}); err != nil {
						t.Fatal(err)
					}
					written = append(written, b)
				}
			}
			add(rng.IntN(30))
			if err := l.Flush(); err != nil {
				t.Fatal(err)
			}
			durable := l.DurableOffset()
			add(1 + rng.IntN(30))
			crash(l)

			ck, _ := readCheckpoint(dir)
			if ck.recoveryPoint < durable {
				t.Fatalf("checkpoint %d below the durable offset %d", ck.recoveryPoint, durable)
			}
			// Damage only what was not fsynced: from the first batch at or
			// past the recovery point on.
			locs := layout(t, dir)
			var candidates []batchLoc
			for _, b := range locs {
				if b.base >= ck.recoveryPoint {
					candidates = append(candidates, b)
				}
			}
			if len(candidates) > 0 {
				victim := candidates[rng.IntN(len(candidates))]
				cut := victim.pos + rng.Int64N(victim.end-victim.pos+1)
				if err := os.Truncate(victim.file, cut); err != nil {
					t.Fatal(err)
				}
				switch rng.IntN(3) {
				case 0: // random garbage after the cut
					garbage := make([]byte, rng.IntN(200))
					for i := range garbage {
						garbage[i] = byte(rng.IntN(256))
					}
					appendFile(t, victim.file, garbage)
				case 1: // zeros, as a crashed file system may leave
					appendFile(t, victim.file, make([]byte, rng.IntN(200)))
				}
			}
			if rng.IntN(3) == 0 {
				ixs, _ := filepath.Glob(filepath.Join(dir, "*.index"))
				for _, ix := range ixs {
					if rng.IntN(2) == 0 {
						os.WriteFile(ix, []byte("garbage!"), 0o644)
					}
				}
			}

			l = openTestLog(t, dir, cfg, clock)
			defer l.Close()
			got := readAll(t, l, 0)
			if len(got) > len(written) {
				t.Fatalf("recovered %d batches, only %d written", len(got), len(written))
			}
			for i := range got {
				if !bytes.Equal(got[i], written[i]) {
					t.Fatalf("recovered batch %d differs from the one written", i)
				}
			}
			if l.EndOffset() < durable {
				t.Fatalf("recovered end %d lost fsynced data below %d", l.EndOffset(), durable)
			}
			// The recovered log takes appends where it ends.
			res, err := l.Append(simpleBatch(t, 1, clock.now().UnixMilli(), 3), AppendOptions{})
			if err != nil || res.BaseOffset != l.EndOffset()-1 {
				t.Fatalf("append after recovery: %+v %v", res, err)
			}
		})
	}
}

func appendFile(t *testing.T, path string, b []byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write(b)
	f.Close()
}

// crashChildEnv names the directory a re-executed test binary writes to.
const crashChildEnv = "WEIR_LOG_CRASH_CHILD_DIR"

// TestMain turns the test binary into the writer that
// TestSIGKILLRecovery kills, when started with crashChildEnv set.
func TestMain(m *testing.M) {
	if dir := os.Getenv(crashChildEnv); dir != "" {
		crashChild(dir)
		return
	}
	os.Exit(m.Run())
}

func crashChildConfig() Config {
	cfg := DefaultConfig()
	cfg.SegmentBytes = 4096
	cfg.IndexIntervalBytes = 256
	return cfg
}

// crashChild appends one-record batches whose value is their own offset
// and prints "ack N" once offset N is acknowledged (after an fsync when
// WEIR_LOG_CRASH_SYNC=1), until it is killed. With WEIR_LOG_CRASH_SHARED=1
// the log is lazy and uses a shared Syncer.
func crashChild(dir string) {
	cfg := crashChildConfig()
	cfg.SyncBeforeAck = os.Getenv("WEIR_LOG_CRASH_SYNC") == "1"
	var opts Options
	if os.Getenv("WEIR_LOG_CRASH_SHARED") == "1" {
		opts = Options{Syncer: NewSyncer(2), Lazy: true}
	}
	l, err := Open(dir, cfg, opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, "open:", err)
		os.Exit(3)
	}
	out := bufio.NewWriter(os.Stdout)
	var tb fakeTB
	for {
		off := l.EndOffset()
		b := makeBatch(&tb, batchSpec{records: []testRecord{{value: []byte(strconv.FormatInt(off, 10))}}, baseTs: time.Now().UnixMilli()})
		res, err := l.Append(b, AppendOptions{})
		if err == nil && cfg.SyncBeforeAck {
			err = l.WaitDurable(context.Background(), res.LastOffset+1)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "append:", err)
			os.Exit(3)
		}
		fmt.Fprintf(out, "ack %d\n", res.LastOffset)
		out.Flush()
	}
}

// fakeTB lets the child reuse the batch builder outside a test.
type fakeTB struct{ testing.TB }

func (fakeTB) Helper()           {}
func (fakeTB) Fatal(args ...any) { fmt.Fprintln(os.Stderr, args...); os.Exit(3) }

// TestSIGKILLRecovery kills a writing process with SIGKILL at random
// moments, many times over the same directory, and checks after each kill
// that the log is a valid prefix holding every acknowledged record.
func TestSIGKILLRecovery(t *testing.T) {
	rounds := 30
	if testing.Short() {
		rounds = 8
	}
	// The first child creates the directory: a lazy log's first append.
	dir := filepath.Join(t.TempDir(), "p")
	rng := rand.New(rand.NewPCG(3, 4))
	acked := int64(-1)
	for round := range rounds {
		sync := round%2 == 0
		shared := round%4 < 2
		flag := map[bool]string{true: "1", false: "0"}
		env := []string{crashChildEnv + "=" + dir, "WEIR_LOG_CRASH_SYNC=" + flag[sync], "WEIR_LOG_CRASH_SHARED=" + flag[shared]}
		crashtest.Kill(t, env, time.Duration(20+rng.IntN(150))*time.Millisecond, func(line string) {
			recordAck(t, line, &acked)
		})

		l, err := Open(dir, crashChildConfig(), Options{})
		if err != nil {
			t.Fatalf("round %d: reopen: %v", round, err)
		}
		if l.EndOffset() <= acked {
			t.Fatalf("round %d: log ends at %d but offset %d was acknowledged", round, l.EndOffset(), acked)
		}
		for i, b := range readAll(t, l, 0) {
			v := firstValue(t, b)
			if v != strconv.Itoa(i) {
				t.Fatalf("round %d: offset %d holds %q", round, i, v)
			}
		}
		l.Close()
	}
	if acked < int64(rounds) {
		t.Fatalf("only %d records acknowledged over %d rounds", acked+1, rounds)
	}
}

func recordAck(t *testing.T, line string, acked *int64) {
	t.Helper()
	rest, ok := strings.CutPrefix(line, "ack ")
	if !ok {
		t.Fatalf("child said %q", line)
	}
	n, err := strconv.ParseInt(rest, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	*acked = max(*acked, n)
}

// firstValue returns the value of the first record of an uncompressed batch.
func firstValue(t *testing.T, b []byte) string {
	t.Helper()
	r := reader{b: b[BatchHeaderSize:]}
	r.varint()
	r.skip(1)
	r.varint()
	r.varint()
	if k := r.varint(); k > 0 {
		r.skip(int(k))
	}
	n := r.varint()
	if r.err || n < 0 || int(n) > len(r.b)-r.p {
		t.Fatal("unreadable record")
	}
	return string(r.b[r.p : r.p+int(n)])
}

func FuzzRecover(f *testing.F) {
	var seed bytes.Buffer
	for i := range 3 {
		b := simpleBatch(f, 2, testNow.UnixMilli(), 10)
		binary.BigEndian.PutUint64(b, uint64(i*2))
		seed.Write(b)
	}
	f.Add(seed.Bytes(), []byte{}, int64(0))
	f.Add(seed.Bytes()[:100], []byte{0, 0, 0, 1, 0, 0, 0, 9}, int64(4))
	f.Add([]byte("not a log"), []byte("garbage"), int64(7))
	f.Fuzz(func(t *testing.T, logBytes, indexBytes []byte, rp int64) {
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, "00000000000000000000.log"), logBytes, 0o644)
		os.WriteFile(filepath.Join(dir, "00000000000000000000.index"), indexBytes, 0o644)
		os.WriteFile(filepath.Join(dir, "00000000000000000000.timeindex"), indexBytes, 0o644)
		if rp < 0 {
			rp = -rp
		}
		writeCheckpoint(dir, checkpoint{recoveryPoint: rp % 16})
		l, err := Open(dir, DefaultConfig(), Options{Now: newFakeClock().now})
		if err != nil {
			return
		}
		defer l.Close()
		// Whatever survived must read back as whole batches with good CRCs
		// when nothing was claimed fsynced.
		if rp%16 == 0 {
			readAll(t, l, l.StartOffset())
		}
		if _, err := l.Append(simpleBatch(t, 1, testNow.UnixMilli(), 1), AppendOptions{}); err != nil {
			t.Fatalf("append after recovery: %v", err)
		}
		_ = io.EOF
	})
}

// TestCleanReopenWritesNothing: a log closed cleanly is reopened without
// writing a file (no fsync, no index, no checkpoint: what a restart at
// many partitions pays per log), and with the index its appends built; a
// log whose last appends the checkpoint does not cover yet (the process
// was killed) gets its last segment's index written and counts everything
// durable, and its checkpoint moves to its end at its next flush, not at
// the reopen.
func TestCleanReopenWritesNothing(t *testing.T) {
	cfg := DefaultConfig()
	cfg.SegmentBytes = 4 << 10
	cfg.IndexIntervalBytes = 300
	old := time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name   string
		closed bool // Close before the reopen, else a copy of its files
	}{
		{"closed cleanly", true},
		{"killed after its appends", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "t-0")
			l, err := Open(dir, cfg, Options{})
			if err != nil {
				t.Fatal(err)
			}
			for i := range 40 {
				if _, err := l.Append(simpleBatch(t, 2, int64(1000+i), 60), AppendOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			if tc.closed {
				if err := l.Flush(); err != nil {
					t.Fatal(err)
				}
			}
			l.mu.Lock()
			var want [][]indexEntry
			for _, s := range l.segs {
				want = append(want, slices.Clone(s.ix.entries))
			}
			end := l.leo
			l.mu.Unlock()
			if len(want) < 2 || len(want[len(want)-1]) < 2 {
				t.Fatalf("want at least two segments and two index entries in the last: %v", want)
			}
			if tc.closed {
				if err := l.Close(); err != nil {
					t.Fatal(err)
				}
			} else {
				// Killed: its files as they are between two flushes.
				killed := filepath.Join(t.TempDir(), "t-0")
				l.flushMu.Lock()
				err := os.CopyFS(killed, os.DirFS(dir))
				l.flushMu.Unlock()
				if err != nil {
					t.Fatal(err)
				}
				l.Close()
				dir = killed
			}
			files, _ := filepath.Glob(filepath.Join(dir, "*"))
			for _, f := range files {
				if err := os.Chtimes(f, old, old); err != nil {
					t.Fatal(err)
				}
			}
			ckBefore, _ := readCheckpoint(dir)

			r, err := Open(dir, cfg, Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			if r.EndOffset() != end {
				t.Fatalf("end offset %d after the reopen, want %d", r.EndOffset(), end)
			}
			var written []string
			for _, f := range files {
				fi, err := os.Stat(f)
				if err != nil || !fi.ModTime().Equal(old) {
					written = append(written, filepath.Base(f))
				}
			}
			if tc.closed && len(written) > 0 {
				t.Fatalf("files written by the reopen of a log closed cleanly: %v", written)
			}
			// The checkpoint is not rewritten at the reopen: a killed log's
			// stays behind (still true) until its next checkpointing flush.
			if ck, _ := readCheckpoint(dir); ck != ckBefore {
				t.Fatalf("checkpoint rewritten by the reopen: %+v, before %+v", ck, ckBefore)
			}
			if got := r.DurableOffset(); got != end {
				t.Fatalf("durable offset %d after the reopen, want %d", got, end)
			}
			if err := r.Flush(); err != nil {
				t.Fatal(err)
			}
			if ck, ok := readCheckpoint(dir); !ok || ck.recoveryPoint != end {
				t.Fatalf("checkpoint after a flush %+v, want recovery point %d", ck, end)
			}
			r.mu.Lock()
			defer r.mu.Unlock()
			for i, s := range r.segs {
				if i >= len(want) || !slices.Equal(s.ix.entries, want[i]) {
					t.Fatalf("segment %d index after the reopen %v, the appends built %v", i, s.ix.entries, want)
				}
			}
		})
	}
}
