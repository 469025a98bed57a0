package cleaner

import (
	"encoding/binary"
	"sort"

	"weir/internal/log"
)

// Transactions is what the cleaner needs from a partition's transaction
// state: which transactions were aborted (the log's aborted-transaction
// index) and how far the log is stable. *log.Log has both.
type Transactions interface {
	// AbortedTransactions lists the aborted transactions with records in
	// [from, to) (their marker at or past from, their first offset below
	// to).
	AbortedTransactions(from, to int64) []log.AbortedTxn
	// LastStableOffset is the offset below which every transaction has
	// ended, at most hw: rounds never clean past it.
	LastStableOffset(hw int64) int64
}

// Control record types (the key of a control batch's record: version
// int16, type int16).
const (
	controlAbort  = 0
	controlCommit = 1
)

// txnState follows transactions through one pass over the log, deciding
// which batches of aborted transactions go and when a transaction marker
// may go, as Kafka's CleanedTransactionMetadata does: data batches of an
// aborted transaction are removed; an abort marker stays while the pass
// saw data of its transaction (the next round removes that data and then
// the marker), a commit marker while the pass saw data of its
// transaction; a marker that may go is stamped with a delete horizon
// first and removed by the first round past it.
type txnState struct {
	// tracked: the aborted transactions are known. Without an index every
	// transaction is taken for committed and every marker kept.
	tracked bool
	pending []log.AbortedTxn // by first offset, not yet reached
	aborted map[int64]*abortedRun
	open    map[int64]bool // committed transactions with data seen
}

type abortedRun struct{ sawData bool }

func newTxnState(aborted []log.AbortedTxn, tracked bool) *txnState {
	p := append([]log.AbortedTxn(nil), aborted...)
	sort.Slice(p, func(i, j int) bool { return p[i].FirstOffset < p[j].FirstOffset })
	return &txnState{tracked: tracked, pending: p, aborted: map[int64]*abortedRun{}, open: map[int64]bool{}}
}

// reach starts tracking the aborted transactions that begin at or
// before offset.
func (t *txnState) reach(offset int64) {
	for len(t.pending) > 0 && t.pending[0].FirstOffset <= offset {
		a := t.pending[0]
		t.pending = t.pending[1:]
		if _, ok := t.aborted[a.ProducerID]; !ok {
			t.aborted[a.ProducerID] = &abortedRun{}
		}
	}
}

// onData reports whether a data batch belongs to an aborted transaction
// and may be removed.
func (t *txnState) onData(h *log.BatchHeader) bool {
	t.reach(h.LastOffset())
	if !h.IsTransactional() {
		return false
	}
	if run, ok := t.aborted[h.ProducerID]; ok {
		run.sawData = true
		return true
	}
	t.open[h.ProducerID] = true
	return false
}

// onControl reports whether a control batch (with the type of its first
// record, -1 when it has none) may be removed once its horizon passes.
func (t *txnState) onControl(h *log.BatchHeader, kind int) bool {
	t.reach(h.LastOffset())
	if !t.tracked {
		return false
	}
	switch kind {
	case controlAbort:
		run, ok := t.aborted[h.ProducerID]
		delete(t.aborted, h.ProducerID)
		return !ok || !run.sawData
	case controlCommit:
		seen := t.open[h.ProducerID]
		delete(t.open, h.ProducerID)
		return !seen
	case -1:
		return true // emptied by an earlier round
	}
	return false
}

// controlKind reads the type of a control batch's first record key.
func controlKind(key []byte) int {
	if len(key) < 4 {
		return -2
	}
	return int(int16(binary.BigEndian.Uint16(key[2:])))
}
