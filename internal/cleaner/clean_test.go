package cleaner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"weir/internal/log"
	"weir/internal/producer"
)

func same(t testing.TB, got, want []string) {
	t.Helper()
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("records\n got %v\nwant %v", got, want)
	}
}

func TestRoundKeepsLatestPerKeyBelowTheActiveSegment(t *testing.T) {
	e := newEnv(t, testLogConfig(), DefaultConfig(), nil)
	e.produce(val("a", "1"), val("b", "1"))
	e.roll()
	e.produce(val("a", "2"))
	e.roll()
	e.produce(val("c", "1"))
	e.roll()
	e.produce(val("b", "2")) // active segment: never cleaned
	before := e.l.Size()
	st, ok := e.clean()
	if !ok {
		t.Fatal("nothing cleaned")
	}
	same(t, e.records(), []string{"1:b=1", "2:a=2", "3:c=1", "4:b=2"})
	if st.EndOffset != 4 || st.SegmentsSwaps != 1 || st.RecordsRead != 4 || st.RecordsKept != 3 {
		t.Fatalf("stats %+v", st)
	}
	if after := e.l.Size(); after >= before {
		t.Fatalf("size %d, was %d", after, before)
	}
	if off, ok := e.c.Checkpoint(e.tp, e.root); !ok || off != 4 {
		t.Fatalf("checkpoint %d %v", off, ok)
	}
	// Nothing dirty left: no round.
	if _, ok := e.clean(); ok {
		t.Fatal("cleaned again with nothing dirty")
	}
	// The next round dedupes the new data against the clean part.
	e.roll()
	e.produce(val("z", "1"))
	st, ok = e.clean()
	if !ok || st.EndOffset != 5 {
		t.Fatalf("second round %v %+v", ok, st)
	}
	same(t, e.records(), []string{"2:a=2", "3:c=1", "4:b=2", "5:z=1"})
}

