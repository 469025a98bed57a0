package alterpartition

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/replica"
)

// TestBatching: proposals queued while a request is out go together in
// the next one, a partition's newer proposal replaces its queued one,
// and MaxBatch bounds a request.
func TestBatching(t *testing.T) {
	h := newFakeHost()
	m, _, _ := running(t, Config{Host: h, MaxBatch: 3})
	ps := partitions(6)

	m.Submit(ps[0], replica.ISRChange{LeaderEpoch: 1, PartitionEpoch: 1, NewISR: []int32{1}})
	first := h.next(t)
	if got, want := names(first.req), []string{"t/0 [1]"}; !slices.Equal(got, want) {
		t.Fatalf("first request %v, want %v", got, want)
	}
	// While it is out: five more, one of them proposed twice.
	for _, p := range ps[1:] {
		m.Submit(p, replica.ISRChange{LeaderEpoch: 1, PartitionEpoch: 1, NewISR: []int32{1}})
	}
	m.Submit(ps[2], replica.ISRChange{LeaderEpoch: 1, PartitionEpoch: 1, NewISR: []int32{1, 2}})
	h.none(t) // one request at a time
	first.answer(accept(first.req), nil)

	second := h.next(t)
	second.answer(accept(second.req), nil)
	third := h.next(t)
	third.answer(accept(third.req), nil)
	got := append(names(second.req), names(third.req)...)
	slices.Sort(got)
	want := []string{"t/1 [1]", "t/2 [1 2]", "t/3 [1]", "t/4 [1]", "t/5 [1]"}
	if !slices.Equal(got, want) {
		t.Fatalf("batched %v, want %v", got, want)
	}
	if n := len(names(second.req)); n != 3 {
		t.Fatalf("second request has %d partitions, want MaxBatch 3", n)
	}
	h.none(t)
	for _, p := range ps {
		eventually(t, "answers", func() bool { return len(p.answers()) == 1 })
		if res := p.answers()[0]; res.Err != nil || res.PartitionEpoch != 2 {
			t.Fatalf("partition %d answered %+v", p.index, res)
		}
	}
}

// TestRetries: a failed request (transport error, a top-level error such
// as NOT_CONTROLLER) gives every proposal the error, and those whose
// partition says the outcome is unknown are sent again after a back-off
// that doubles up to MaxBackoff and starts over after a definite answer.
func TestRetries(t *testing.T) {
	h := newFakeHost()
	m, clk := newManager(Config{Host: h, MinBackoff: 100 * time.Millisecond, MaxBackoff: 300 * time.Millisecond})
	ps := partitions(2)
	ps[0].setRetry(true)
	ps[1].setRetry(false) // an error this partition does not resend
	ch := replica.ISRChange{LeaderEpoch: 1, PartitionEpoch: 1, NewISR: []int32{1}}
	m.Submit(ps[0], ch)
	m.Submit(ps[1], ch)
	run(t, m) // both queued for its first request

	notController := kmsg.NewPtrAlterPartitionResponse()
	notController.ErrorCode = kerr.NotController.Code
	transport := errors.New("connection reset")
	fail := []struct {
		resp *kmsg.AlterPartitionResponse
		err  error
		want error
	}{
		{nil, transport, transport},
		{notController, nil, kerr.NotController},
		{nil, transport, transport},
		{nil, transport, transport},
	}
	// Back-offs before the 2nd, 3rd, 4th and 5th sends.
	waits := []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 300 * time.Millisecond, 300 * time.Millisecond}
	for i, f := range fail {
		c := h.next(t)
		if i == 0 && len(names(c.req)) != 2 {
			t.Fatalf("first request %v, want both partitions", names(c.req))
		}
		if i > 0 && !slices.Equal(names(c.req), []string{"t/0 [1]"}) {
			t.Fatalf("resend %d carries %v, want only t/0", i, names(c.req))
		}
		c.answer(f.resp, f.err)
		eventually(t, "the back-off timer", func() bool { return clk.Pending() == 1 })
		clk.Advance(waits[i] - time.Millisecond)
		h.none(t)
		clk.Advance(time.Millisecond)
	}
	last := h.next(t)
	ps[0].setRetry(false)
	last.answer(accept(last.req), nil)
	eventually(t, "the last answer", func() bool { return len(ps[0].answers()) == len(fail)+1 })
	got := ps[0].answers()
	for i, f := range fail {
		if !errors.Is(got[i].Err, f.want) {
			t.Fatalf("answer %d: %v, want %v", i, got[i].Err, f.want)
		}
	}
	if res := got[len(fail)]; res.Err != nil || res.PartitionEpoch != 2 {
		t.Fatalf("final answer %+v", res)
	}
	if got := ps[1].answers(); len(got) != 1 || !errors.Is(got[0].Err, transport) {
		t.Fatalf("partition not resent got %+v, want one transport error", got)
	}

	// After a definite answer the back-off starts over at MinBackoff.
	m.Submit(ps[0], ch)
	ps[0].setRetry(true)
	c := h.next(t)
	c.answer(nil, transport)
	eventually(t, "the back-off timer", func() bool { return clk.Pending() == 1 })
	clk.Advance(100 * time.Millisecond)
	h.next(t).answer(accept(c.req), nil)
}

