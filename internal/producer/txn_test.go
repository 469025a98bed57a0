package producer

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"weir/internal/log"
)

// encodeTxnBatch is encodeBatch with the transactional attribute set when
// txn is.
func encodeTxnBatch(pid int64, epoch int16, seq int32, n int, ts int64, txn bool) []byte {
	b := encodeBatch(pid, epoch, seq, n, ts)
	if txn {
		binary.BigEndian.PutUint16(b[21:], binary.BigEndian.Uint16(b[21:])|0x10)
		binary.BigEndian.PutUint32(b[17:], crc32.Checksum(b[21:], crcTable))
	}
	return b
}

// txnLog is a partition log that drives a State as its
// log.Options.Producers, as the broker wires transactional partitions.
type txnLog struct {
	t     testing.TB
	dir   string
	cfg   log.Config
	clock *fakeClock
	l     *log.Log
	s     *State
}

func openTxnLog(t testing.TB, dir string, cfg log.Config, clock *fakeClock) *txnLog {
	t.Helper()
	s := NewState(Options{Now: clock.now})
	l, err := log.Open(dir, cfg, log.Options{Now: clock.now, Producers: func() log.ProducerState { return s }})
	if err != nil {
		t.Fatal(err)
	}
	return &txnLog{t: t, dir: dir, cfg: cfg, clock: clock, l: l, s: s}
}

func (p *txnLog) send(pid int64, epoch int16, seq int32, n int, txn, verified bool) (log.AppendResult, error) {
	p.clock.add(time.Millisecond)
	b := encodeTxnBatch(pid, epoch, seq, n, p.clock.now().UnixMilli(), txn)
	guard := p.s.Guard
	if verified {
		guard = p.s.VerifiedGuard
	}
	return p.l.Append(b, log.AppendOptions{LeaderEpoch: 1, Guard: guard})
}

func (p *txnLog) marker(pid int64, epoch int16, coordEpoch int32, commit bool, tv int16) (log.AppendResult, error) {
	p.clock.add(time.Millisecond)
	m := log.TxnMarker{ProducerID: pid, ProducerEpoch: epoch, Marker: log.Marker{Type: log.ControlAbort, CoordinatorEpoch: coordEpoch}}
	if commit {
		m.Type = log.ControlCommit
	}
	return p.l.AppendMarker(m, log.AppendOptions{LeaderEpoch: 1, Guard: p.s.MarkerGuard(tv)})
}

func (p *txnLog) must(res log.AppendResult, err error) log.AppendResult {
	p.t.Helper()
	if err != nil {
		p.t.Fatal(err)
	}
	return res
}

