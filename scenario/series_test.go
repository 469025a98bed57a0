package scenario

import (
	"bytes"
	"math"
	"slices"
	"strings"
	"testing"
	"time"
)

const sec = time.Second

// seriesOf builds a series from one reading a second with the given
// per-second counts.
func seriesOf(t *testing.T, counts ...int64) *Series {
	t.Helper()
	var s Series
	var cum int64
	for i, c := range counts {
		cum += c
		if err := s.Observe(time.Duration(i+1)*sec, cum); err != nil {
			t.Fatal(err)
		}
	}
	return &s
}

func TestSeriesObserve(t *testing.T) {
	tests := []struct {
		name     string
		readings [][2]int64 // ms, cumulative
		want     []Sample
		wantErr  bool
	}{
		{"per second", [][2]int64{{1000, 10}, {2000, 30}, {3000, 30}},
			[]Sample{{1 * sec, 10, 10}, {2 * sec, 20, 30}, {3 * sec, 0, 30}}, false},
		{"uneven ticks", [][2]int64{{1000, 5}, {1500, 5}, {2700, 17}},
			[]Sample{{sec, 5, 5}, {1500 * time.Millisecond, 0, 5}, {2700 * time.Millisecond, 12, 17}}, false},
		{"count goes back", [][2]int64{{1000, 10}, {2000, 9}}, nil, true},
		{"time goes back", [][2]int64{{2000, 10}, {1000, 11}}, nil, true},
		{"same time twice", [][2]int64{{1000, 10}, {1000, 11}}, nil, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var s Series
			var err error
			for _, r := range tc.readings {
				if err = s.Observe(time.Duration(r[0])*time.Millisecond, r[1]); err != nil {
					break
				}
			}
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error %v", err, tc.wantErr)
			}
			if !tc.wantErr && !slices.Equal(s.Samples, tc.want) {
				t.Errorf("samples %v, want %v", s.Samples, tc.want)
			}
		})
	}
}

func TestSeriesRates(t *testing.T) {
	var s Series
	s.Observe(sec, 100)
	s.Observe(1500*time.Millisecond, 200)
	s.Observe(3500*time.Millisecond, 300)
	want := []float64{100, 200, 50}
	if got := s.Rates(); !slices.Equal(got, want) {
		t.Errorf("rates %v, want %v", got, want)
	}
}

func TestSummarize(t *testing.T) {
	tests := []struct {
		name      string
		counts    []int64
		peak      float64
		minAfter  float64
		first     time.Duration
		last      time.Duration
		plateaus  [][3]float64 // from s, to s, median
		wantTotal int64
	}{
		{
			// The seed's shape: a join, a ramp, a high plateau, a collapse
			// to a low plateau, a final partial second.
			name:     "collapse",
			counts:   []int64{0, 0, 5000, 20000, 29000, 28000, 29500, 28500, 29000, 2000, 1900, 2000, 1950, 2000, 1990, 300},
			peak:     29500,
			minAfter: 1900,
			first:    2 * sec, last: 16 * sec,
			plateaus:  [][3]float64{{3, 9, 28750}, {9, 15, 1995}},
			wantTotal: 5000 + 20000 + 29000 + 28000 + 29500 + 28500 + 29000 + 2000 + 1900 + 2000 + 1950 + 2000 + 1990 + 300,
		},
		{
			name:     "steady",
			counts:   []int64{0, 10000, 10100, 9900, 10000, 10050, 9950, 4000},
			peak:     10100,
			minAfter: 9900,
			first:    sec, last: 8 * sec,
			plateaus:  [][3]float64{{1, 7, 10000}},
			wantTotal: 64000,
		},
		{
			name:     "too short for a plateau",
			counts:   []int64{100, 5000, 100},
			peak:     5000,
			minAfter: 5000,
			first:    0, last: 3 * sec,
			wantTotal: 5200,
		},
		{name: "nothing consumed", counts: []int64{0, 0, 0}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sum := seriesOf(t, tc.counts...).Summarize()
			if sum.Peak != tc.peak || sum.MinAfter != tc.minAfter {
				t.Errorf("peak %v, min after %v; want %v, %v", sum.Peak, sum.MinAfter, tc.peak, tc.minAfter)
			}
			if sum.FirstRecord != tc.first || sum.LastRecord != tc.last {
				t.Errorf("records from %v to %v, want %v to %v", sum.FirstRecord, sum.LastRecord, tc.first, tc.last)
			}
			if sum.Total != tc.wantTotal {
				t.Errorf("total %d, want %d", sum.Total, tc.wantTotal)
			}
			var got [][3]float64
			for _, p := range sum.Plateaus {
				got = append(got, [3]float64{p.From.Seconds(), p.To.Seconds(), p.Median})
			}
			if !slices.Equal(got, tc.plateaus) {
				t.Errorf("plateaus %v, want %v", got, tc.plateaus)
			}
		})
	}
}