// TestNewerProposalWinsOverResend: a proposal made while an unknown one
// is out, or waits for its resend, replaces it.
func TestNewerProposalWinsOverResend(t *testing.T) {
	for _, during := range []string{"request", "back-off"} {
		t.Run(during, func(t *testing.T) {
			h := newFakeHost()
			m, clk, _ := running(t, Config{Host: h})
			p := partitions(1)[0]
			p.setRetry(true)
			newer := replica.ISRChange{LeaderEpoch: 2, PartitionEpoch: 5, NewISR: []int32{1, 2}}
			m.Submit(p, replica.ISRChange{LeaderEpoch: 1, PartitionEpoch: 1, NewISR: []int32{1}})
			out := h.next(t)
			if during == "request" {
				m.Submit(p, newer)
			}
			out.answer(nil, errors.New("timeout"))
			eventually(t, "the back-off timer", func() bool { return clk.Pending() == 1 })
			if during == "back-off" {
				m.Submit(p, newer)
			}
			clk.Advance(DefaultMinBackoff)
			c := h.next(t)
			if got := names(c.req); !slices.Equal(got, []string{"t/0 [1 2]"}) {
				t.Fatalf("resent %v, want the newer proposal", got)
			}
			if tp := c.req.Topics[0].Partitions[0]; tp.LeaderEpoch != 2 || tp.PartitionEpoch != 5 {
				t.Fatalf("resent epochs %d/%d, want 2/5", tp.LeaderEpoch, tp.PartitionEpoch)
			}
		})
	}
}

// TestStop: Run returns when its context ends, whether idle, with a
// request out (the request's context ends with it) or in a back-off.
func TestStop(t *testing.T) {
	for _, at := range []string{"idle", "in flight", "backing off"} {
		t.Run(at, func(t *testing.T) {
			h := newFakeHost()
			clk := newManual()
			m := New(Config{BrokerID: 1, Host: h, Clock: clk})
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() {
				defer close(done)
				m.Run(ctx)
			}()
			var out call
			switch at {
			case "in flight":
				m.Submit(partitions(1)[0], replica.ISRChange{NewISR: []int32{1}})
				out = h.next(t)
			case "backing off":
				p := partitions(1)[0]
				p.setRetry(true)
				m.Submit(p, replica.ISRChange{NewISR: []int32{1}})
				h.next(t).answer(nil, errors.New("timeout"))
				eventually(t, "the back-off timer", func() bool { return clk.Pending() == 1 })
			}
			cancel()
			select {
			case <-done:
			case <-time.After(5 * time.Second):
				t.Fatal("Run did not return")
			}
			if out.ctx != nil && out.ctx.Err() == nil {
				t.Fatal("the request in flight kept its context")
			}
			if at == "backing off" && clk.Pending() != 0 {
				t.Fatal("the back-off timer outlived Run")
			}
		})
	}
}

// TestTimeout: a request the controller never answers ends at Timeout
// with an unknown outcome, and is sent again.
func TestTimeout(t *testing.T) {
	h := newFakeHost()
	m, clk, _ := running(t, Config{Host: h, Timeout: 20 * time.Millisecond})
	p := partitions(1)[0]
	p.setRetry(true)
	m.Submit(p, replica.ISRChange{NewISR: []int32{1}})
	h.next(t) // never answered
	eventually(t, "the back-off timer", func() bool { return clk.Pending() == 1 })
	if got := p.answers(); len(got) != 1 || !errors.Is(got[0].Err, context.DeadlineExceeded) {
		t.Fatalf("answers %+v, want a deadline error", got)
	}
	clk.Advance(DefaultMinBackoff)
	c := h.next(t)
	c.answer(accept(c.req), nil)
	eventually(t, "the answer", func() bool { return len(p.answers()) == 2 })
}