// TestTransactionLifecycle walks two transactional producers and a plain
// one through interleaved transactions and checks the last stable offset,
// the aborted-transaction index, read_committed reads and the producer
// entries at each step.
func TestTransactionLifecycle(t *testing.T) {
	p := openTxnLog(t, t.TempDir(), log.DefaultConfig(), newFakeClock(time.UnixMilli(testTs)))
	defer p.l.Close()
	lso := func(want int64) {
		t.Helper()
		if got := p.l.LastStableOffset(p.l.EndOffset()); got != want {
			t.Fatalf("last stable offset %d, want %d", got, want)
		}
	}
	a0 := p.must(p.send(1, 0, 0, 2, true, true)) // A's transaction: 0-1
	lso(0)
	p.must(p.send(3, 0, 0, 1, false, false))     // plain: 2
	b0 := p.must(p.send(2, 0, 0, 1, true, true)) // B's transaction: 3
	p.must(p.send(1, 0, 2, 1, true, false))      // A continues without verification: 4
	lso(0)
	if e, _ := p.s.Entry(1); e.TxnFirstOffset != a0.BaseOffset {
		t.Fatalf("A's transaction starts at %d, want %d", e.TxnFirstOffset, a0.BaseOffset)
	}
	abortA := p.must(p.marker(1, 0, 5, false, 0)) // 5
	lso(b0.BaseOffset)
	// The marker's last stable offset is B's start: B was still open.
	want := []log.AbortedTxn{{ProducerID: 1, FirstOffset: 0, LastOffset: abortA.BaseOffset, LastStableOffset: b0.BaseOffset}}
	if got := p.l.AbortedTransactions(0, p.l.EndOffset()); !reflect.DeepEqual(got, want) {
		t.Fatalf("aborted %+v, want %+v", got, want)
	}
	// Until the high watermark passes B's commit marker, B is unstable.
	commitB := p.must(p.marker(2, 0, 5, true, 0)) // 6
	if got := p.l.LastStableOffset(commitB.BaseOffset); got != b0.BaseOffset {
		t.Fatalf("LSO below the commit marker %d, want %d", got, b0.BaseOffset)
	}
	lso(p.l.EndOffset())
	p.must(p.send(3, 0, 1, 1, false, false)) // 7
	p.must(p.send(2, 0, 1, 1, true, true))   // B's next transaction: 8
	lso(8)

	// read_committed stops at the LSO and names A's aborted transaction.
	r, err := p.l.ReadIsolated(nil, 0, 1<<20, p.l.EndOffset(), log.ReadCommitted)
	if err != nil {
		t.Fatal(err)
	}
	if r.LastStableOffset != 8 || !reflect.DeepEqual(r.Aborted, want) {
		t.Fatalf("read_committed: LSO %d aborted %+v", r.LastStableOffset, r.Aborted)
	}
	if end := lastOffsetRead(t, r.ReadResult); end != 7 {
		t.Fatalf("read_committed read up to %d, want 7", end)
	}
	// From past A's marker, nothing aborted overlaps.
	if r, _ := p.l.ReadIsolated(nil, 6, 1<<20, p.l.EndOffset(), log.ReadCommitted); r.Aborted != nil {
		t.Fatalf("aborted from 6: %+v", r.Aborted)
	}
	r, _ = p.l.ReadIsolated(nil, 0, 1<<20, p.l.EndOffset(), log.ReadUncommitted)
	if end := lastOffsetRead(t, r.ReadResult); end != 8 || r.Aborted != nil {
		t.Fatalf("read_uncommitted: up to %d, aborted %+v", end, r.Aborted)
	}

	infos := p.l.DescribeProducers()
	wantInfos := []log.ProducerInfo{
		{ProducerID: 1, ProducerEpoch: 0, LastSequence: 2, LastTimestamp: testTs + 5, CoordinatorEpoch: 5, CurrentTxnStartOffset: -1},
		{ProducerID: 2, ProducerEpoch: 0, LastSequence: 1, LastTimestamp: testTs + 8, CoordinatorEpoch: 5, CurrentTxnStartOffset: 8},
		{ProducerID: 3, ProducerEpoch: 0, LastSequence: 1, LastTimestamp: testTs + 7, CoordinatorEpoch: -1, CurrentTxnStartOffset: -1},
	}
	if !reflect.DeepEqual(infos, wantInfos) {
		t.Fatalf("DescribeProducers\n%+v\nwant\n%+v", infos, wantInfos)
	}
}

// lastOffsetRead is the last offset of the batches a read returned, -1
// for none.
func lastOffsetRead(t *testing.T, r log.ReadResult) int64 {
	t.Helper()
	last := int64(-1)
	for _, fr := range r.Ranges {
		b := make([]byte, fr.Len)
		if _, err := fr.File.ReadAt(b, fr.Pos); err != nil && !errors.Is(err, io.EOF) {
			t.Fatal(err)
		}
		for len(b) > 0 {
			h, err := log.ParseBatchHeader(b)
			if err != nil {
				t.Fatal(err)
			}
			last = h.LastOffset()
			b = b[h.Length:]
		}
	}
	return last
}

// TestTransactionErrors is the table of refusals: each gets Kafka's error
// and writes nothing.
func TestTransactionErrors(t *testing.T) {
	type step func(p *txnLog) (log.AppendResult, error)
	send := func(pid int64, epoch int16, seq int32, txn, verified bool) step {
		return func(p *txnLog) (log.AppendResult, error) { return p.send(pid, epoch, seq, 1, txn, verified) }
	}
	marker := func(pid int64, epoch int16, coord int32, commit bool, tv int16) step {
		return func(p *txnLog) (log.AppendResult, error) { return p.marker(pid, epoch, coord, commit, tv) }
	}
	tests := []struct {
		name  string
		setup []step
		try   step
		want  error
	}{
		{"unverified transactional batch", nil, send(1, 0, 0, true, false), kerr.InvalidTxnState},
		{"unverified batch after the transaction ended", []step{send(1, 0, 0, true, true), marker(1, 0, 0, true, 0)}, send(1, 0, 1, true, false), kerr.InvalidTxnState},
		{"unverified batch of a newer epoch than the ongoing transaction", []step{send(1, 0, 0, true, true)}, send(1, 1, 0, true, false), kerr.InvalidTxnState},
		{"plain batch inside a transaction", []step{send(1, 0, 0, true, true)}, send(1, 0, 1, false, false), kerr.InvalidTxnState},
		{"transactional batch of an old epoch", []step{send(1, 2, 0, true, true), marker(1, 2, 0, true, 0)}, send(1, 1, 0, true, true), kerr.InvalidProducerEpoch},
		{"transactional batch out of sequence", []step{send(1, 0, 0, true, true)}, send(1, 0, 5, true, true), kerr.OutOfOrderSequenceNumber},
		{"marker of an old epoch", []step{send(1, 3, 0, true, true)}, marker(1, 2, 0, false, 0), kerr.InvalidProducerEpoch},
		{"marker of the same epoch at transaction version 2", []step{send(1, 3, 0, true, true)}, marker(1, 3, 0, false, 2), kerr.InvalidProducerEpoch},
		{"marker from an older coordinator", []step{send(1, 0, 0, true, true), marker(1, 0, 7, true, 0), send(1, 0, 1, true, true)}, marker(1, 0, 6, true, 0), kerr.TransactionCoordinatorFenced},
		{"transactional batch without a producer id", nil, send(-1, -1, -1, true, true), kerr.InvalidRecord},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := openTxnLog(t, t.TempDir(), log.DefaultConfig(), newFakeClock(time.UnixMilli(testTs)))
			defer p.l.Close()
			for i, s := range tc.setup {
				if _, err := s(p); err != nil {
					t.Fatalf("setup %d: %v", i, err)
				}
			}
			end, before := p.l.EndOffset(), p.s.Entries()
			_, err := tc.try(p)
			if !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
			if p.l.EndOffset() != end || !reflect.DeepEqual(p.s.Entries(), before) {
				t.Fatalf("a refused append changed the log or the state")
			}
		})
	}
}

