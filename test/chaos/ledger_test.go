package chaos

import (
	"slices"
	"strings"
	"testing"
	"time"
)

func TestCheck(t *testing.T) {
	t0 := time.Unix(0, 0)
	ack := func(v string, p int32, o int64) Ack {
		return Ack{Client: "kgo", Value: v, Partition: p, Offset: o, At: t0}
	}
	rec := func(v string, p int32, o int64) Rec { return Rec{Partition: p, Offset: o, Value: v} }
	tests := []struct {
		name   string
		acks   []Ack
		failed []string
		seen   []Rec
		final  []Rec
		want   []string // a kind each violation must start with, in order; none: passes
	}{
		{name: "clean",
			acks:  []Ack{ack("a-0", 0, 0), ack("a-1", 1, 0), ack("a-2", 0, 1)},
			seen:  []Rec{rec("a-0", 0, 0)},
			final: []Rec{rec("a-0", 0, 0), rec("a-2", 0, 1), rec("a-1", 1, 0)}},
		{name: "failed send present once is allowed",
			acks:   []Ack{ack("a-0", 0, 0)},
			failed: []string{"a-1", "a-2"},
			final:  []Rec{rec("a-0", 0, 0), rec("a-1", 0, 1)}},
		{name: "acknowledged record missing",
			acks:  []Ack{ack("a-0", 0, 0), ack("a-1", 0, 1)},
			final: []Rec{rec("a-0", 0, 0)},
			want:  []string{"lost"}},
		{name: "acknowledged record at another offset",
			acks:  []Ack{ack("a-0", 0, 0), ack("a-1", 0, 1)},
			final: []Rec{rec("b-0", 0, 0), rec("a-0", 0, 1), rec("a-1", 0, 2)},
			want:  []string{"moved", "moved", "phantom"}},
		{name: "duplicate of a failed send",
			failed: []string{"a-0"},
			final:  []Rec{rec("a-0", 0, 0), rec("a-0", 0, 1)},
			want:   []string{"duplicate"}},
		{name: "duplicate of an acknowledged send",
			acks:  []Ack{ack("a-0", 0, 0)},
			final: []Rec{rec("a-0", 0, 0), rec("a-0", 0, 1)},
			want:  []string{"duplicate"}},
		{name: "consumed record truncated later",
			acks:  []Ack{ack("a-0", 0, 0)},
			seen:  []Rec{rec("a-0", 0, 0), rec("x-5", 0, 1)},
			final: []Rec{rec("a-0", 0, 0), rec("a-1", 0, 1)},
			want:  []string{"consumed then lost", "phantom"}},
		{name: "one producer's acks out of order",
			acks:  []Ack{ack("a-0", 0, 1), ack("a-1", 0, 0)},
			final: []Rec{rec("a-1", 0, 0), rec("a-0", 0, 1)},
			want:  []string{"reordered"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			failed := map[string]bool{}
			for _, v := range tt.failed {
				failed[v] = true
			}
			got := Check(tt.acks, failed, tt.seen, tt.final).Violations
			if len(got) != len(tt.want) {
				t.Fatalf("violations %q, want kinds %q", got, tt.want)
			}
			for i, kind := range tt.want {
				if !strings.HasPrefix(got[i], kind+":") {
					t.Errorf("violation %d is %q, want kind %q", i, got[i], kind)
				}
			}
		})
	}
}

func TestStalls(t *testing.T) {
	t0 := time.Unix(100, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	acks := []Ack{
		{Client: "kgo", Partition: 0, At: at(100)},
		{Client: "kgo", Partition: 0, At: at(1500)},
		{Client: "kgo", Partition: 0, At: at(1600)},
		{Client: "kgo", Partition: 1, At: at(50)},
		{Client: "java", Partition: 1, At: at(4000)}, // another family: not counted
		{Client: "kgo", Partition: 1, At: at(2900)},
		{Client: "kgo", Partition: 0, At: at(3100)},
		{Client: "kgo", Partition: 1, At: at(3200)},
	}
	// fault 1 at 0..3000: partition 0 gaps 100,1400,100,1400 (to 3000);
	// partition 1 gaps 50, 2850, 100 -> 2850.
	// fault 2 at 3000..3500: p0 100, 400; p1 200, 300 -> 400.
	got := Stalls(acks, "kgo", 2, []time.Time{at(0), at(3000)}, at(3500), nil)
	want := []Stall{
		{Gap: 2850 * time.Millisecond, Partition: 1, After: 50 * time.Millisecond},
		{Gap: 400 * time.Millisecond, Partition: 0, After: 100 * time.Millisecond},
	}
	if !slices.Equal(got, want) {
		t.Fatalf("stalls %+v, want %+v", got, want)
	}
	only0 := Stalls(acks, "kgo", 2, []time.Time{at(0)}, at(3000), func(_ int, p int32) bool { return p == 0 })
	if want := (Stall{Gap: 1400 * time.Millisecond, Partition: 0, After: 100 * time.Millisecond}); only0[0] != want {
		t.Errorf("partition 0 only: %+v, want %+v", only0[0], want)
	}
	none := Stalls(acks, "kgo", 2, []time.Time{at(0)}, at(3000), func(int, int32) bool { return false })
	if none[0].Partition != -1 || len(Gaps(none)) != 0 {
		t.Errorf("no partition included: %+v, gaps %v", none[0], Gaps(none))
	}
	if m := Median([]time.Duration{3, 1, 2}); m != 2 {
		t.Errorf("median %v, want 2", m)
	}
}

func TestFailureReasons(t *testing.T) {
	l := NewLedger()
	l.Failed(Value("java0", 3), "TimeoutException")
	l.Failed(Value("kgo0", 1), "context canceled")
	l.Failed(Value("java0", 9), "TimeoutException")
	want := []string{"java0: TimeoutException x2", "kgo0: context canceled x1"}
	if got := l.FailureReasons(); !slices.Equal(got, want) {
		t.Fatalf("FailureReasons() = %q, want %q", got, want)
	}
	if _, failed, _ := l.Snapshot(); len(failed) != 3 || !failed["java0-9"] {
		t.Fatalf("failed sends %v", failed)
	}
}
