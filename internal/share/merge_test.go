package share

import (
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
)

// TestMergeDeltas: a snapshot and random deltas (start offsets never
// moving back, batches anywhere from the start on, in any state) replay
// to the same partition, offset by offset, when runs of consecutive
// deltas are first merged with MergeDeltas, whatever the grouping; every
// merged record validates, and the records merged are left as they were.
func TestMergeDeltas(t *testing.T) {
	rng := rand.New(rand.NewPCG(20, 932))
	states := []RecordState{Available, Acquired, Acknowledged, Archived}
	batches := func(from int64) []StateBatch {
		var out []StateBatch
		for cur := from + int64(rng.IntN(4)); rng.IntN(5) != 0; {
			n := int64(1 + rng.IntN(6))
			out = append(out, StateBatch{First: cur, Last: cur + n - 1, State: states[rng.IntN(len(states))], DeliveryCount: int16(rng.IntN(4))})
			cur += n + int64(rng.IntN(3))
		}
		return out
	}
	for iter := range 5000 {
		start := int64(rng.IntN(10))
		recs := []StateRecord{{Kind: Snapshot, StateEpoch: 2, LeaderEpoch: 5, StartOffset: start, Batches: batches(start)}}
		for range 1 + rng.IntN(6) {
			start += int64(rng.IntN(3)) * int64(rng.IntN(6))
			recs = append(recs, StateRecord{Kind: Delta, StateEpoch: 2, LeaderEpoch: 5, StartOffset: start, Batches: batches(start + int64(rng.IntN(4)) - 2)})
		}
		for i := range recs {
			// A batch may not start below its record's start offset.
			recs[i].Batches = slices.DeleteFunc(recs[i].Batches, func(b StateBatch) bool { return b.First < recs[i].StartOffset })
		}
		before := cloneRecords(recs)
		merged := []StateRecord{recs[0]}
		var acc StateRecord
		for i, d := range recs[1:] {
			var ok bool
			if acc, ok = MergeDeltas(acc, d); !ok {
				t.Fatalf("iteration %d: deltas of one epoch did not merge", iter)
			}
			if err := acc.Validate(); err != nil {
				t.Fatalf("iteration %d: merged record: %v (%+v)", iter, err, acc)
			}
			if i == len(recs)-2 || rng.IntN(2) == 0 {
				merged = append(merged, acc)
				acc = StateRecord{}
			}
		}
		if !reflect.DeepEqual(recs, before) {
			t.Fatalf("iteration %d: MergeDeltas changed its arguments", iter)
		}
		want, err := replay(Config{}, recs)
		if err != nil {
			t.Fatal(err)
		}
		got, err := replay(Config{}, merged)
		if err != nil {
			t.Fatal(err)
		}
		if got.start != want.start || got.next != want.next {
			t.Fatalf("iteration %d: window %d-%d, want %d-%d\nrecords %+v\nmerged %+v", iter, got.start, got.next, want.start, want.next, recs, merged)
		}
		for off := want.start; off < want.next; off++ {
			gs, gc := stateAt(got, off)
			ws, wc := stateAt(want, off)
			if gs != ws || gc != wc {
				t.Fatalf("iteration %d: offset %d is %v/%d, want %v/%d\nrecords %+v\nmerged %+v", iter, off, gs, gc, ws, wc, recs, merged)
			}
		}
	}
}

func TestMergeDeltasRefuses(t *testing.T) {
	d := StateRecord{Kind: Delta, StateEpoch: 1, LeaderEpoch: 1, StartOffset: 5}
	for name, other := range map[string]StateRecord{
		"snapshot":             {Kind: Snapshot, StateEpoch: 1, LeaderEpoch: 1, StartOffset: 5},
		"another state epoch":  {Kind: Delta, StateEpoch: 2, LeaderEpoch: 1, StartOffset: 5},
		"another leader epoch": {Kind: Delta, StateEpoch: 1, LeaderEpoch: 2, StartOffset: 5},
	} {
		if _, ok := MergeDeltas(d, other); ok {
			t.Errorf("%s: merged", name)
		}
	}
	if got, ok := MergeDeltas(StateRecord{}, d); !ok || !reflect.DeepEqual(got, d) {
		t.Errorf("zero and a delta: %+v %v", got, ok)
	}
}

func cloneRecords(recs []StateRecord) []StateRecord {
	out := slices.Clone(recs)
	for i := range out {
		out[i].Batches = slices.Clone(out[i].Batches)
	}
	return out
}
