package kraft

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/metadata"
)

// fakeClock moves only when told to.
type fakeClock struct {
	mu      sync.Mutex
	now     time.Time
	waiters []fakeWaiter
	calls   int        // After calls so far
	latest  fakeWaiter // the timer of the last After call
}

type fakeWaiter struct {
	at time.Time
	ch chan time.Time
}

func newFakeClock() *fakeClock { return &fakeClock{now: time.Unix(1_000_000, 0)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) After(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := make(chan time.Time, 1)
	c.calls++
	c.latest = fakeWaiter{at: c.now.Add(d), ch: ch}
	if d <= 0 {
		ch <- c.now
		return ch
	}
	c.waiters = append(c.waiters, c.latest)
	return ch
}

// Advance moves the clock and fires the timers that are due.
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	kept := c.waiters[:0]
	for _, w := range c.waiters {
		if w.at.After(c.now) {
			kept = append(kept, w)
			continue
		}
		w.ch <- c.now
	}
	c.waiters = kept
}

// afterCalls counts the After calls so far.
func (c *fakeClock) afterCalls() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.calls
}

// timerSince reports whether After was called since mark and its last
// timer fires d from now: the loop is waiting for it.
func (c *fakeClock) timerSince(mark int, d time.Duration) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.calls > mark && c.latest.at.Equal(c.now.Add(d))
}

// fakeController hands each request to the test, which answers it.
type fakeController struct{ calls chan fakeCall }

type fakeCall struct {
	req   kmsg.Request
	reply chan kmsg.Response
}