func TestCompressedBatchesStayCompressed(t *testing.T) {
	for _, codec := range []int{log.CompressionGzip, log.CompressionSnappy, log.CompressionLZ4, log.CompressionZstd} {
		t.Run(fmt.Sprint(codec), func(t *testing.T) {
			e := newEnv(t, testLogConfig(), DefaultConfig(), nil)
			for _, b := range [][]byte{e.batch(codec, val("a", "1"), val("b", "1"), val("c", "1")), e.batch(codec, val("a", "2"))} {
				if _, err := e.l.Append(b, log.AppendOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			e.roll()
			e.produce(val("x", "1"))
			if _, ok := e.clean(); !ok {
				t.Fatal("nothing cleaned")
			}
			same(t, e.records(), []string{"1:b=1", "2:c=1", "3:a=2", "4:x=1"})
			err := e.l.ScanHeaders(0, func(h log.BatchHeader) bool {
				if h.BaseOffset < 4 && h.Compression() != codec {
					t.Errorf("batch at %d has codec %d", h.BaseOffset, h.Compression())
				}
				return true
			})
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestTombstonesGoAfterDeleteRetention(t *testing.T) {
	e := newEnv(t, testLogConfig(), DefaultConfig(), nil) // delete.retention.ms: 10 h
	e.produce(val("a", "1"), val("b", "1"))
	e.roll()
	e.produce(tomb("a"), val("c", "1"))
	e.roll()
	e.produce(val("x", "1"))
	e.clean() // at T: the tombstone's batch gets horizon T+10h
	same(t, e.records(), []string{"1:b=1", "2:a=nil", "3:c=1", "4:x=1"})

	// Rounds before the horizon keep it.
	e.clock.add(8 * time.Hour)
	e.roll()
	e.produce(val("y", "1"))
	e.clean() // T+9h
	same(t, e.records(), []string{"1:b=1", "2:a=nil", "3:c=1", "4:x=1", "5:y=1"})

	// The first round at or past it removes it.
	e.roll()
	e.produce(val("w", "1"))
	e.clean() // T+10h
	same(t, e.records(), []string{"1:b=1", "3:c=1", "4:x=1", "5:y=1", "6:w=1"})
}

func TestProducersLastBatchSurvivesEmptied(t *testing.T) {
	e := newEnv(t, testLogConfig(), DefaultConfig(), nil)
	for _, b := range [][]byte{
		withProducer(e.batch(log.CompressionNone, val("a", "1")), 7, 0, 0, false),
		withProducer(e.batch(log.CompressionNone, val("b", "1"), val("c", "1")), 7, 0, 1, false),
		e.batch(log.CompressionNone, val("a", "2"), val("b", "2"), val("c", "2")),
	} {
		if _, err := e.l.Append(b, log.AppendOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	e.roll()
	e.produce(val("x", "1"))
	state := func() string {
		s := producer.NewState(producer.Options{Now: e.clock.now})
		if err := s.Rebuild(e.l, 0); err != nil {
			t.Fatal(err)
		}
		en, ok := s.Entry(7)
		if !ok {
			t.Fatal("producer 7 lost")
		}
		return fmt.Sprintf("epoch %d last sequence %d", en.Epoch, en.LastSeq())
	}
	before := state()
	e.clean()
	// Producer 7's first batch goes; its last keeps its offsets and
	// sequence without records.
	same(t, e.records(), []string{"1:(empty to 2)", "3:a=2", "4:b=2", "5:c=2", "6:x=1"})
	if after := state(); after != before || before != "epoch 0 last sequence 2" {
		t.Fatalf("producer state after cleaning %s, before %s", after, before)
	}
	// Once the producer is idle past producer.id.expiration.ms (a day),
	// its batch goes too.
	e.clock.add(25 * time.Hour)
	e.produce(val("y", "1"))
	e.clean()
	same(t, e.records(), []string{"3:a=2", "4:b=2", "5:c=2", "6:x=1", "7:y=1"})

	// A partition with a producer-state hook keeps only what it lists.
	e2 := newEnv(t, testLogConfig(), DefaultConfig(), func(p *Partition) {
		p.Producers = func() map[int64]ProducerLast { return nil }
	})
	if _, err := e2.l.Append(withProducer(e2.batch(log.CompressionNone, val("b", "1")), 7, 0, 1, false), log.AppendOptions{}); err != nil {
		t.Fatal(err)
	}
	e2.produce(val("b", "2"))
	e2.roll()
	e2.produce(val("x", "1"))
	e2.clean()
	same(t, e2.records(), []string{"1:b=2", "2:x=1"})
}

// fakeTxns is a partition's aborted-transaction index.
type fakeTxns struct {
	aborted []log.AbortedTxn
}

func (f *fakeTxns) AbortedTransactions(from, to int64) []log.AbortedTxn {
	var out []log.AbortedTxn
	for _, a := range f.aborted {
		if a.LastOffset >= from && a.FirstOffset < to {
			out = append(out, a)
		}
	}
	return out
}
func (f *fakeTxns) LastStableOffset(hw int64) int64 { return hw }

func TestAbortedTransactionsAndMarkersGo(t *testing.T) {
	txns := &fakeTxns{aborted: []log.AbortedTxn{{ProducerID: 5, FirstOffset: 0, LastOffset: 2}}}
	e := newEnv(t, testLogConfig(), DefaultConfig(), func(p *Partition) {
		p.Transactions = txns
		p.Producers = func() map[int64]ProducerLast { return nil } // both producers expired
	})
	ts := e.clock.now().UnixMilli()
	for _, b := range [][]byte{
		withProducer(at(e.batch(log.CompressionNone, val("a", "1")), 0), 5, 0, 0, true),
		withProducer(at(e.batch(log.CompressionNone, val("b", "1")), 1), 6, 0, 0, true),
		marker(2, 5, 0, controlAbort, ts),
		marker(3, 6, 0, controlCommit, ts),
		at(e.batch(log.CompressionNone, val("c", "1")), 4),
	} {
		if _, err := e.l.AppendReplicated(b); err != nil {
			t.Fatal(err)
		}
	}
	next := func() {
		e.roll()
		e.produce(val("f", fmt.Sprint(e.l.EndOffset())))
	}
	next()
	e.clean()
	// The aborted batch goes; its marker stays while this pass saw its
	// data, the commit marker while its transaction has records.
	same(t, e.records(), []string{"1:b=1", "2:abort", "3:commit", "4:c=1", "5:f=5"})
	next()
	e.clean() // at T: the abort marker has no data left: horizon T+10h
	same(t, e.records(), []string{"1:b=1", "2:abort", "3:commit", "4:c=1", "5:f=5", "6:f=6"})
	e.clock.add(9 * time.Hour)
	next()
	e.clean() // T+10h
	same(t, e.records(), []string{"1:b=1", "3:commit", "4:c=1", "6:f=6", "7:f=7"})
}

func TestRoundsStopAtTheStableOffset(t *testing.T) {
	e := newEnv(t, testLogConfig(), DefaultConfig(), func(p *Partition) { p.Stable = func() int64 { return 5 } })
	for i := range 4 {
		e.produce(val("a", fmt.Sprint(i)), val("b", fmt.Sprint(i)))
		e.roll()
	}
	e.produce(val("x", "1"))
	st, _ := e.clean()
	// The high watermark at 5 lies in the segment [4, 6): only [0, 4)
	// is cleaned, against the keys of [0, 4), so a=1 and b=1 stay
	// though later values exist.
	if st.EndOffset != 4 {
		t.Fatalf("round ended at %d", st.EndOffset)
	}
	same(t, e.records()[:4], []string{"2:a=1", "3:b=1", "4:a=2", "5:b=2"})
}

func TestSmallKeyMapCleansInSeveralRounds(t *testing.T) {
	cfg := DefaultConfig()
	cfg.DedupeBufferSize = 64 // 4 slots: 3 keys a round
	e := newEnv(t, testLogConfig(), cfg, nil)
	for i := range 6 {
		e.produce(val(fmt.Sprint("k", i), "1"))
		e.produce(val(fmt.Sprint("k", i), "2"))
		e.roll()
	}
	e.produce(val("x", "1"))
	var ends []int64
	for {
		st, ok := e.clean()
		if !ok {
			break
		}
		ends = append(ends, st.EndOffset)
	}
	if len(ends) < 2 || ends[len(ends)-1] != 12 {
		t.Fatalf("rounds ended at %v", ends)
	}
	var want []string
	for i := range 6 {
		want = append(want, fmt.Sprintf("%d:k%d=2", 2*i+1, i))
	}
	same(t, e.records(), append(want, "12:x=1"))
}

func TestRemoveStopsARoundInProgress(t *testing.T) {
	entered := make(chan struct{}, 1)
	clock := newClock()
	dir := t.TempDir()
	l, err := log.Open(dir+"/t-0", testLogConfig(), log.Options{Now: clock.now})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var bb log.BatchBuilder
	for i := range 3 {
		bb.Reset(clock.now().UnixMilli())
		bb.Add(clock.now().UnixMilli(), []byte("k"), []byte(fmt.Sprint(i)), nil)
		if _, err := l.Append(append([]byte(nil), bb.Build()...), log.AppendOptions{}); err != nil {
			t.Fatal(err)
		}
		clock.add(time.Hour)
	}
	l.Flush()
	before := readRecords(t, l)
	cfg := DefaultConfig()
	cfg.IOMaxBytesPerSecond = 1 // the first batch read sleeps
	c, err := New(cfg, Options{Now: clock.now, Sleep: func(ctx context.Context, _ time.Duration) error {
		select {
		case entered <- struct{}{}:
		default:
		}
		<-ctx.Done()
		return ctx.Err()
	}})
	if err != nil {
		t.Fatal(err)
	}
	tp := TopicPartition{"t", 0}
	if err := c.Add(Partition{TopicPartition: tp, Dir: dir, Log: l}); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		clock.add(checkEvery) // a throttle window has passed
		_, _, err := c.CleanOnce(context.Background())
		done <- err
	}()
	<-entered
	c.Remove(tp)
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("round after Remove: %v", err)
	}
	same(t, readRecords(t, l), before)
	for _, n := range dirNames(t, dir+"/t-0") {
		if strings.Contains(n, ".cleaned") {
			t.Fatalf("%s left", n)
		}
	}
	if _, ok, _ := c.CleanOnce(context.Background()); ok {
		t.Fatal("removed partition cleaned")
	}
}

func dirNames(t testing.TB, dir string) []string {
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range es {
		out = append(out, e.Name())
	}
	return out
}

func TestCheckpointSurvivesARestartOfTheCleaner(t *testing.T) {
	e := newEnv(t, testLogConfig(), DefaultConfig(), nil)
	e.produce(val("a", "1"))
	e.roll()
	e.produce(val("a", "2"))
	st, _ := e.clean()
	b, err := os.ReadFile(e.root + "/" + CheckpointFile)
	if err != nil || string(b) != fmt.Sprintf("0\n1\nt 0 %d\n", st.EndOffset) {
		t.Fatalf("checkpoint file %q %v", b, err)
	}
	c2, err := New(DefaultConfig(), Options{Now: e.clock.now})
	if err != nil {
		t.Fatal(err)
	}
	if err := c2.Add(Partition{TopicPartition: e.tp, Dir: e.root, Log: e.l}); err != nil {
		t.Fatal(err)
	}
	if off, ok := c2.Checkpoint(e.tp, e.root); !ok || off != st.EndOffset {
		t.Fatalf("reloaded checkpoint %d %v", off, ok)
	}
	if _, ok, _ := c2.CleanOnce(context.Background()); ok {
		t.Fatal("a restarted cleaner cleaned clean data again")
	}
	if err := c2.Delete(e.tp); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(e.root + "/" + CheckpointFile); string(b) != "0\n0\n" {
		t.Fatalf("checkpoint after Delete %q", b)
	}
}

func TestNotCompactedLogsAreLeftAlone(t *testing.T) {
	cfg := testLogConfig()
	cfg.Compact = false
	e := newEnv(t, cfg, DefaultConfig(), nil)
	e.produce(val("a", "1"))
	e.roll()
	e.produce(val("a", "2"))
	if _, ok := e.clean(); ok {
		t.Fatal("a delete-only log was cleaned")
	}
	// Switching the policy to compact (a config change) starts it.
	cfg.Compact = true
	if err := e.l.SetConfig(cfg); err != nil {
		t.Fatal(err)
	}
	if _, ok := e.clean(); !ok {
		t.Fatal("compacted log not cleaned")
	}
}

func TestWorkersCleanUntilClosed(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Threads = 2
	cfg.Backoff = 10 * time.Millisecond
	e := newEnv(t, testLogConfig(), cfg, nil)
	e.dirtyThreeSegments()
	e.c.Start()
	eventually(t, 5*time.Second, func() bool { return len(e.records()) == 2 })
	same(t, e.records(), []string{"1:a=2", "2:b=1"})
	if err := e.c.Close(); err != nil { // returns once every worker has stopped
		t.Fatal(err)
	}
}

func eventually(t testing.TB, timeout time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met in time")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// closingLog fails its reads as a segment deleted during a round does once
// its file.delete.delay.ms has passed.
type closingLog struct {
	*log.Log
	fail bool
}

func (c *closingLog) EachCleanableBatch(from, to int64, buf []byte, fn func(int64, []byte) error) ([]byte, error) {
	if c.fail {
		return buf, fmt.Errorf("log: read: %w", os.ErrClosed)
	}
	return c.Log.EachCleanableBatch(from, to, buf, fn)
}

// TestDeletedSegmentAbandonsTheRound: a round whose segment was deleted
// under it (retention of a compact,delete topic) is dropped, not taken
// for a broken log: the next round cleans.
func TestDeletedSegmentAbandonsTheRound(t *testing.T) {
	var cl *closingLog
	e := newEnv(t, testLogConfig(), DefaultConfig(), func(p *Partition) {
		cl = &closingLog{Log: p.Log.(*log.Log), fail: true}
		p.Log = cl
	})
	e.produce(val("a", "1"))
	e.roll()
	e.produce(val("a", "2"))
	e.roll()
	e.produce(val("x", "1"))
	e.l.Flush()
	if _, ok, err := e.c.CleanOnce(context.Background()); ok || !errors.Is(err, os.ErrClosed) {
		t.Fatalf("round over a closed file: %v %v", ok, err)
	}
	cl.fail = false
	if _, ok := e.clean(); !ok {
		t.Fatal("the partition was given up after a deleted segment")
	}
	same(t, e.records(), []string{"1:a=2", "2:x=1"})
}