// TestMarkerAccepted is the table of markers Kafka accepts, and what they
// leave in the producer's entry.
func TestMarkerAccepted(t *testing.T) {
	tests := []struct {
		name      string
		txnEpoch  int16 // the transaction's data epoch; -1: no data
		markEpoch int16
		tv        int16
		wantEpoch int16
		completed bool
	}{
		{"classic, same epoch", 2, 2, 0, 2, true},
		{"classic, bumped epoch (InitProducerId aborting)", 2, 3, 1, 3, true},
		{"version 2, bumped epoch", 2, 3, 2, 3, true},
		{"version 2, retry of a written marker", -1, 3, 2, 3, false},
		{"no transaction: nothing to end", -1, 0, 0, 0, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := openTxnLog(t, t.TempDir(), log.DefaultConfig(), newFakeClock(time.UnixMilli(testTs)))
			defer p.l.Close()
			if tc.txnEpoch >= 0 {
				p.must(p.send(1, tc.txnEpoch, 0, 1, true, true))
			} else if tc.tv >= 2 {
				p.must(p.marker(1, tc.markEpoch, 0, true, tc.tv)) // the first write of the retried marker
			}
			p.must(p.marker(1, tc.markEpoch, 4, false, tc.tv))
			e, _ := p.s.Entry(1)
			if e.Epoch != tc.wantEpoch || e.TxnFirstOffset != -1 || e.CoordinatorEpoch != 4 {
				t.Fatalf("entry %+v", e)
			}
			if got := len(p.l.AbortedTransactions(0, p.l.EndOffset())) == 1; got != tc.completed {
				t.Fatalf("abort indexed: %v, want %v", got, tc.completed)
			}
			if lso := p.l.LastStableOffset(p.l.EndOffset()); lso != p.l.EndOffset() {
				t.Fatalf("LSO %d after the marker, log end %d", lso, p.l.EndOffset())
			}
		})
	}
}

// TestSnapshotRoundTrip encodes a state with every kind of entry and
// decodes it back, and checks that damaged encodings are refused whole.
func TestSnapshotRoundTrip(t *testing.T) {
	p := openTxnLog(t, t.TempDir(), log.DefaultConfig(), newFakeClock(time.UnixMilli(testTs)))
	defer p.l.Close()
	for i := range 7 {
		p.must(p.send(1, 0, int32(i), 1, false, false))
	}
	p.must(p.send(2, 4, 0, 2, true, true))
	p.must(p.send(3, 1, 0, 1, true, true))
	p.must(p.marker(3, 1, 9, false, 0))
	p.must(p.send(4, 0, 0, 1, true, true))
	b := p.s.AppendSnapshot(nil)
	s := NewState(Options{})
	if err := s.LoadSnapshot(b); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(s.Entries(), p.s.Entries()) || s.FirstUnstableOffset() != p.s.FirstUnstableOffset() {
		t.Fatalf("loaded\n%+v\nwant\n%+v", s.Entries(), p.s.Entries())
	}
	for _, bad := range [][]byte{nil, {2, 0, 0, 0, 0}, b[:len(b)-1], append(append([]byte{}, b...), 0)} {
		if err := s.LoadSnapshot(bad); !errors.Is(err, ErrBadSnapshot) || s.Len() != 0 {
			t.Fatalf("damaged snapshot %x: %v, %d producers", bad, err, s.Len())
		}
	}
}

