package share

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"reflect"
	"testing"
	"time"
)

func TestStateRecordRoundTrip(t *testing.T) {
	for _, rec := range []StateRecord{
		{Kind: Snapshot, StartOffset: 0},
		{Kind: Snapshot, StateEpoch: 3, LeaderEpoch: 7, StartOffset: 1 << 40, Batches: []StateBatch{
			{First: 1 << 40, Last: 1<<40 + 499, State: Acknowledged},
			{First: 1<<40 + 500, Last: 1<<40 + 500, State: Archived, DeliveryCount: 5},
			{First: 1<<40 + 501, Last: 1<<40 + 9999, State: Available, DeliveryCount: 2},
		}},
		{Kind: Delta, StateEpoch: -1, LeaderEpoch: -1, StartOffset: 42, Batches: []StateBatch{
			{First: 100, Last: 199, State: Acquired, DeliveryCount: math.MaxInt16},
		}},
	} {
		b, err := rec.AppendTo(nil)
		if err != nil {
			t.Fatalf("%+v: %v", rec, err)
		}
		got, err := DecodeStateRecord(b)
		if err != nil {
			t.Fatalf("%+v: decode: %v", rec, err)
		}
		if !reflect.DeepEqual(got, rec) {
			t.Errorf("round trip: got %+v, want %+v", got, rec)
		}
	}
}

func TestStateRecordInvalid(t *testing.T) {
	valid, _ := (&StateRecord{Kind: Delta, StartOffset: 10, Batches: []StateBatch{{First: 10, Last: 12, State: Available, DeliveryCount: 1}}}).AppendTo(nil)
	for _, tc := range []struct {
		name string
		rec  StateRecord
	}{
		{"kind", StateRecord{Kind: 9}},
		{"negative start", StateRecord{Kind: Snapshot, StartOffset: -1}},
		{"batch below start", StateRecord{Kind: Snapshot, StartOffset: 10, Batches: []StateBatch{{First: 9, Last: 9}}}},
		{"overlap", StateRecord{Kind: Snapshot, Batches: []StateBatch{{First: 0, Last: 5}, {First: 5, Last: 6}}}},
		{"reversed", StateRecord{Kind: Snapshot, Batches: []StateBatch{{First: 5, Last: 4}}}},
		{"state", StateRecord{Kind: Snapshot, Batches: []StateBatch{{First: 0, Last: 0, State: 3}}}},
		{"count", StateRecord{Kind: Snapshot, Batches: []StateBatch{{First: 0, Last: 0, DeliveryCount: -1}}}},
		{"last offset", StateRecord{Kind: Snapshot, Batches: []StateBatch{{First: 0, Last: math.MaxInt64}}}},
	} {
		if _, err := tc.rec.AppendTo(nil); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: encode error %v, want ErrCorrupt", tc.name, err)
		}
	}
	for _, tc := range []struct {
		name string
		b    []byte
		want error
	}{
		{"empty", nil, ErrTruncated},
		{"short header", valid[:headerLen-1], ErrTruncated},
		{"no count", valid[:headerLen], ErrTruncated},
		{"short batch", valid[:len(valid)-1], ErrTruncated},
		{"trailing", append(append([]byte{}, valid...), 0), ErrCorrupt},
		{"version", append([]byte{byte(Delta), 1}, valid[2:]...), ErrUnknownVersion},
		{"kind", append([]byte{0}, valid[1:]...), ErrCorrupt},
		{"huge count", append(append([]byte{}, valid[:headerLen]...), 0xff, 0xff, 0xff, 0xff, 0x0f), ErrTruncated},
		{"state", func() []byte { b := bytes.Clone(valid); b[len(b)-2] = 3; return b }(), ErrCorrupt},
		{"overlong varint", append(append([]byte{}, valid[:headerLen]...), 0x80, 0x00), ErrCorrupt},
		{"overflow", append(append([]byte{}, valid[:headerLen]...), 1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f, 0, 0, 0), ErrCorrupt},
	} {
		if _, err := DecodeStateRecord(tc.b); !errors.Is(err, tc.want) {
			t.Errorf("%s: decode error %v, want %v", tc.name, err, tc.want)
		}
	}
}

