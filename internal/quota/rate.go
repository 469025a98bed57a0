package quota

// rate is Kafka's Rate over a WindowedSum: the sum of the values recorded
// in the last samples windows of window milliseconds each, divided by the
// time those windows span. Times are milliseconds, as Kafka's metrics
// keep them, so that throttle times come out as Kafka computes them.
//
// It keeps samples+1 sample slots: the oldest may overlap the start of
// the measured span. A sample's window starts at its first record; a
// record past the end of the current sample's window starts a new sample
// in the next slot. A sample with no record for samples*window is reset
// when the rate is measured.
type rate struct {
	samples []sample
	current int
}

type sample struct {
	value float64
	start int64 // when the sample's window started
	last  int64 // when it was last recorded into
}

func (s *sample) reset(now int64) { *s = sample{start: now, last: now} }

// windowCfg is the measuring config: quota.window.num samples of
// quota.window.size.seconds each, in milliseconds.
type windowCfg struct {
	samples int
	window  int64
}

func (r *rate) currentSample(now int64) *sample {
	if len(r.samples) == 0 {
		r.samples = append(r.samples, sample{start: now, last: now})
	}
	return &r.samples[r.current]
}

// record adds v at time now.
func (r *rate) record(c windowCfg, v float64, now int64) {
	s := r.currentSample(now)
	if now-s.start >= c.window {
		r.current = (r.current + 1) % (c.samples + 1)
		if r.current >= len(r.samples) {
			r.samples = append(r.samples, sample{start: now, last: now})
		} else {
			r.samples[r.current].reset(now)
		}
		s = &r.samples[r.current]
	}
	s.value += v
	s.last = now
}

// purge resets the samples no record touched for samples*window.
func (r *rate) purge(c windowCfg, now int64) {
	expire := int64(c.samples) * c.window
	for i := range r.samples {
		if now-r.samples[i].last >= expire {
			r.samples[i].reset(now)
		}
	}
}

// windowSize is the span the rate divides by: from the oldest sample's
// start to now, and never less than samples-1 full windows (a new
// sensor would otherwise see one burst as a huge rate), nor than 1 ms.
func (r *rate) windowSize(c windowCfg, now int64) int64 {
	r.purge(c, now)
	oldest := r.currentSample(now).start
	for _, s := range r.samples {
		oldest = min(oldest, s.start)
	}
	total := now - oldest
	if full, want := total/c.window, int64(c.samples-1); full < want {
		total += (want - full) * c.window
	}
	return max(total, 1)
}

// measure is the rate per second at now.
func (r *rate) measure(c windowCfg, now int64) float64 {
	r.purge(c, now)
	var sum float64
	for _, s := range r.samples {
		sum += s.value
	}
	return sum / (float64(r.windowSize(c, now)) / 1000)
}

// throttleMs is Kafka's throttle time for a measured rate over bound:
// the time, at the rate's window size, that brings the rate back to the
// bound, rounded to the millisecond. 0 when the rate is within bound.
func (r *rate) throttleMs(c windowCfg, bound float64, now int64) int64 {
	v := r.measure(c, now)
	if v <= bound {
		return 0
	}
	return int64((v-bound)/bound*float64(r.windowSize(c, now)) + 0.5)
}
