package share

import (
	"reflect"
	"testing"
)

// FuzzDecodeStateRecord: the decoder never panics on any input, what it
// accepts encodes back to the same bytes, and a snapshot it accepts
// restores.
func FuzzDecodeStateRecord(f *testing.F) {
	for _, rec := range []StateRecord{
		{Kind: Snapshot},
		{Kind: Delta, StateEpoch: 2, LeaderEpoch: 9, StartOffset: 1000, Batches: []StateBatch{
			{First: 1000, Last: 1499, State: Acquired, DeliveryCount: 1},
			{First: 1500, Last: 1500, State: Archived, DeliveryCount: 5},
			{First: 1501, Last: 1600, State: Acknowledged},
		}},
	} {
		b, err := rec.AppendTo(nil)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		rec, err := DecodeStateRecord(b)
		if err != nil {
			return
		}
		if err := rec.Validate(); err != nil {
			t.Fatalf("decoded record does not validate: %v", err)
		}
		again, err := rec.AppendTo(nil)
		if err != nil {
			t.Fatalf("decoded record does not encode: %v", err)
		}
		if string(again) != string(b) {
			t.Fatalf("record %+v re-encodes to %x, was %x", rec, again, b)
		}
		back, err := DecodeStateRecord(again)
		if err != nil || !reflect.DeepEqual(back, rec) {
			t.Fatalf("re-encoding changed the record: %+v / %+v, %v", rec, back, err)
		}
		// Restoring from it (and a delta of its epoch) must work too.
		if rec.Kind == Snapshot {
			if _, err := Restore(Config{}, []StateRecord{rec, {Kind: Delta, StateEpoch: rec.StateEpoch, StartOffset: rec.StartOffset}}); err != nil {
				t.Fatalf("restore from a valid snapshot: %v", err)
			}
		}
	})
}

// FuzzDecodeStateKey: no panic, and accepted keys round-trip.
func FuzzDecodeStateKey(f *testing.F) {
	b, _ := StateKey{Group: "g", TopicID: [16]byte{1}, Partition: 3}.AppendTo(nil)
	f.Add(b)
	f.Add([]byte{0})
	f.Fuzz(func(t *testing.T, b []byte) {
		k, err := DecodeStateKey(b)
		if err != nil {
			return
		}
		again, err := k.AppendTo(nil)
		if err != nil || string(again) != string(b) {
			t.Fatalf("key %+v re-encodes to %x, was %x (%v)", k, again, b, err)
		}
	})
}

// FuzzParseOffsetReset: the share.auto.offset.reset validator never
// panics, never accepts a negative duration, and what it accepts parses
// back from its String form.
func FuzzParseOffsetReset(f *testing.F) {
	for _, s := range []string{"latest", "earliest", "by_duration:PT1H", "by_duration:P1DT2H3M4.5S", "by_duration:PT-1,5S", "by_duration:P-1DT25H"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseOffsetReset(s)
		if err != nil {
			return
		}
		if r.Duration < 0 {
			t.Fatalf("%q parsed to a negative duration", s)
		}
		back, err := ParseOffsetReset(r.String())
		if err != nil || back != r {
			t.Fatalf("%q -> %q -> %+v, %v", s, r.String(), back, err)
		}
	})
}
