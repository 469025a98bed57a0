package sharegroup

import (
	"testing"
	"time"

	wlog "weir/internal/log"
	"weir/internal/producer"
)

// TestReadShareBatchesIsolation: under read_committed a share group's
// read stops at the last stable offset and marks the batches of aborted
// transactions to skip; under read_uncommitted it reads to the high
// watermark and skips only markers.
func TestReadShareBatchesIsolation(t *testing.T) {
	st := producer.NewState(producer.Options{})
	l, err := wlog.Open(t.TempDir(), wlog.DefaultConfig(), wlog.Options{Producers: func() wlog.ProducerState { return st }})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var bb wlog.BatchBuilder
	txnBatch := func(pid int64, v string) {
		bb.Reset(time.Now().UnixMilli())
		bb.Add(time.Now().UnixMilli(), nil, []byte(v), nil)
		if _, err := l.Append(bb.BuildTransactional(pid, 0), wlog.AppendOptions{Guard: st.CoordinatorGuard}); err != nil {
			t.Fatal(err)
		}
	}
	marker := func(pid int64, commit bool) {
		m := wlog.TxnMarker{ProducerID: pid, Marker: wlog.Marker{Type: wlog.ControlAbort}}
		if commit {
			m.Type = wlog.ControlCommit
		}
		if _, err := l.AppendMarker(m, wlog.AppendOptions{Guard: st.MarkerGuard(0)}); err != nil {
			t.Fatal(err)
		}
	}
	txnBatch(1, "aborted")   // 0
	marker(1, false)         // 1
	txnBatch(2, "committed") // 2
	marker(2, true)          // 3
	txnBatch(3, "open")      // 4: its transaction holds the LSO at 4
	hw := l.EndOffset()

	type want struct {
		base int64
		skip bool
	}
	for _, tc := range []struct {
		name string
		iso  wlog.Isolation
		want []want
	}{
		{"read_committed", wlog.ReadCommitted, []want{{0, true}, {1, true}, {2, false}, {3, true}}},
		{"read_uncommitted", wlog.ReadUncommitted, []want{{0, false}, {1, true}, {2, false}, {3, true}, {4, false}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bound := hw
			if tc.iso == wlog.ReadCommitted {
				bound = l.LastStableOffset(hw)
			}
			got, _, err := readShareBatches(l, 0, 1<<20, bound, 100, tc.iso)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("read %d batches, want %d", len(got), len(tc.want))
			}
			for i, w := range tc.want {
				if got[i].batch.Base != w.base || got[i].batch.Skip != w.skip {
					t.Errorf("batch %d: base %d skip %v, want base %d skip %v", i, got[i].batch.Base, got[i].batch.Skip, w.base, w.skip)
				}
			}
		})
	}
}