// copyDir copies a partition directory, as a crash would leave it (every
// write is in the page cache, so the copy holds it), optionally cutting
// cut bytes off the end of the last segment (a torn write).
func copyDir(t testing.TB, src, dst string, cut int64) {
	t.Helper()
	// The checkpoint first, before listing: files copied after it may be
	// newer than it says, as after a crash, never older.
	ckpt, err := os.ReadFile(filepath.Join(src, "checkpoint"))
	if err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dst, "checkpoint"), ckpt, 0o644); err != nil {
		t.Fatal(err)
	}
	var last string
	for _, e := range entries {
		if e.Name() == "checkpoint" {
			continue
		}
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if errors.Is(err, os.ErrNotExist) {
			continue // a temporary file renamed meanwhile
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
		if filepath.Ext(e.Name()) == ".log" {
			last = filepath.Join(dst, e.Name())
		}
	}
	if cut > 0 && last != "" {
		fi, err := os.Stat(last)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Truncate(last, max(0, fi.Size()-cut)); err != nil {
			t.Fatal(err)
		}
	}
}

// mbatch is the model's record of one written batch.
type mbatch struct {
	pid, base, last int64
	txn, control    bool
	abort           bool
}

// Fates of a data batch in the model.
const (
	plain = iota
	committed
	aborted
	open
)

// modelTxns derives from the written batches what the log must show: the
// aborted transactions (with the last stable offset after each abort),
// the ongoing transactions' first offsets, and each data batch's fate.
func modelTxns(ws []mbatch) ([]log.AbortedTxn, map[int64]int64, map[int64]int) {
	var abortedTxns []log.AbortedTxn
	ongoing := map[int64]int64{}
	members := map[int64][]int64{}
	fate := map[int64]int{}
	for _, b := range ws {
		switch {
		case b.control:
			first, ok := ongoing[b.pid]
			if !ok {
				continue
			}
			delete(ongoing, b.pid)
			f := committed
			if b.abort {
				f = aborted
				lso := b.last + 1
				for _, o := range ongoing {
					lso = min(lso, o)
				}
				abortedTxns = append(abortedTxns, log.AbortedTxn{ProducerID: b.pid, FirstOffset: first, LastOffset: b.base, LastStableOffset: lso})
			}
			for _, m := range members[b.pid] {
				fate[m] = f
			}
			members[b.pid] = nil
		case b.txn:
			if _, ok := ongoing[b.pid]; !ok {
				ongoing[b.pid] = b.base
			}
			members[b.pid] = append(members[b.pid], b.base)
			fate[b.base] = open
		default:
			fate[b.base] = plain
		}
	}
	return abortedTxns, ongoing, fate
}

// readCommittedOffsets reads the log as a read_committed consumer does,
// a few batches per fetch, dropping records of aborted transactions the
// way Kafka's consumer does, and returns the base offsets of the data
// batches it keeps.
func readCommittedOffsets(t *testing.T, l *log.Log, hw int64) []int64 {
	t.Helper()
	var kept []int64
	var queue []log.AbortedTxn
	abortedPids := map[int64]bool{}
	seen := map[log.AbortedTxn]bool{}
	for off := l.StartOffset(); ; {
		r, err := l.ReadIsolated(nil, off, 200, hw, log.ReadCommitted)
		if err != nil {
			t.Fatal(err)
		}
		if r.Bytes == 0 {
			return kept
		}
		for _, a := range r.Aborted {
			if !seen[a] {
				seen[a] = true
				queue = append(queue, a)
			}
		}
		for _, fr := range r.Ranges {
			b := make([]byte, fr.Len)
			if _, err := fr.File.ReadAt(b, fr.Pos); err != nil && !errors.Is(err, io.EOF) {
				t.Fatal(err)
			}
			for len(b) > 0 {
				h, err := log.ParseBatchHeader(b)
				if err != nil {
					t.Fatal(err)
				}
				if h.IsControl() {
					m, err := log.ParseMarker(b[:h.Length])
					if err != nil {
						t.Fatal(err)
					}
					if m.Aborted() {
						delete(abortedPids, h.ProducerID)
					}
				} else if h.IsTransactional() {
					rest := queue[:0]
					for _, a := range queue {
						if a.FirstOffset <= h.LastOffset() {
							abortedPids[a.ProducerID] = true
							continue
						}
						rest = append(rest, a)
					}
					queue = rest
					if !abortedPids[h.ProducerID] {
						kept = append(kept, h.BaseOffset)
					}
				} else {
					kept = append(kept, h.BaseOffset)
				}
				off = h.NextOffset()
				b = b[h.Length:]
			}
		}
	}
}

