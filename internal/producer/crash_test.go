package producer

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"weir/internal/crashtest"
	"weir/internal/log"
)

// crashChildEnv names the directory a re-executed test binary writes
// transactions to until TestSIGKILLTransactions kills it.
const crashChildEnv = "WEIR_PRODUCER_CRASH_CHILD_DIR"

func TestMain(m *testing.M) {
	if dir := os.Getenv(crashChildEnv); dir != "" {
		crashChild(dir)
		return
	}
	os.Exit(m.Run())
}

func crashConfig() log.Config {
	cfg := log.DefaultConfig()
	cfg.SegmentBytes = 2048
	cfg.IndexIntervalBytes = 256
	return cfg
}

// childTB lets the child use the test helpers outside a test.
type childTB struct{ testing.TB }

func (childTB) Helper()           {}
func (childTB) Fatal(args ...any) { fmt.Fprintln(os.Stderr, args...); os.Exit(3) }

// crashChild writes transactional batches of three producers, their
// commit and abort markers (classic and version 2) and plain batches, and
// prints "ack N" once the batch ending at offset N is appended, until it
// is killed.
func crashChild(dir string) {
	p := openTxnLog(childTB{}, dir, crashConfig(), newFakeClock(time.Now()))
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1))
	out := bufio.NewWriter(os.Stdout)
	for {
		pid := int64(1 + rng.IntN(3))
		epoch, seq, inTxn := next(p.s, pid)
		var res log.AppendResult
		var err error
		switch op := rng.IntN(10); {
		case op < 5:
			res, err = p.send(pid, epoch, seq, 1+rng.IntN(3), true, !inTxn)
		case op < 8:
			tv := int16(0)
			if rng.IntN(2) == 0 {
				tv, epoch = 2, epoch+1
			}
			res, err = p.marker(pid, epoch, 1, rng.IntN(2) == 0, tv)
		default:
			epoch, seq, _ = next(p.s, 10)
			res, err = p.send(10, epoch, seq, 1+rng.IntN(3), false, false)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "append:", err)
			os.Exit(3)
		}
		fmt.Fprintf(out, "ack %d\n", res.LastOffset)
		out.Flush()
	}
}

// TestSIGKILLTransactions kills a process writing transactions with
// SIGKILL at random moments, many times over the same directory, and
// checks after each restart that nothing acknowledged is lost, that the
// producer state restored from snapshots and a partial replay equals a
// replay of the whole log, and that the aborted-transaction index and the
// last stable offset are what the log's own batches imply.
func TestSIGKILLTransactions(t *testing.T) {
	rounds := 12
	if testing.Short() {
		rounds = 4
	}
	dir := filepath.Join(t.TempDir(), "p")
	rng := rand.New(rand.NewPCG(5, 6))
	acked := int64(-1)
	for round := range rounds {
		crashtest.Kill(t, []string{crashChildEnv + "=" + dir}, time.Duration(30+rng.IntN(150))*time.Millisecond, func(line string) {
			ack(t, line, &acked)
		})

		p := openTxnLog(t, dir, crashConfig(), newFakeClock(time.Now()))
		if p.l.EndOffset() <= acked {
			t.Fatalf("round %d: log ends at %d, offset %d was acknowledged", round, p.l.EndOffset(), acked)
		}
		checkReplayed(t, p, 0, round, "SIGKILL")
		var written []mbatch
		err := p.l.ScanMarkers(0, func(h *log.BatchHeader, m *log.Marker) bool {
			written = append(written, mbatch{pid: h.ProducerID, base: h.BaseOffset, last: h.LastOffset(), txn: h.IsTransactional(), control: h.IsControl(), abort: m != nil && m.Aborted()})
			return true
		})
		if err != nil {
			t.Fatal(err)
		}
		wantAborted, ongoing, _ := modelTxns(written)
		if got := p.l.AbortedTransactions(0, p.l.EndOffset()); len(got)+len(wantAborted) > 0 && !reflect.DeepEqual(got, wantAborted) {
			t.Fatalf("round %d: aborted\n%+v\nthe log implies\n%+v", round, got, wantAborted)
		}
		lso := p.l.EndOffset()
		for _, f := range ongoing {
			lso = min(lso, f)
		}
		if got := p.l.LastStableOffset(p.l.EndOffset()); got != lso {
			t.Fatalf("round %d: LSO %d, the log implies %d", round, got, lso)
		}
		if err := p.l.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if acked < int64(rounds) {
		t.Fatalf("only %d offsets acknowledged over %d rounds", acked+1, rounds)
	}
}

func ack(t *testing.T, line string, acked *int64) {
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