func (f *fakeController) do(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
	c := fakeCall{req: req, reply: make(chan kmsg.Response, 1)}
	select {
	case f.calls <- c:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	select {
	case r := <-c.reply:
		return r, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (f *fakeController) RegisterBroker(ctx context.Context, req *kmsg.BrokerRegistrationRequest) (*kmsg.BrokerRegistrationResponse, error) {
	r, err := f.do(ctx, req)
	if err != nil {
		return nil, err
	}
	return r.(*kmsg.BrokerRegistrationResponse), nil
}

func (f *fakeController) Heartbeat(ctx context.Context, req *kmsg.BrokerHeartbeatRequest) (*kmsg.BrokerHeartbeatResponse, error) {
	r, err := f.do(ctx, req)
	if err != nil {
		return nil, err
	}
	return r.(*kmsg.BrokerHeartbeatResponse), nil
}

func (f *fakeController) ControlledShutdown(ctx context.Context, req *kmsg.BrokerHeartbeatRequest) (*kmsg.BrokerHeartbeatResponse, error) {
	req.WantShutdown = true
	return f.Heartbeat(ctx, req)
}

func (f *fakeController) Admin(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
	return f.do(ctx, req)
}

func (f *fakeController) AdminAt(ctx context.Context, req kmsg.Request) (kmsg.Response, int64, error) {
	resp, err := f.do(ctx, req)
	return resp, -1, err
}

// next waits for the lifecycle's next request.
func (f *fakeController) next(tb testing.TB) fakeCall {
	tb.Helper()
	select {
	case c := <-f.calls:
		return c
	case <-time.After(5 * time.Second):
		tb.Fatal("no request from the lifecycle")
		return fakeCall{}
	}
}

// none checks that no request is pending right now.
func (f *fakeController) none(tb testing.TB) {
	tb.Helper()
	select {
	case c := <-f.calls:
		tb.Fatalf("unexpected %s", kmsg.NameForKey(c.req.Key()))
	default:
	}
}

// TestLifecycle drives a broker's lifecycle with a fake clock and a fake
// controller: registration, catching up while fenced, heartbeats every
// 2 s once active with the applied offset, an early heartbeat when a peer
// shuts down, registering again when forgotten, and a controlled
// shutdown.
func TestLifecycle(t *testing.T) {
	clock := newFakeClock()
	ctrl := &fakeController{calls: make(chan fakeCall)}
	fsm := NewMetadataFSM(nil)
	index := uint64(0)
	apply := func(recs ...metadata.Record) {
		index++
		if res := fsm.Apply(index, metadata.EncodeBatch(recs)).(*Applied); res.Err != nil {
			t.Fatal(res.Err)
		}
	}
	apply(brokerRec(2))
	life, err := StartLifecycle(LifecycleConfig{
		BrokerID: 1, Client: ctrl, Metadata: fsm, Clock: clock, Logger: testLogger(t),
		Listeners: []kmsg.BrokerRegistrationRequestListener{{Name: "PLAINTEXT", Host: "h", Port: 1}},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer life.Close()

	// mark is the clock's After count when the test last answered: the
	// loop sets its next timer after that.
	mark := 0
	waitTimer := func(d time.Duration) {
		t.Helper()
		eventually(t, 5*time.Second, "the loop's timer", func() bool { return clock.timerSince(mark, d) })
	}
	answer := func(c fakeCall, resp kmsg.Response) {
		mark = clock.afterCalls()
		c.reply <- resp
	}
	hbReply := func(c fakeCall, mod func(*kmsg.BrokerHeartbeatResponse)) {
		resp := c.req.ResponseKind().(*kmsg.BrokerHeartbeatResponse)
		resp.IsFenced = false // true by default in the schema
		mod(resp)
		answer(c, resp)
	}
	expectHeartbeat := func(want func(*kmsg.BrokerHeartbeatRequest) bool) fakeCall {
		t.Helper()
		c := ctrl.next(t)
		hb, ok := c.req.(*kmsg.BrokerHeartbeatRequest)
		if !ok || !want(hb) {
			t.Fatalf("got %s %+v", kmsg.NameForKey(c.req.Key()), c.req)
		}
		return c
	}
	register := func(epoch int64) {
		t.Helper()
		c := ctrl.next(t)
		reg, ok := c.req.(*kmsg.BrokerRegistrationRequest)
		if !ok || reg.BrokerID != 1 || len(reg.Listeners) != 1 || reg.IncarnationID == ([16]byte{}) {
			t.Fatalf("want a registration, got %+v", c.req)
		}
		resp := reg.ResponseKind().(*kmsg.BrokerRegistrationResponse)
		resp.BrokerEpoch = epoch
		answer(c, resp)
	}

	register(7)
	eventually(t, 5*time.Second, "fenced after registering", func() bool { return life.State() == StateFenced })
	if life.Epoch() != 7 {
		t.Fatalf("epoch %d", life.Epoch())
	}
	// Fenced: heartbeats every RetryInterval until unfenced.
	waitTimer(100 * time.Millisecond)
	ctrl.none(t)
	clock.Advance(100 * time.Millisecond)
	c := expectHeartbeat(func(hb *kmsg.BrokerHeartbeatRequest) bool {
		return hb.BrokerEpoch == 7 && hb.CurrentMetadataOffset == 1 && !hb.WantFence && !hb.WantShutdown
	})
	hbReply(c, func(r *kmsg.BrokerHeartbeatResponse) { r.IsFenced = true })
	// Applying more metadata while fenced sends the new offset at once.
	waitTimer(100 * time.Millisecond)
	apply(topicRecs("a", 1, 1, 2)...)
	c = expectHeartbeat(func(hb *kmsg.BrokerHeartbeatRequest) bool { return hb.CurrentMetadataOffset == 2 })
	hbReply(c, func(r *kmsg.BrokerHeartbeatResponse) { r.IsCaughtUp = true })
	select {
	case <-life.Unfenced():
	case <-time.After(5 * time.Second):
		t.Fatalf("not unfenced: %v", life.State())
	}

	// Active: every 2 s, with the applied offset.
	for i := range 3 {
		waitTimer(2 * time.Second)
		clock.Advance(1999 * time.Millisecond)
		ctrl.none(t)
		// A change wakes the loop, which re-arms for the time left.
		mark = clock.afterCalls()
		apply()
		waitTimer(time.Millisecond)
		clock.Advance(time.Millisecond)
		want := int64(3 + i)
		c = expectHeartbeat(func(hb *kmsg.BrokerHeartbeatRequest) bool { return hb.CurrentMetadataOffset == want })
		hbReply(c, func(*kmsg.BrokerHeartbeatResponse) {})
		eventually(t, 5*time.Second, "offset reported", func() bool { return life.Reported() == want })
	}

	// A peer in controlled shutdown: the batch that says so is reported
	// without waiting for the timer.
	waitTimer(2 * time.Second)
	apply(&metadata.UnfenceBrokerRecord{ID: 2, Epoch: 2})
	ctrl.none(t) // an ordinary change waits for the timer
	apply(&metadata.ControlledShutdownRecord{ID: 2, Epoch: 2})
	c = expectHeartbeat(func(hb *kmsg.BrokerHeartbeatRequest) bool { return hb.CurrentMetadataOffset == fsm.Offset() })
	hbReply(c, func(*kmsg.BrokerHeartbeatResponse) {})

	// Forgotten by the controller: register again, then catch up again.
	waitTimer(2 * time.Second)
	clock.Advance(2 * time.Second)
	c = expectHeartbeat(func(*kmsg.BrokerHeartbeatRequest) bool { return true })
	hbReply(c, func(r *kmsg.BrokerHeartbeatResponse) { r.ErrorCode = kerr.StaleBrokerEpoch.Code })
	waitTimer(100 * time.Millisecond)
	clock.Advance(100 * time.Millisecond)
	register(9)
	waitTimer(100 * time.Millisecond)
	clock.Advance(100 * time.Millisecond)
	c = expectHeartbeat(func(hb *kmsg.BrokerHeartbeatRequest) bool { return hb.BrokerEpoch == 9 })
	hbReply(c, func(*kmsg.BrokerHeartbeatResponse) {})
	eventually(t, 5*time.Second, "active again", func() bool { return life.State() == StateActive })

	// Controlled shutdown: asked at once; then, shutting down, the broker
	// reports each applied batch until the controller lets it go.
	done := make(chan error, 1)
	go func() { done <- life.Shutdown(context.Background()) }()
	c = expectHeartbeat(func(hb *kmsg.BrokerHeartbeatRequest) bool { return hb.WantShutdown && hb.BrokerEpoch == 9 })
	hbReply(c, func(*kmsg.BrokerHeartbeatResponse) {})
	eventually(t, 5*time.Second, "shutting down", func() bool { return life.State() == StateShuttingDown })
	apply()
	c = expectHeartbeat(func(hb *kmsg.BrokerHeartbeatRequest) bool {
		return hb.WantShutdown && hb.CurrentMetadataOffset == fsm.Offset()
	})
	hbReply(c, func(r *kmsg.BrokerHeartbeatResponse) { r.IsFenced, r.ShouldShutdown = true, true })
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Shutdown did not return")
	}
	if life.State() != StateStopped {
		t.Fatalf("state %v", life.State())
	}
}

// TestLifecycleShutdownBeforeRegistering: nothing to hand over.
func TestLifecycleShutdownBeforeRegistering(t *testing.T) {
	ctrl := &fakeController{calls: make(chan fakeCall)}
	life, err := StartLifecycle(LifecycleConfig{BrokerID: 1, Client: ctrl, Metadata: NewMetadataFSM(nil), Clock: newFakeClock()})
	if err != nil {
		t.Fatal(err)
	}
	defer life.Close()
	// The registration is in flight; its answer is a refusal.
	c := ctrl.next(t)
	resp := c.req.ResponseKind().(*kmsg.BrokerRegistrationResponse)
	resp.ErrorCode = kerr.InconsistentClusterID.Code
	c.reply <- resp
	if err := life.Shutdown(ctxTimeout(t, 5*time.Second)); err != nil {
		t.Fatal(err)
	}
	ctrl.none(t)

	closed, err := StartLifecycle(LifecycleConfig{BrokerID: 2, Client: ctrl, Metadata: NewMetadataFSM(nil), Clock: newFakeClock()})
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		// Answer nothing: Close must still stop the loop.
		<-ctrl.calls
	}()
	closed.Close()
	if err := closed.Shutdown(ctxTimeout(t, time.Second)); err != ErrClosed {
		t.Fatalf("Shutdown after Close: %v", err)
	}
}

// TestAwaitUnfenced: the start-up bound gives up on a broker the
// controller does not unfence, unless the metadata it reports is still
// catching up with what its node holds (local work, as long as it takes):
// then only ctx ends the wait.
func TestAwaitUnfenced(t *testing.T) {
	expired := func() context.Context {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		return ctx
	}
	for _, tc := range []struct {
		name       string
		catchingUp bool
		unfence    bool // the controller unfences it, later
		ctxEnds    bool
		want       string // "" for nil
	}{
		{"bound over, caught up: gives up", false, false, false, "not unfenced by the controller"},
		{"bound over, catching up, unfenced later", true, true, false, ""},
		{"bound over, catching up, ctx ends", true, false, true, "context canceled"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := &BrokerLifecycle{unfenced: make(chan struct{})}
			l.state.Store(int32(StateFenced))
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			go func() {
				time.Sleep(50 * time.Millisecond)
				if tc.unfence {
					close(l.unfenced)
				}
				if tc.ctxEnds {
					cancel()
				}
			}()
			err := l.AwaitUnfenced(ctx, expired(), func() bool { return tc.catchingUp })
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("err %v, want none", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("err %v, want one saying %q", err, tc.want)
			}
		})
	}
	// Unfenced within the bound: no question asked.
	l := &BrokerLifecycle{unfenced: make(chan struct{})}
	close(l.unfenced)
	if err := l.AwaitUnfenced(context.Background(), context.Background(), nil); err != nil {
		t.Fatal(err)
	}
}
