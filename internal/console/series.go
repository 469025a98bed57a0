package console

import (
	"sort"
	"strings"
	"time"
)

// Point is one value of a series at a time.
type Point struct {
	At time.Time
	V  float64
}

// store keeps a bounded history of named series: gauges as sampled and
// rates derived from counters. It is pure (times come from the caller)
// and owned by one goroutine (the hub's).
type store struct {
	points    int // per series
	maxSeries int
	series    map[string]*ring
	counters  map[string]Point // the last sample of each counter
}

func newStore(points, maxSeries int) *store {
	return &store{points: points, maxSeries: maxSeries, series: map[string]*ring{}, counters: map[string]Point{}}
}

// ring is one series' last points, oldest first once unrolled.
type ring struct {
	buf  []Point
	next int
	full bool
	last time.Time // when a point was last added
}

func (r *ring) add(p Point) {
	r.buf[r.next] = p
	r.next = (r.next + 1) % len(r.buf)
	r.full = r.full || r.next == 0
	r.last = p.At
}

func (r *ring) all() []Point {
	if !r.full {
		return append([]Point(nil), r.buf[:r.next]...)
	}
	return append(append([]Point(nil), r.buf[r.next:]...), r.buf[:r.next]...)
}

// Gauge records v for key at t.
func (s *store) Gauge(key string, t time.Time, v float64) {
	r := s.series[key]
	if r == nil {
		if len(s.series) >= s.maxSeries {
			s.evictOldest()
		}
		r = &ring{buf: make([]Point, s.points)}
		s.series[key] = r
	}
	if r.next > 0 || r.full {
		prev := r.buf[(r.next+len(r.buf)-1)%len(r.buf)]
		if !t.After(prev.At) {
			return // time must move forward within a series
		}
	}
	r.add(Point{t, v})
}

// Counter takes a counter's total at t and records, under key, its rate
// per second since the previous sample. It returns that rate; ok is false
// for the first sample, a sample not after the previous one, and a total
// that went down (the counter restarted with its process, or a size
// shrank under retention): no rate is recorded then, and the next one is
// measured from this sample.
func (s *store) Counter(key string, t time.Time, total float64) (rate float64, ok bool) {
	prev, seen := s.counters[key]
	if seen && !t.After(prev.At) {
		return 0, false
	}
	if !seen && len(s.counters) >= 2*s.maxSeries {
		s.evictOldestCounter()
	}
	s.counters[key] = Point{t, total}
	if !seen || total < prev.V {
		return 0, false
	}
	rate = (total - prev.V) / t.Sub(prev.At).Seconds()
	s.Gauge(key, t, rate)
	return rate, true
}

// Points returns key's history, oldest first.
func (s *store) Points(key string) []Point {
	if r := s.series[key]; r != nil {
		return r.all()
	}
	return nil
}

// Last returns key's newest point.
func (s *store) Last(key string) (Point, bool) {
	r := s.series[key]
	if r == nil || (!r.full && r.next == 0) {
		return Point{}, false
	}
	return r.buf[(r.next+len(r.buf)-1)%len(r.buf)], true
}

// Forget drops the series and counters under prefix not updated since
// before (a topic deleted, a group gone).
func (s *store) Forget(prefix string, before time.Time) {
	for k, r := range s.series {
		if strings.HasPrefix(k, prefix) && r.last.Before(before) {
			delete(s.series, k)
		}
	}
	for k, p := range s.counters {
		if strings.HasPrefix(k, prefix) && p.At.Before(before) {
			delete(s.counters, k)
		}
	}
}

// evictOldest drops the series updated longest ago (and its counter).
func (s *store) evictOldest() {
	k := oldest(s.series, func(r *ring) time.Time { return r.last })
	delete(s.series, k)
	delete(s.counters, k)
}

func (s *store) evictOldestCounter() {
	delete(s.counters, oldest(s.counters, func(p Point) time.Time { return p.At }))
}

// oldest is the key of m whose time is earliest (the smallest key of
// those tied).
func oldest[V any](m map[string]V, at func(V) time.Time) string {
	var key string
	var t time.Time
	first := true
	for k, v := range m {
		if vt := at(v); first || vt.Before(t) || (vt.Equal(t) && k < key) {
			key, t, first = k, vt, false
		}
	}
	return key
}

// Keys lists the series under prefix, sorted.
func (s *store) Keys(prefix string) []string {
	var out []string
	for k := range s.series {
		if strings.HasPrefix(k, prefix) {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}
