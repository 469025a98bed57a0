package scenario

import (
	"fmt"
	"math"
	"slices"
	"time"
)

// Sample is one reading of the drain: At is the time since the consumer
// started, Count the records consumed since the previous sample (one
// sampling interval earlier, a second by default) and Cumulative the records
// consumed since the start.
type Sample struct {
	At         time.Duration
	Count      int64
	Cumulative int64
}

// Rate is the sample's records per second over the interval it covers.
func (s Sample) Rate(prev time.Duration) float64 {
	d := (s.At - prev).Seconds()
	if d <= 0 {
		return 0
	}
	return float64(s.Count) / d
}

// Series is the drain rate over time, built from cumulative readings taken
// once per sampling interval (by a ticker for the in-process consumer, by
// the Java driver's reporter thread for the Java one).
type Series struct {
	Samples []Sample
}

// Observe records that cumulative records had been consumed at elapsed.
// Readings must come in time order with non-decreasing counts; a reading
// that breaks either is an error rather than a negative rate.
func (s *Series) Observe(elapsed time.Duration, cumulative int64) error {
	var last Sample
	if n := len(s.Samples); n > 0 {
		last = s.Samples[n-1]
	}
	if elapsed < last.At || (len(s.Samples) > 0 && elapsed == last.At) {
		return fmt.Errorf("scenario: reading at %v is not after the previous one at %v", elapsed, last.At)
	}
	if cumulative < last.Cumulative {
		return fmt.Errorf("scenario: cumulative count went back from %d to %d", last.Cumulative, cumulative)
	}
	s.Samples = append(s.Samples, Sample{At: elapsed, Count: cumulative - last.Cumulative, Cumulative: cumulative})
	return nil
}

// Rates returns each sample's rate in records per second.
func (s *Series) Rates() []float64 {
	out := make([]float64, len(s.Samples))
	var prev time.Duration
	for i, x := range s.Samples {
		out[i] = x.Rate(prev)
		prev = x.At
	}
	return out
}

// Plateau is a run of samples whose rates stay within a band: every rate in
// [Start, End] (sample indexes, inclusive) lies within PlateauBand of the
// others. Median is the run's median rate.
type Plateau struct {
	Start, End int
	From, To   time.Duration // the interval the run covers
	Median     float64
}

// Seconds is how long the plateau lasted.
func (p Plateau) Seconds() float64 { return (p.To - p.From).Seconds() }

// PlateauBand is the widest max/min rate ratio inside one plateau: rates
// within ±20% of each other belong together. PlateauMinSamples is the
// shortest run reported (5 s at the default one-second interval; shorter
// runs are transitions).
const (
	PlateauBand       = 1.5
	PlateauMinSamples = 5
)

// Summary is what the drain report prints.
type Summary struct {
	Total       int64         // records consumed
	Peak        float64       // highest rate over one sampling interval
	PeakAt      time.Duration // when the peak sample ended
	MinAfter    float64       // lowest rate after the peak, before the final partial second
	FirstRecord time.Duration // start of the first second with records (group join included before it)
	LastRecord  time.Duration // end of the last second with records
	Plateaus    []Plateau
}

// Drain is the time from the first second with records to the last one:
// the drain time without the group join.
func (s Summary) Drain() time.Duration { return s.LastRecord - s.FirstRecord }