func TestStateKeyRoundTrip(t *testing.T) {
	k := StateKey{Group: "orders-workers", TopicID: [16]byte{1, 2, 3, 15: 0xff}, Partition: 11}
	b, err := k.AppendTo(nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeStateKey(b)
	if err != nil || got != k {
		t.Fatalf("got %+v, %v; want %+v", got, err, k)
	}
	for _, bad := range [][]byte{nil, {1}, {0}, {0, 5, 'a'}, append(bytes.Clone(b), 0), {0, 0xff, 0xff, 0x03}} {
		if _, err := DecodeStateKey(bad); err == nil {
			t.Errorf("DecodeStateKey(%x) succeeded", bad)
		}
	}
	if _, err := (StateKey{Group: string(make([]byte, maxGroupLen+1))}).AppendTo(nil); err == nil {
		t.Error("an over-long group id encoded")
	}
}

func TestRestoreRules(t *testing.T) {
	cfg := Config{}
	snap := func(epoch int32, start int64, bs ...StateBatch) StateRecord {
		return StateRecord{Kind: Snapshot, StateEpoch: epoch, StartOffset: start, Batches: bs}
	}
	delta := func(epoch int32, start int64, bs ...StateBatch) StateRecord {
		return StateRecord{Kind: Delta, StateEpoch: epoch, StartOffset: start, Batches: bs}
	}
	if _, err := Restore(cfg, nil); !errors.Is(err, ErrCorrupt) {
		t.Errorf("no records: %v", err)
	}
	if _, err := Restore(cfg, []StateRecord{delta(0, 0)}); !errors.Is(err, ErrCorrupt) {
		t.Errorf("delta first: %v", err)
	}
	if _, err := Restore(cfg, []StateRecord{snap(1, 0), delta(2, 0)}); !errors.Is(err, ErrCorrupt) {
		t.Errorf("delta of a newer epoch: %v", err)
	}

	// Records of an older epoch after a reset are skipped; the newest
	// snapshot wins; a delta past the end leaves a hole that is made
	// available (nothing known about it); acquired records come back.
	p, err := Restore(cfg, []StateRecord{
		snap(0, 0, StateBatch{First: 0, Last: 9, State: Acquired, DeliveryCount: 1}),
		snap(1, 100),
		delta(0, 5, StateBatch{First: 5, Last: 9, State: Acknowledged}),
		delta(1, 100, StateBatch{First: 100, Last: 104, State: Acquired, DeliveryCount: 2}, StateBatch{First: 110, Last: 111, State: Archived, DeliveryCount: 1}),
		delta(1, 101),
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []run{
		{first: 101, last: 104, state: Available, count: 2},
		{first: 105, last: 109, state: Available},
		{first: 110, last: 111, state: Archived, count: 1},
	}
	if p.StartOffset() != 101 || p.EndOffset() != 111 || p.StateEpoch() != 1 || !reflect.DeepEqual(p.runs, want) {
		t.Errorf("restored %d-%d epoch %d %+v, want 101-111 epoch 1 %+v", p.StartOffset(), p.EndOffset(), p.StateEpoch(), p.runs, want)
	}
	if got := p.NextFetchOffset(testStart); got != 101 {
		t.Errorf("next fetch offset %d, want 101", got)
	}
}

func TestParseOffsetReset(t *testing.T) {
	// The accepted and refused values were checked against Kafka 4.3's
	// ShareGroupAutoOffsetResetStrategy.
	for _, tc := range []struct {
		in   string
		want OffsetReset
		ok   bool
	}{
		{"", OffsetReset{Kind: "latest"}, true},
		{"latest", OffsetReset{Kind: "latest"}, true},
		{"earliest", OffsetReset{Kind: "earliest"}, true},
		{"LATEST", OffsetReset{}, false},
		{"Earliest", OffsetReset{}, false},
		{" latest", OffsetReset{}, false},
		{"none", OffsetReset{}, false},
		{"by_duration:PT1H", OffsetReset{Kind: "by_duration", Duration: time.Hour}, true},
		{"by_duration:pt1h", OffsetReset{Kind: "by_duration", Duration: time.Hour}, true},
		{"BY_DURATION:PT1H", OffsetReset{}, false},
		{"by_duration:P1DT2H3M4.5S", OffsetReset{Kind: "by_duration", Duration: 26*time.Hour + 3*time.Minute + 4500*time.Millisecond}, true},
		{"by_duration:P1D", OffsetReset{Kind: "by_duration", Duration: 24 * time.Hour}, true},
		{"by_duration:PT0S", OffsetReset{Kind: "by_duration"}, true},
		{"by_duration:PT1.123456789S", OffsetReset{Kind: "by_duration", Duration: 1123456789}, true},
		{"by_duration:PT1,5S", OffsetReset{Kind: "by_duration", Duration: 1500 * time.Millisecond}, true},
		{"by_duration:+PT1H", OffsetReset{Kind: "by_duration", Duration: time.Hour}, true},
		{"by_duration:P-1DT25H", OffsetReset{Kind: "by_duration", Duration: time.Hour}, true},
		{"by_duration:PT-0.5S", OffsetReset{}, false},
		{"by_duration:-PT1H", OffsetReset{}, false},
		{"by_duration:PT-1H", OffsetReset{}, false},
		{"by_duration:", OffsetReset{}, false},
		{"by_duration: PT1H", OffsetReset{}, false},
		{"by_duration:P1W", OffsetReset{}, false},
		{"by_duration:P", OffsetReset{}, false},
		{"by_duration:PT", OffsetReset{}, false},
		{"by_duration:P1DT", OffsetReset{}, false},
		{"by_duration:PT1.1234567891S", OffsetReset{}, false},
		{"by_duration:PT1M1H", OffsetReset{}, false},
		{"by_duration:PT99999999999999999999S", OffsetReset{}, false},
	} {
		got, err := ParseOffsetReset(tc.in)
		if (err == nil) != tc.ok || (tc.ok && got != tc.want) {
			t.Errorf("ParseOffsetReset(%q) = %+v, %v; want %+v ok=%v", tc.in, got, err, tc.want, tc.ok)
		}
		if err != nil && !errors.Is(err, ErrBadOffsetReset) {
			t.Errorf("ParseOffsetReset(%q) error %v is not ErrBadOffsetReset", tc.in, err)
		}
		if tc.ok {
			again, err := ParseOffsetReset(got.String())
			if err != nil || again != got {
				t.Errorf("%q -> %q -> %+v, %v", tc.in, got.String(), again, err)
			}
		}
	}
}

type fakeLookup struct {
	earliest, latest int64
	byTime           map[time.Time]int64
}

func (f fakeLookup) Earliest() int64 { return f.earliest }
func (f fakeLookup) Latest() int64   { return f.latest }
func (f fakeLookup) ForTimestamp(ts time.Time) (int64, bool) {
	off, ok := f.byTime[ts]
	return off, ok
}

func TestInitialStartOffset(t *testing.T) {
	log := fakeLookup{earliest: 7, latest: 90, byTime: map[time.Time]int64{testStart.Add(-time.Hour): 40}}
	for _, tc := range []struct {
		reset string
		want  int64
	}{
		{"latest", 90},
		{"earliest", 7},
		{"by_duration:PT1H", 40},
		{"by_duration:PT2H", 90}, // nothing that old found: the log end
	} {
		r, err := ParseOffsetReset(tc.reset)
		if err != nil {
			t.Fatal(err)
		}
		if got := InitialStartOffset(r, testStart, log); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.reset, got, tc.want)
		}
	}
}

func TestStateRecordWithoutLocks(t *testing.T) {
	delta := func(start int64, bs ...StateBatch) StateRecord {
		return StateRecord{Kind: Delta, StartOffset: start, Batches: bs}
	}
	b := func(first, last int64, st RecordState, n int16) StateBatch {
		return StateBatch{First: first, Last: last, State: st, DeliveryCount: n}
	}
	tests := []struct {
		name        string
		in          StateRecord
		startBefore int64
		want        StateRecord
	}{
		{"nothing changed", StateRecord{}, 0, StateRecord{}},
		{"fresh records only: nothing to write", delta(10, b(10, 509, Acquired, 1)), 10, StateRecord{}},
		{"fresh records, the start moved", delta(12, b(12, 40, Acquired, 1)), 10, delta(12)},
		{"a redelivery is written as its state before",
			delta(0, b(0, 4, Acquired, 3), b(5, 9, Acquired, 1)), 0, delta(0, b(0, 4, Available, 2))},
		{"other changes stay, neighbours merge",
			delta(0, b(0, 1, Archived, 4), b(2, 3, Available, 2), b(4, 6, Acquired, 3), b(7, 8, Acknowledged, 1)), 0,
			delta(0, b(0, 1, Archived, 4), b(2, 6, Available, 2), b(7, 8, Acknowledged, 1))},
	}
	for _, tc := range tests {
		got := tc.in.WithoutLocks(tc.startBefore)
		if fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
		if !got.IsZero() {
			if err := got.Validate(); err != nil {
				t.Errorf("%s: %v", tc.name, err)
			}
		}
	}
}
