package scenario

import (
	"context"
	"fmt"
	"math"

	"weir/scenario/spec"
)

// explore looks for the highest total producer rate whose p99
// end-to-end latency stays under the phase's target, as Dimster's
// explore-limits mode does: it tries max_rate first, then bisects
// between the best rate that passed (min_rate to start with) and the
// lowest that failed, ph.Steps tries in all, each for ph.Duration. After
// each try the producers stop and the consumers drain what is left
// (bounded by ph.Timeout), so a failed try does not weigh on the next.
func (r *runner) explore(ctx context.Context, ph spec.Phase) error {
	target := float64(ph.TargetP99.D().Microseconds()) / 1000
	res := &ExploreResult{TargetP99Ms: target}
	r.res.Explore = res
	defer r.sw.rate.Store(0)
	r.sw.budget.Store(-1)
	lo, hi := ph.MinRate, ph.MaxRate
	rate := hi
	for step := range ph.Steps {
		r.sw.rate.Store(math.Float64bits(rate))
		r.m.resetStep()
		r.event("phase", fmt.Sprintf("explore %.0f rec/s", rate))
		r.sw.consume.Store(true)
		r.sw.produce.Store(true)
		if err := r.until(ctx, ph.Duration.D(), func() bool { return false }); err != nil {
			return err
		}
		r.sw.produce.Store(false)
		p99 := r.m.stepLatency().P99
		passed := p99 <= target && r.m.stepLatency().Count > 0
		res.Steps = append(res.Steps, ExploreStep{Rate: rate, P99Ms: p99, Passed: passed})
		fmt.Fprintf(r.out, "explore: %.0f rec/s: p99 e2e %.0f ms (target %.0f ms): %s\n", rate, p99, target, map[bool]string{true: "passed", false: "missed"}[passed])
		if passed {
			res.Best = max(res.Best, rate)
			lo = rate
		} else {
			hi = rate
		}
		if err := r.until(ctx, ph.Timeout.D(), func() bool { return r.inFlight() == 0 && r.m.backlog() == 0 }); err != nil {
			return err
		}
		if left := r.m.backlog(); left > 0 {
			return fmt.Errorf("explore: %d records still behind %v after the try at %.0f rec/s", left, ph.Timeout.D(), rate)
		}
		if (passed && step == 0) || hi-lo < 1 {
			break
		}
		if res.Best == 0 && !passed && rate == ph.MinRate {
			break // even the lowest rate missed
		}
		if res.Best == 0 && step > 0 && hi == lo {
			break
		}
		rate = (lo + hi) / 2
		if res.Best == 0 && step == ph.Steps-2 {
			rate = ph.MinRate // the last try checks the floor
		}
	}
	fmt.Fprintf(r.out, "explore: highest rate under the target: %.0f rec/s\n", res.Best)
	return nil
}