// Summarize computes the peak, the minimum after the peak, the drain time
// and the plateaus of a series. Samples before the first record (the group
// join) and after the last (the consumer noticing it is done) are left out
// of the minimum and the plateaus; so is the last second with records,
// which is usually partial.
func (s *Series) Summarize() Summary {
	var sum Summary
	rates := s.Rates()
	first, last := -1, -1
	for i, x := range s.Samples {
		if x.Count > 0 {
			if first < 0 {
				first = i
			}
			last = i
		}
		sum.Total = x.Cumulative
	}
	if first < 0 {
		return sum
	}
	if first > 0 {
		sum.FirstRecord = s.Samples[first-1].At
	}
	sum.LastRecord = s.Samples[last].At
	// The peak is taken over samples covering at least half the usual
	// sampling interval: a final reading 50 ms after the last tick divides
	// a few records by a sliver of time.
	usual := s.interval()
	peak := -1
	for i := first; i <= last; i++ {
		long := (s.Samples[i].At - prevAt(s.Samples, i)) >= usual/2
		if long && (peak < 0 || rates[i] > rates[peak]) {
			peak = i
		}
	}
	if peak < 0 {
		peak = first
		for i := first; i <= last; i++ {
			if rates[i] > rates[peak] {
				peak = i
			}
		}
	}
	sum.Peak, sum.PeakAt = rates[peak], s.Samples[peak].At
	// The minimum after the peak ignores the final partial second, unless
	// the peak is the only full second there is.
	end := last - 1
	if end <= peak {
		end = peak
	}
	sum.MinAfter = rates[peak]
	for i := peak; i <= end; i++ {
		sum.MinAfter = min(sum.MinAfter, rates[i])
	}
	sum.Plateaus = findPlateaus(s.Samples[first:end+1], first, prevAt(s.Samples, first), usual)
	return sum
}

// interval is the median time between readings, the sampling interval.
func (s *Series) interval() time.Duration {
	if len(s.Samples) == 0 {
		return 0
	}
	d := make([]float64, len(s.Samples))
	for i := range s.Samples {
		d[i] = float64(s.Samples[i].At - prevAt(s.Samples, i))
	}
	return time.Duration(median(d))
}

func prevAt(samples []Sample, i int) time.Duration {
	if i == 0 {
		return 0
	}
	return samples[i-1].At
}

// Long drains are read in coarser steps: once the records took more than
// LongDrain, plateaus are found on PlateauBucket-long sums of samples and a
// plateau needs PlateauMinBuckets of them. A consumer stuck in a fetch-wait
// pattern delivers in bursts (500 records, then nothing for a few seconds),
// so one-second rates jump between 0 and thousands while the rate over
// tens of seconds is flat.
const (
	LongDrain         = 2 * time.Minute
	PlateauBucket     = 20 * time.Second
	PlateauMinBuckets = 3
)

// findPlateaus returns the plateaus of samples (offset is the index of
// samples[0] in the series, start the time its interval began), on single
// samples or, for a long drain, on PlateauBucket sums.
func findPlateaus(samples []Sample, offset int, start, interval time.Duration) []Plateau {
	if len(samples) == 0 {
		return nil
	}
	per, minRun := 1, PlateauMinSamples
	if samples[len(samples)-1].At-start > LongDrain && interval > 0 && interval < PlateauBucket {
		per, minRun = int(PlateauBucket/interval), PlateauMinBuckets
	}
	// Sum samples into buckets of per samples (the last one may be short).
	var buckets []Sample
	var first []int // index in samples of each bucket's first sample
	for i := 0; i < len(samples); i += per {
		j := min(i+per, len(samples))
		b := Sample{At: samples[j-1].At, Cumulative: samples[j-1].Cumulative}
		for _, x := range samples[i:j] {
			b.Count += x.Count
		}
		buckets = append(buckets, b)
		first = append(first, i)
	}
	rates := (&Series{Samples: buckets}).Rates()
	// Rates() measures the first bucket from time 0; measure it from start.
	rates[0] = buckets[0].Rate(start)
	var out []Plateau
	for i := 0; i < len(rates); {
		lo, hi := rates[i], rates[i]
		j := i + 1
		for ; j < len(rates); j++ {
			nlo, nhi := min(lo, rates[j]), max(hi, rates[j])
			if nhi > nlo*PlateauBand || (nlo == 0 && nhi > 0) {
				break
			}
			lo, hi = nlo, nhi
		}
		if j-i >= minRun {
			from := start
			if i > 0 {
				from = buckets[i-1].At
			}
			last := len(samples) - 1
			if j < len(first) {
				last = first[j] - 1
			}
			out = append(out, Plateau{
				Start: offset + first[i], End: offset + last,
				From: from, To: buckets[j-1].At,
				Median: median(rates[i:j]),
			})
		}
		i = j
	}
	return out
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
