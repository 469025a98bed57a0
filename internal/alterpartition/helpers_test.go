package alterpartition

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/clock"
	"weir/internal/replica"
)

// eventually polls cond until it holds, failing the test after timeout
// (a bound on a hang, not a performance assertion).
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// call is one AlterPartition the fake controller received; the test
// answers it once with resp or err.
type call struct {
	req   *kmsg.AlterPartitionRequest
	ctx   context.Context
	reply chan reply
}

type reply struct {
	resp *kmsg.AlterPartitionResponse
	err  error
}

func (c call) answer(resp *kmsg.AlterPartitionResponse, err error) { c.reply <- reply{resp, err} }

// fakeHost is the broker: its AlterPartition hands each request to the
// test (calls) and waits for the test's answer or the context's end.
type fakeHost struct {
	calls  chan call
	epochs map[int32]int64 // the image's registered broker epochs
}

func newFakeHost() *fakeHost {
	return &fakeHost{calls: make(chan call, 16), epochs: map[int32]int64{}}
}

func (h *fakeHost) AlterPartition(ctx context.Context, req *kmsg.AlterPartitionRequest) (*kmsg.AlterPartitionResponse, error) {
	c := call{req: req, ctx: ctx, reply: make(chan reply, 1)}
	h.calls <- c
	select {
	case r := <-c.reply:
		return r.resp, r.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (h *fakeHost) BrokerEpoch() int64 { return 77 }

func (h *fakeHost) RegisteredEpoch(id int32) (int64, bool) {
	e, ok := h.epochs[id]
	return e, ok
}

// next is the next request sent, failing the test if none comes.
func (h *fakeHost) next(t testing.TB) call {
	t.Helper()
	select {
	case c := <-h.calls:
		return c
	case <-time.After(5 * time.Second):
		t.Fatal("no AlterPartition sent")
		return call{}
	}
}

// none checks that no request is sent within a short while.
func (h *fakeHost) none(t testing.TB) {
	t.Helper()
	select {
	case c := <-h.calls:
		t.Fatalf("unexpected AlterPartition: %v", names(c.req))
	case <-time.After(50 * time.Millisecond):
	}
}

// fakePartition is a leader replica that records the answers it is
// given and asks for a resend while retry is set.
type fakePartition struct {
	topic string
	id    [16]byte
	index int32

	mu      sync.Mutex
	retry   bool
	results []replica.ISRChangeResult
}

func (p *fakePartition) Topic() string     { return p.topic }
func (p *fakePartition) TopicID() [16]byte { return p.id }
func (p *fakePartition) Partition() int32  { return p.index }

func (p *fakePartition) CompleteISRChange(_ replica.ISRChange, res replica.ISRChangeResult) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.results = append(p.results, res)
	return p.retry
}

func (p *fakePartition) setRetry(v bool) {
	p.mu.Lock()
	p.retry = v
	p.mu.Unlock()
}

func (p *fakePartition) answers() []replica.ISRChangeResult {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.results)
}

// partitions makes n partitions of topic "t" (id {1}).
func partitions(n int) []*fakePartition {
	out := make([]*fakePartition, n)
	for i := range out {
		out[i] = &fakePartition{topic: "t", id: [16]byte{1}, index: int32(i)}
	}
	return out
}

// running starts a Manager's Run and stops it at the end of the test.
func running(t testing.TB, cfg Config) (*Manager, *clock.Manual, context.CancelFunc) {
	t.Helper()
	m, clk := newManager(cfg)
	return m, clk, run(t, m)
}

// newManager is a Manager of broker 1 on a manual clock, not running.
func newManager(cfg Config) (*Manager, *clock.Manual) {
	clk := newManual()
	cfg.Clock = clk
	cfg.BrokerID = 1
	return New(cfg), clk
}

// run starts m's Run and stops it at the end of the test.
func run(t testing.TB, m *Manager) context.CancelFunc {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		m.Run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return cancel
}

// names lists a request's partitions as "topic/partition isr".
func names(req *kmsg.AlterPartitionRequest) []string {
	var out []string
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			out = append(out, fmt.Sprintf("%s/%d %v", t.Topic, p.Partition, p.NewISR))
		}
	}
	slices.Sort(out)
	return out
}

// accept answers every partition of req with its proposed ISR at the
// next partition epoch.
func accept(req *kmsg.AlterPartitionRequest) *kmsg.AlterPartitionResponse {
	resp := kmsg.NewPtrAlterPartitionResponse()
	for _, t := range req.Topics {
		rt := kmsg.NewAlterPartitionResponseTopic()
		rt.Topic, rt.TopidID = t.Topic, t.TopicID
		for _, p := range t.Partitions {
			rp := kmsg.NewAlterPartitionResponseTopicPartition()
			rp.Partition, rp.LeaderEpoch, rp.PartitionEpoch, rp.ISR = p.Partition, p.LeaderEpoch, p.PartitionEpoch+1, p.NewISR
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

func newManual() *clock.Manual { return clock.NewManual(time.Unix(1_700_000_000, 0)) }