func TestSummarizeIgnoresShortFinalReading(t *testing.T) {
	var s Series
	s.Observe(sec, 1000)
	s.Observe(2*sec, 2000)
	s.Observe(2050*time.Millisecond, 2300) // 300 records in 50 ms: 6000/s
	sum := s.Summarize()
	if sum.Peak != 1000 {
		t.Errorf("peak %v, want 1000 (the 50 ms tail is not a second)", sum.Peak)
	}
}

func TestCSVRoundTrip(t *testing.T) {
	s := seriesOf(t, 0, 120, 3000, 2999, 0)
	s.Observe(5250*time.Millisecond, 6200)
	var buf bytes.Buffer
	if err := WriteCSV(&buf, s.Samples); err != nil {
		t.Fatal(err)
	}
	want := "time_s,records,cumulative\n1.000,0,0\n2.000,120,120\n3.000,3000,3120\n4.000,2999,6119\n5.000,0,6119\n5.250,81,6200\n"
	if buf.String() != want {
		t.Errorf("CSV:\n%s\nwant:\n%s", buf.String(), want)
	}
	back, err := ReadCSV(strings.NewReader(buf.String()))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(back, s.Samples) {
		t.Errorf("read back %v, want %v", back, s.Samples)
	}
	for _, bad := range []string{"", "a,b,c\n1,2,3\n", "time_s,records,cumulative\nx,1,1\n", "time_s,records,cumulative\n2.000,5,5\n1.000,6,11\n"} {
		if _, err := ReadCSV(strings.NewReader(bad)); err == nil {
			t.Errorf("ReadCSV(%q) succeeded", bad)
		}
	}
}

func TestMedian(t *testing.T) {
	for _, tc := range []struct {
		in   []float64
		want float64
	}{{[]float64{3, 1, 2}, 2}, {[]float64{4, 1, 3, 2}, 2.5}, {[]float64{7}, 7}} {
		if got := median(tc.in); got != tc.want {
			t.Errorf("median(%v) = %v, want %v", tc.in, got, tc.want)
		}
	}
	if !math.IsNaN(median(nil)) {
		t.Error("median of nothing is not NaN")
	}
}

// TestSummarizeLongBurstyDrain is the seed's collapse as a Java record_limit
// consumer shows it: 500 records a poll, a few polls a second waiting out
// fetch.max.wait.ms on empty brokers, so one-second rates jump between 0
// and 2000. Over 20-second buckets the rate is a flat 500 rec/s.
func TestSummarizeLongBurstyDrain(t *testing.T) {
	counts := []int64{0}
	for range 10 {
		counts = append(counts, 30000)
	}
	for range 75 {
		counts = append(counts, 2000, 0, 0, 0)
	}
	counts = append(counts, 100)
	sum := seriesOf(t, counts...).Summarize()
	if sum.Peak != 30000 || sum.MinAfter != 0 {
		t.Errorf("peak %v, min after %v; want 30000 and 0 (one-second rates)", sum.Peak, sum.MinAfter)
	}
	var tail *Plateau
	for i, p := range sum.Plateaus {
		if p.Median == 500 {
			tail = &sum.Plateaus[i]
		}
	}
	if tail == nil || tail.Seconds() < 240 {
		t.Fatalf("plateaus %+v: want one at 500 rec/s lasting most of the 300 s tail", sum.Plateaus)
	}
	if tail.Start < 1 || tail.End >= len(counts) || tail.End < tail.Start {
		t.Errorf("plateau covers samples %d..%d of %d", tail.Start, tail.End, len(counts))
	}
}
