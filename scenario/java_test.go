package scenario

import (
	"slices"
	"strings"
	"testing"
	"time"
)

func TestReadJavaProgress(t *testing.T) {
	ms := time.Millisecond
	tests := []struct {
		name    string
		in      string
		want    []Sample
		o       drainOutcome // counts and first/last only
		wantErr bool
	}{
		{
			name: "drained",
			in:   "S 1000 0\nS 2001 500\nS 3000 1500\nDONE 3200 1600 1600 0 1500 3100\n",
			want: []Sample{{1000 * ms, 0, 0}, {2001 * ms, 500, 500}, {3000 * ms, 1000, 1500}, {3200 * ms, 100, 1600}},
			o:    drainOutcome{consumed: 1600, distinct: 1600, first: 1500 * ms, last: 3100 * ms},
		},
		{
			name: "duplicates and a DONE on a tick",
			in:   "S 1000 10\nDONE 1000 12 10 2 500 900\n",
			want: []Sample{{1000 * ms, 10, 10}},
			o:    drainOutcome{consumed: 12, distinct: 10, duplicates: 2, first: 500 * ms, last: 900 * ms},
		},
		{
			name: "nothing arrived",
			in:   "S 1000 0\nDONE 1500 0 0 0 -1 -1\n",
			want: []Sample{{1000 * ms, 0, 0}, {1500 * ms, 0, 0}},
		},
		{name: "garbage", in: "S 1000 x\n", wantErr: true},
		{name: "unknown line", in: "hello\n", wantErr: true},
		{name: "short DONE", in: "DONE 1 2 3 4\n", wantErr: true},
		{name: "count goes back", in: "S 1000 10\nS 2000 5\n", wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o, err := readJavaProgress(strings.NewReader(tc.in))
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error %v", err, tc.wantErr)
			}
			if tc.wantErr {
				return
			}
			if !slices.Equal(o.series.Samples, tc.want) {
				t.Errorf("samples %v, want %v", o.series.Samples, tc.want)
			}
			got := [5]int64{o.consumed, o.distinct, o.duplicates, int64(o.first), int64(o.last)}
			want := [5]int64{tc.o.consumed, tc.o.distinct, tc.o.duplicates, int64(tc.o.first), int64(tc.o.last)}
			if got != want {
				t.Errorf("consumed, distinct, duplicates, first, last = %v, want %v", got, want)
			}
		})
	}
}

func TestLedger(t *testing.T) {
	l := newLedger(2)
	steps := []struct {
		part  int32
		off   int64
		first bool
	}{
		{0, 0, true}, {0, 0, false}, {1, 63, true}, {1, 64, true}, {1, 63, false},
		{0, 1_000_000, true}, {5, 3, true}, {5, 3, false}, {-1, 0, false}, {0, -1, false},
	}
	for _, s := range steps {
		if got := l.add(s.part, s.off); got != s.first {
			t.Errorf("add(%d, %d) = %v, want %v", s.part, s.off, got, s.first)
		}
	}
	if l.distinct != 5 || l.duplicate != 3 {
		t.Errorf("distinct %d, duplicates %d; want 5, 3", l.distinct, l.duplicate)
	}
}
