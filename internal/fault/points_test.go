package fault

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/config"
	"weir/internal/server"
)

// settings is a config table a test changes while an injector reads it.
type settings struct {
	mu sync.Mutex
	m  map[string]time.Duration
}

func (s *settings) get(name string) time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.m[name]
}

func (s *settings) set(name string, d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.m[name] = d
}

func req(key int16, conn uint64) *server.Request {
	return &server.Request{Key: key, Conn: server.ConnInfo{ID: conn}}
}

// The injector delays the replies of the keys in Points by their config's
// current value, and leaves every other key alone.
func TestInjectorAppliesThePoints(t *testing.T) {
	for _, p := range Points {
		t.Run(p.Config, func(t *testing.T) {
			s := &settings{m: map[string]time.Duration{}}
			var wg sync.WaitGroup
			defer wg.Wait()
			stop := make(chan struct{})
			inj := NewInjector(s.get, stop, &wg)
			ctx := context.Background()
			in := server.Ready(kmsg.NewPtrProduceResponse())
			if inj.Apply(ctx, req(p.Key, 1), in) != in {
				t.Fatalf("key %d delayed while %s is 0", p.Key, p.Config)
			}
			s.set(p.Config, time.Hour)
			out := inj.Apply(ctx, req(p.Key, 1), in)
			if out == in || server.WaitReply(out, 10*time.Millisecond) {
				t.Fatalf("key %d not delayed with %s set", p.Key, p.Config)
			}
			other := server.Ready(kmsg.NewPtrMetadataResponse())
			if inj.Apply(ctx, req(3, 1), other) != other {
				t.Fatal("a key without a point was delayed")
			}
			close(stop)
			if !server.WaitReply(out, 5*time.Second) {
				t.Fatalf("key %d: stop did not release the reply", p.Key)
			}
		})
	}
}

// completions applies a point to n replies that are ready at once, on the
// given connections, and returns when each delayed reply completed,
// measured from the start.
func completions(t *testing.T, name string, d time.Duration, conns []uint64) []time.Duration {
	t.Helper()
	s := &settings{m: map[string]time.Duration{name: d}}
	var wg sync.WaitGroup
	defer wg.Wait()
	inj := NewInjector(s.get, nil, &wg)
	ctx := context.Background()
	start := time.Now()
	outs := make([]*server.Reply, len(conns))
	for i, c := range conns {
		outs[i] = inj.Apply(ctx, req(0, c), server.Ready(kmsg.NewPtrProduceResponse()))
	}
	took := make([]time.Duration, len(outs))
	for i, out := range outs {
		if !server.WaitReply(out, 10*time.Second) {
			t.Fatalf("reply %d never completed", i)
		}
		took[i] = time.Since(start)
	}
	return took
}

// The serial delay answers a connection's requests one after another,
// each d late: the k-th of five replies ready at once leaves after k×d,
// so a producer with five requests in flight gets one answer per d, as
// from a Kafka broker spending d on each request. Another connection has
// its own lane. The concurrent delay answers all five after d.
func TestSerialDelayQueuesPerConnection(t *testing.T) {
	const d = 40 * time.Millisecond
	serial := completions(t, config.FaultProduceResponseMs, d, []uint64{1, 1, 1, 1, 1})
	for k, took := range serial {
		if want := time.Duration(k+1) * d; took < want {
			t.Errorf("serial reply %d completed after %v, want at least %v", k, took, want)
		}
	}
	// Each connection's first reply waits d only, however many other
	// connections are queued: lanes do not share a queue.
	spread := completions(t, config.FaultProduceResponseMs, d, []uint64{1, 2, 3, 4, 5})
	concurrent := completions(t, config.FaultProduceResponseConcurrentMs, d, []uint64{1, 1, 1, 1, 1})
	for name, got := range map[string][]time.Duration{"five connections": spread, "concurrent": concurrent} {
		for k, took := range got {
			if took < d {
				t.Errorf("%s: reply %d completed after %v, before the delay", name, k, took)
			}
		}
		// All five at about d: well before the serial lane's 5d, even on a
		// loaded machine.
		if last := got[len(got)-1]; last >= 4*d {
			t.Errorf("%s: the last reply completed after %v, as if queued (serial took %v)", name, last, serial[len(serial)-1])
		}
	}
}

// A reply that completes late starts its delay then: the lane's next
// reply leaves d after the later of its own completion and the previous
// reply's release.
func TestSerialDelayCountsFromCompletion(t *testing.T) {
	const d = 30 * time.Millisecond
	s := &settings{m: map[string]time.Duration{config.FaultProduceResponseMs: d}}
	var wg sync.WaitGroup
	defer wg.Wait()
	inj := NewInjector(s.get, nil, &wg)
	slow := server.NewPendingReply()
	start := time.Now()
	out1 := inj.Apply(context.Background(), req(0, 7), slow)
	out2 := inj.Apply(context.Background(), req(0, 7), server.Ready(kmsg.NewPtrProduceResponse()))
	time.AfterFunc(3*d, func() { slow.Complete(kmsg.NewPtrProduceResponse()) })
	if !server.WaitReply(out2, 10*time.Second) {
		t.Fatal("second reply never completed")
	}
	select {
	case <-out1.Done():
	default:
		t.Fatal("the second reply left before the first")
	}
	if took := time.Since(start); took < 5*d {
		t.Fatalf("second reply after %v, want at least 3d+d+d = %v", took, 5*d)
	}
}

// When the connection ends its lane is forgotten and its waiting replies
// are released at once.
func TestSerialLaneEndsWithTheConnection(t *testing.T) {
	s := &settings{m: map[string]time.Duration{config.FaultProduceResponseMs: time.Hour}}
	var wg sync.WaitGroup
	inj := NewInjector(s.get, nil, &wg)
	ctx, cancel := context.WithCancel(context.Background())
	out := inj.Apply(ctx, req(0, 9), server.Ready(kmsg.NewPtrProduceResponse()))
	inj.mu.Lock()
	n := len(inj.lanes)
	inj.mu.Unlock()
	if n != 1 {
		t.Fatalf("%d lanes, want 1", n)
	}
	cancel()
	if !server.WaitReply(out, 5*time.Second) {
		t.Fatal("the reply waited on after its connection ended")
	}
	wg.Wait()
	eventually(t, 5*time.Second, func() bool {
		inj.mu.Lock()
		defer inj.mu.Unlock()
		return len(inj.lanes) == 0
	})
}

func eventually(t *testing.T, timeout time.Duration, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met in time")
		}
		time.Sleep(5 * time.Millisecond)
	}
}