// TestTransactionModel drives a log and its producer state with random
// interleavings of transactional and plain producers, commits, aborts
// (classic and KIP-890 markers), truncations, clean restarts and crashes
// (a copy of the directory, sometimes with a torn tail), and checks after
// every step against a model of the written batches: the last stable
// offset never passes an open transaction or the high watermark; the
// aborted-transaction index holds exactly the aborted transactions, with
// the model's last stable offsets, also when rebuilt after a crash;
// read_committed readers see exactly the plain and committed batches below
// the last stable offset; and the restored producer state equals one
// replayed from the whole log.
func TestTransactionModel(t *testing.T) {
	seeds := 8
	if testing.Short() {
		seeds = 4
	}
	for seed := range seeds {
		rng := rand.New(rand.NewPCG(uint64(seed), 16))
		cfg := log.DefaultConfig()
		cfg.SegmentBytes = int64(300 + rng.IntN(800))
		cfg.IndexIntervalBytes = 150
		clock := newFakeClock(time.UnixMilli(testTs))
		base := t.TempDir()
		dirs := 0
		p := openTxnLog(t, filepath.Join(base, "0"), cfg, clock)
		var written []mbatch
		prefix := func() {
			end := p.l.EndOffset()
			n := 0
			for n < len(written) && written[n].last < end {
				n++
			}
			written = written[:n]
		}
		for step := range 160 {
			op := rng.IntN(100)
			var what string
			switch {
			case op < 40: // transactional data
				pid := int64(1 + rng.IntN(3))
				epoch, seq, inTxn := next(p.s, pid)
				what = "txn data"
				res, err := p.send(pid, epoch, seq, 1+rng.IntN(3), true, !inTxn || rng.IntN(2) == 0)
				if err != nil {
					t.Fatalf("seed %d step %d: %s: %v", seed, step, what, err)
				}
				written = append(written, mbatch{pid: pid, base: res.BaseOffset, last: res.LastOffset, txn: true})
			case op < 55: // plain idempotent and non-idempotent data
				pid := int64(10)
				epoch, seq, _ := next(p.s, pid)
				if rng.IntN(3) == 0 {
					pid, epoch, seq = -1, -1, -1
				}
				what = "plain data"
				res, err := p.send(pid, epoch, seq, 1+rng.IntN(3), false, false)
				if err != nil {
					t.Fatalf("seed %d step %d: %s: %v", seed, step, what, err)
				}
				written = append(written, mbatch{pid: pid, base: res.BaseOffset, last: res.LastOffset})
			case op < 80: // a marker
				pid := int64(1 + rng.IntN(3))
				epoch, _, _ := next(p.s, pid)
				tv := int16(0)
				if rng.IntN(2) == 0 {
					tv, epoch = 2, epoch+1
				}
				abort := rng.IntN(2) == 0
				what = "marker"
				res, err := p.marker(pid, epoch, 1, !abort, tv)
				if err != nil {
					t.Fatalf("seed %d step %d: %s: %v", seed, step, what, err)
				}
				written = append(written, mbatch{pid: pid, base: res.BaseOffset, last: res.LastOffset, control: true, abort: abort})
			case op < 87: // truncation
				what = "truncate"
				to := p.l.StartOffset() + rng.Int64N(p.l.EndOffset()-p.l.StartOffset()+1)
				if err := p.l.Truncate(to); err != nil {
					t.Fatal(err)
				}
				prefix()
				checkReplayed(t, p, seed, step, what)
			case op < 93: // clean restart
				what = "restart"
				before, beforeAborted := p.s.Entries(), p.l.AbortedTransactions(0, p.l.EndOffset())
				if err := p.l.Close(); err != nil {
					t.Fatal(err)
				}
				p = openTxnLog(t, p.dir, cfg, clock)
				if got := p.s.Entries(); !reflect.DeepEqual(got, before) {
					t.Fatalf("seed %d step %d: state after restart\n%+v\nwant\n%+v", seed, step, got, before)
				}
				if got := p.l.AbortedTransactions(0, p.l.EndOffset()); !reflect.DeepEqual(got, beforeAborted) {
					t.Fatalf("seed %d step %d: aborted after restart %+v, want %+v", seed, step, got, beforeAborted)
				}
			default: // crash
				what = "crash"
				dirs++
				dst := filepath.Join(base, string(rune('0'+dirs%10))+"-"+time.Duration(dirs).String())
				cut := int64(0)
				if rng.IntN(2) == 0 {
					cut = 1 + rng.Int64N(40)
				}
				copyDir(t, p.dir, dst, cut)
				if err := p.l.Close(); err != nil {
					t.Fatal(err)
				}
				p = openTxnLog(t, dst, cfg, clock)
				prefix()
				checkReplayed(t, p, seed, step, what)
			}
			checkModel(t, p, written, rng, seed, step, what)
			checkIndexFiles(t, p, seed, step, what)
		}
		if err := p.l.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// next is a producer's next epoch and sequence as the state knows them,
// and whether it has a transaction ongoing.
func next(s *State, pid int64) (int16, int32, bool) {
	e, ok := s.Entry(pid)
	if !ok || e.Epoch < 0 {
		return 0, 0, false
	}
	return e.Epoch, e.LastSeq() + 1, e.TxnFirstOffset >= 0
}

// checkReplayed compares the producer state the log restored (from a
// snapshot and a partial replay) with one replayed from the whole log.
func checkReplayed(t *testing.T, p *txnLog, seed, step int, what string) {
	t.Helper()
	ref := NewState(Options{Now: p.clock.now})
	if err := ref.Rebuild(p.l, 0); err != nil {
		t.Fatal(err)
	}
	if got, want := p.s.Entries(), ref.Entries(); !reflect.DeepEqual(got, want) {
		t.Fatalf("seed %d step %d (%s): restored state\n%+v\nreplayed\n%+v", seed, step, what, got, want)
	}
}

func checkModel(t *testing.T, p *txnLog, written []mbatch, rng *rand.Rand, seed, step int, what string) {
	t.Helper()
	leo := p.l.EndOffset()
	wantAborted, ongoing, fate := modelTxns(written)
	minOpen := leo
	for _, f := range ongoing {
		minOpen = min(minOpen, f)
	}
	hw := p.l.StartOffset() + rng.Int64N(leo-p.l.StartOffset()+1)
	if lso := p.l.LastStableOffset(hw); lso > hw || lso > minOpen {
		t.Fatalf("seed %d step %d (%s): LSO %d at hw %d passes the high watermark or an open transaction (first open %d)", seed, step, what, lso, hw, minOpen)
	}
	lso := p.l.LastStableOffset(leo)
	if lso != minOpen {
		t.Fatalf("seed %d step %d (%s): LSO %d at the log end, want %d", seed, step, what, lso, minOpen)
	}
	got := p.l.AbortedTransactions(0, leo)
	if len(got) != 0 || len(wantAborted) != 0 {
		if !reflect.DeepEqual(got, wantAborted) {
			t.Fatalf("seed %d step %d (%s): aborted\n%+v\nwant\n%+v", seed, step, what, got, wantAborted)
		}
	}
	var wantKept []int64
	for _, b := range written {
		if !b.control && b.last < lso && (fate[b.base] == plain || fate[b.base] == committed) {
			wantKept = append(wantKept, b.base)
		}
	}
	if kept := readCommittedOffsets(t, p.l, leo); !reflect.DeepEqual(kept, wantKept) {
		t.Fatalf("seed %d step %d (%s): read_committed kept %v, want %v", seed, step, what, kept, wantKept)
	}
}

// TestSnapshotFallbacks restarts a log whose newest producer snapshot is
// damaged, or whose snapshots and aborted-transaction indexes are all
// gone, and checks that recovery falls back to an older snapshot or to a
// replay of the whole log and rebuilds the same state and index.
func TestSnapshotFallbacks(t *testing.T) {
	for _, damage := range []string{"corrupt newest snapshot", "no snapshots or indexes"} {
		t.Run(damage, func(t *testing.T) {
			cfg := log.DefaultConfig()
			cfg.SegmentBytes = 400
			clock := newFakeClock(time.UnixMilli(testTs))
			p := openTxnLog(t, t.TempDir(), cfg, clock)
			for i := range 12 {
				pid := int64(1 + i%3)
				epoch, seq, _ := next(p.s, pid)
				p.must(p.send(pid, epoch, seq, 2, true, true))
				if i%2 == 1 {
					p.must(p.marker(pid, epoch, 0, i%4 == 1, 0))
				}
			}
			before, aborted := p.s.Entries(), p.l.AbortedTransactions(0, p.l.EndOffset())
			if len(aborted) == 0 {
				t.Fatal("no aborts to rebuild")
			}
			if err := p.l.Close(); err != nil {
				t.Fatal(err)
			}
			ents, _ := os.ReadDir(p.dir)
			var snaps []string
			for _, e := range ents {
				switch filepath.Ext(e.Name()) {
				case ".snapshot":
					snaps = append(snaps, e.Name())
					if damage == "no snapshots or indexes" {
						os.Remove(filepath.Join(p.dir, e.Name()))
					}
				case ".txnindex":
					if damage == "no snapshots or indexes" {
						os.Remove(filepath.Join(p.dir, e.Name()))
					}
				}
			}
			if damage == "corrupt newest snapshot" {
				newest := filepath.Join(p.dir, snaps[len(snaps)-1])
				b, _ := os.ReadFile(newest)
				b[len(b)-1] ^= 0xff
				os.WriteFile(newest, b, 0o644)
			}
			// A recovery point of 0 trusts no index: all are rebuilt by the
			// replay.
			os.WriteFile(filepath.Join(p.dir, "checkpoint"), []byte("v2 0 0 -1\n"), 0o644)
			// Temporary files a crash left mid-write go at recovery.
			strays := []string{"00000000000000000003.snapshot.tmp", "00000000000000000000.txnindex.tmp"}
			for _, name := range strays {
				os.WriteFile(filepath.Join(p.dir, name), []byte("torn"), 0o644)
			}
			p = openTxnLog(t, p.dir, cfg, clock)
			defer p.l.Close()
			for _, name := range strays {
				if _, err := os.Stat(filepath.Join(p.dir, name)); !errors.Is(err, os.ErrNotExist) {
					t.Fatalf("%s left after recovery: %v", name, err)
				}
			}
			if got := p.s.Entries(); !reflect.DeepEqual(got, before) {
				t.Fatalf("state\n%+v\nwant\n%+v", got, before)
			}
			if got := p.l.AbortedTransactions(0, p.l.EndOffset()); !reflect.DeepEqual(got, aborted) {
				t.Fatalf("aborted\n%+v\nwant\n%+v", got, aborted)
			}
		})
	}
}

// TestRetentionAndExpiry deletes the oldest segments, with their aborted
// transactions and snapshots, and checks what stays: the index entries of
// the remaining segments, a last stable offset never below the log start,
// and producers with an ongoing transaction spared by expiry.
func TestRetentionAndExpiry(t *testing.T) {
	cfg := log.DefaultConfig()
	cfg.SegmentBytes = 300
	clock := newFakeClock(time.UnixMilli(testTs))
	s := NewState(Options{Now: clock.now, Expiration: time.Hour})
	l, err := log.Open(t.TempDir(), cfg, log.Options{Now: clock.now, Producers: func() log.ProducerState { return s }})
	if err != nil {
		t.Fatal(err)
	}
	p := &txnLog{t: t, dir: l.Dir(), cfg: cfg, clock: clock, l: l, s: s}
	defer p.l.Close()
	for i := range 8 {
		p.must(p.send(1, 0, int32(2*i), 2, true, true))
		p.must(p.marker(1, 0, 0, false, 0))
	}
	open := p.must(p.send(2, 0, 0, 1, true, true))
	aborted := p.l.AbortedTransactions(0, p.l.EndOffset())
	if len(aborted) != 8 {
		t.Fatalf("%d aborts indexed", len(aborted))
	}
	cut := aborted[4].LastOffset + 1
	start, err := p.l.AdvanceStartOffset(cut, p.l.EndOffset())
	if err != nil {
		t.Fatal(err)
	}
	left := p.l.AbortedTransactions(start, p.l.EndOffset())
	for _, a := range left {
		if a.LastOffset < start {
			t.Fatalf("entry %+v of a deleted range listed from %d", a, start)
		}
	}
	ents, _ := os.ReadDir(p.dir)
	for _, e := range ents {
		name := strings.TrimSuffix(strings.TrimSuffix(e.Name(), ".txnindex"), ".snapshot")
		if off, err := strconv.ParseInt(name, 10, 64); err == nil && name != e.Name() && off < first(p) {
			t.Fatalf("%s outlived its segment (first segment %d)", e.Name(), first(p))
		}
	}
	if lso := p.l.LastStableOffset(p.l.EndOffset()); lso != open.BaseOffset {
		t.Fatalf("LSO %d, want the open transaction's start %d", lso, open.BaseOffset)
	}
	// An open transaction below the log start holds the LSO at the start.
	if _, err := p.l.AdvanceStartOffset(p.l.EndOffset(), p.l.EndOffset()); err != nil {
		t.Fatal(err)
	}
	if lso := p.l.LastStableOffset(p.l.EndOffset()); lso != p.l.StartOffset() {
		t.Fatalf("LSO %d below the log start %d", lso, p.l.StartOffset())
	}
	clock.add(2 * time.Hour)
	if n := p.l.ExpireProducers(); n != 1 {
		t.Fatalf("expired %d producers, want only the one without a transaction", n)
	}
	if infos := p.l.DescribeProducers(); len(infos) != 1 || infos[0].ProducerID != 2 || infos[0].CurrentTxnStartOffset != open.BaseOffset {
		t.Fatalf("after expiry: %+v", infos)
	}
}

// first is the base offset of the log's first segment on disk.
func first(p *txnLog) int64 {
	ents, _ := os.ReadDir(p.dir)
	for _, e := range ents {
		if d, ok := strings.CutSuffix(e.Name(), ".log"); ok {
			off, _ := strconv.ParseInt(d, 10, 64)
			return off
		}
	}
	return -1
}

// TestVerificationGuard is KIP-890 part 1's race: a verification answered
// before a marker must not let a batch in after it (the batch would open
// a transaction the coordinator does not know). The table runs the steps
// in both orders and with stale and foreign guards.
func TestVerificationGuard(t *testing.T) {
	tests := []struct {
		name string
		run  func(p *txnLog) error
		want error
	}{
		{"fresh guard", func(p *txnLog) error {
			g := p.start(1, 0)
			_, err := p.sendGuarded(1, 0, 0, g)
			return err
		}, nil},
		{"guard ended by a marker", func(p *txnLog) error {
			p.must(p.send(1, 0, 0, 1, true, true))
			g := p.start(1, 0) // the transaction is ongoing: none needed
			if g != NoVerification {
				t.Fatalf("guard %d for an ongoing transaction", g)
			}
			p.must(p.marker(1, 0, 0, false, 0))
			g = p.start(1, 0)                   // verifying the next transaction ...
			p.must(p.marker(1, 0, 0, false, 0)) // ... which the coordinator aborts
			_, err := p.sendGuarded(1, 0, 1, g)
			return err
		}, kerr.InvalidTxnState},
		{"another producer's guard", func(p *txnLog) error {
			p.start(2, 0)
			g := p.start(3, 0)
			p.start(1, 0)
			_, err := p.sendGuarded(1, 0, 0, g)
			return err
		}, kerr.InvalidTxnState},
		{"no guard, no ongoing transaction", func(p *txnLog) error {
			_, err := p.sendGuarded(1, 0, 0, NoVerification)
			return err
		}, kerr.InvalidTxnState},
		{"no guard, continuing the transaction", func(p *txnLog) error {
			p.must(p.sendGuarded(1, 0, 0, p.start(1, 0)))
			_, err := p.sendGuarded(1, 0, 1, NoVerification)
			return err
		}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := openTxnLog(t, t.TempDir(), log.DefaultConfig(), newFakeClock(time.UnixMilli(testTs)))
			defer p.l.Close()
			end := p.l.EndOffset()
			err := tc.run(p)
			if !errors.Is(err, tc.want) && (tc.want != nil || err != nil) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
			if tc.want != nil && p.l.LastStableOffset(p.l.EndOffset()) != p.l.EndOffset() {
				t.Fatalf("a refused batch left a transaction open (LSO %d, end %d, was %d)", p.l.LastStableOffset(p.l.EndOffset()), p.l.EndOffset(), end)
			}
		})
	}
}

func (p *txnLog) start(pid int64, epoch int16) VerificationGuard {
	var g VerificationGuard
	p.l.WithProducers(func() { g = p.s.StartVerification(pid, epoch) })
	return g
}

func (p *txnLog) sendGuarded(pid int64, epoch int16, seq int32, g VerificationGuard) (log.AppendResult, error) {
	p.clock.add(time.Millisecond)
	b := encodeTxnBatch(pid, epoch, seq, 1, p.clock.now().UnixMilli(), true)
	return p.l.Append(b, log.AppendOptions{LeaderEpoch: 1, Guard: p.s.GuardWith(g)})
}

// TestCoordinatorGuard writes transactional offset commits as the group
// coordinator does (base sequence -1, several per transaction): each is
// accepted, none is taken for a duplicate, they open the producer's
// transaction for the LSO, and an older epoch is refused.
func TestCoordinatorGuard(t *testing.T) {
	p := openTxnLog(t, t.TempDir(), log.DefaultConfig(), newFakeClock(time.UnixMilli(testTs)))
	defer p.l.Close()
	coord := func(epoch int16) (log.AppendResult, error) {
		p.clock.add(time.Millisecond)
		b := encodeTxnBatch(7, epoch, -1, 1, p.clock.now().UnixMilli(), true)
		return p.l.Append(b, log.AppendOptions{LeaderEpoch: 1, Guard: p.s.CoordinatorGuard})
	}
	first := p.must(coord(2))
	second := p.must(coord(2))
	if second.BaseOffset != first.BaseOffset+1 {
		t.Fatalf("second commit at %d, want %d", second.BaseOffset, first.BaseOffset+1)
	}
	if lso := p.l.LastStableOffset(p.l.EndOffset()); lso != first.BaseOffset {
		t.Fatalf("LSO %d, want the transaction's first offset %d", lso, first.BaseOffset)
	}
	if _, err := coord(1); !errors.Is(err, kerr.InvalidProducerEpoch) {
		t.Fatalf("older epoch: %v, want INVALID_PRODUCER_EPOCH", err)
	}
	plain := encodeTxnBatch(7, 2, -1, 1, p.clock.now().UnixMilli(), false)
	if _, err := p.l.Append(plain, log.AppendOptions{LeaderEpoch: 1, Guard: p.s.CoordinatorGuard}); !errors.Is(err, kerr.InvalidRecord) {
		t.Fatalf("non-transactional batch: %v, want INVALID_RECORD", err)
	}
	p.must(p.marker(7, 2, 0, true, 0))
	if lso := p.l.LastStableOffset(p.l.EndOffset()); lso != p.l.EndOffset() {
		t.Fatalf("LSO %d after the commit, want %d", lso, p.l.EndOffset())
	}
}
