package cleaner

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"weir/internal/log"
	"weir/internal/producer"
)

// txnEnv is env over a log that drives a producer state (its
// transactions, aborted-transaction index and last stable offset), as a
// transactional partition is opened; the cleaner takes the log's own
// transaction state.
func txnEnv(t *testing.T) (*env, *producer.State) {
	t.Helper()
	e := &env{t: t, root: t.TempDir(), clock: newClock(), tp: TopicPartition{"t", 0}}
	s := producer.NewState(producer.Options{Now: e.clock.now})
	var err error
	e.l, err = log.Open(filepath.Join(e.root, "t-0"), testLogConfig(), log.Options{Now: e.clock.now, Producers: func() log.ProducerState { return s }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.l.Close() })
	if e.c, err = New(DefaultConfig(), Options{Now: e.clock.now}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.c.Close() })
	// Every producer expired: what remains of a transaction is its
	// records and markers, not a producer's last batch.
	e.part = Partition{TopicPartition: e.tp, Dir: e.root, Log: e.l, Producers: func() map[int64]ProducerLast { return nil }}
	if err := e.c.Add(e.part); err != nil {
		t.Fatal(err)
	}
	return e, s
}

func (e *env) txnBatch(s *producer.State, pid int64, seq int32, recs ...rec) {
	e.t.Helper()
	b := withProducer(e.batch(log.CompressionNone, recs...), pid, 0, seq, true)
	if _, err := e.l.Append(b, log.AppendOptions{Guard: s.VerifiedGuard}); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) endTxn(s *producer.State, pid int64, commit bool) {
	e.t.Helper()
	m := log.TxnMarker{ProducerID: pid, Marker: log.Marker{Type: log.ControlAbort}}
	if commit {
		m.Type = log.ControlCommit
	}
	if _, err := e.l.AppendMarker(m, log.AppendOptions{Guard: s.MarkerGuard(0)}); err != nil {
		e.t.Fatal(err)
	}
}

// TestLogTransactionsAreCleaned: with the log's own aborted-transaction
// index, an aborted transaction's records go at once, its marker (and its
// index entry) once a round past its horizon finds no records of it; a
// committed transaction's marker stays while its records do; and rounds
// stop below an ongoing transaction.
func TestLogTransactionsAreCleaned(t *testing.T) {
	e, s := txnEnv(t)
	e.txnBatch(s, 1, 0, val("a", "1")) // 0: aborted below
	e.txnBatch(s, 2, 0, val("b", "1")) // 1: committed below
	e.endTxn(s, 1, false)              // 2
	e.endTxn(s, 2, true)               // 3
	e.produce(val("c", "1"))           // 4
	e.roll()
	e.produce(val("f", "5"))
	if got := e.l.AbortedTransactions(0, e.l.EndOffset()); len(got) != 1 || got[0].LastOffset != 2 {
		t.Fatalf("aborted index before cleaning %+v", got)
	}
	e.clean()
	same(t, e.records(), []string{"1:b=1", "2:abort", "3:commit", "4:c=1", "5:f=5"})
	if got := e.l.AbortedTransactions(0, e.l.EndOffset()); len(got) != 1 {
		t.Fatalf("the kept marker's index entry went: %+v", got)
	}
	next := func() {
		e.roll()
		e.produce(val("f", fmt.Sprint(e.l.EndOffset())))
	}
	next()
	e.clean() // at T: the marker has no records left: horizon T+10h
	e.clock.add(9 * time.Hour)
	next()
	e.clean() // T+10h
	same(t, e.records(), []string{"1:b=1", "3:commit", "4:c=1", "6:f=6", "7:f=7"})
	if got := e.l.AbortedTransactions(0, e.l.EndOffset()); len(got) != 0 {
		t.Fatalf("index entry of a removed marker kept: %+v", got)
	}

	// Reopened, the log holds the same records and index.
	cfg := e.l.Config()
	e.c.Remove(e.tp)
	e.l.Close()
	s = producer.NewState(producer.Options{Now: e.clock.now})
	l, err := log.Open(filepath.Join(e.root, "t-0"), cfg, log.Options{Now: e.clock.now, Producers: func() log.ProducerState { return s }})
	if err != nil {
		t.Fatal(err)
	}
	e.l = l
	t.Cleanup(func() { l.Close() })
	same(t, e.records(), []string{"1:b=1", "3:commit", "4:c=1", "6:f=6", "7:f=7"})
	if got := e.l.AbortedTransactions(0, e.l.EndOffset()); len(got) != 0 {
		t.Fatalf("index after reopening %+v", got)
	}

	// An ongoing transaction holds rounds below it.
	e.part.Log = l
	if err := e.c.Add(e.part); err != nil {
		t.Fatal(err)
	}
	e.produce(val("g", "1")) // 8
	e.roll()
	e.txnBatch(s, 3, 0, val("g", "2")) // 9: ongoing
	e.roll()
	e.produce(val("g", "3")) // 10
	e.roll()
	e.produce(val("h", "1"))
	st, ok := e.clean()
	if !ok || st.EndOffset != 9 {
		t.Fatalf("round ended at %d (%v), want the ongoing transaction's segment at 9", st.EndOffset, ok)
	}
	if got := e.l.LastStableOffset(e.l.EndOffset()); got != 9 {
		t.Fatalf("last stable offset %d", got)
	}
}

// TestUntrackedTransactionsAreKept: a log that keeps no aborted-transaction
// index (opened without a producer state) cannot say which transactions
// aborted: its transactional records and markers all stay.
func TestUntrackedTransactionsAreKept(t *testing.T) {
	e := newEnv(t, testLogConfig(), DefaultConfig(), func(p *Partition) {
		p.Producers = func() map[int64]ProducerLast { return nil }
	})
	ts := e.clock.now().UnixMilli()
	for _, b := range [][]byte{
		withProducer(at(e.batch(log.CompressionNone, val("a", "1")), 0), 5, 0, 0, true),
		marker(1, 5, 0, controlAbort, ts),
		at(e.batch(log.CompressionNone, val("c", "1")), 2),
	} {
		if _, err := e.l.AppendReplicated(b); err != nil {
			t.Fatal(err)
		}
	}
	for range 3 {
		e.roll()
		e.produce(val("f", fmt.Sprint(e.l.EndOffset())))
		e.clean()
		e.clock.add(11 * time.Hour) // past delete.retention.ms
	}
	same(t, e.records()[:3], []string{"0:a=1", "1:abort", "2:c=1"})
}
