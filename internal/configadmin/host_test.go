package configadmin

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"maps"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/config"
	"weir/internal/metadata"
)

// fakeHost is a node with a fixed set of topics and a scripted
// controller. It records what was forwarded and waited for.
type fakeHost struct {
	topics map[string]map[string]string
	groups fakeGroups
	// answer is the controller's decision; nil answers every resource
	// with no error at offset 7.
	answer func(ctx context.Context, req kmsg.Request) (kmsg.Response, int64, error)
	// waitErr fails WaitApplied.
	waitErr error

	mu        sync.Mutex
	forwarded []kmsg.Request
	waited    []int64
	deadlines []time.Duration // time left on the context Forward got
}

func (h *fakeHost) TopicConfigs(name string) (map[string]string, bool) {
	c, ok := h.topics[name]
	return c, ok
}

func (h *fakeHost) Groups() GroupConfigs { return h.groups }

func (h *fakeHost) Forward(ctx context.Context, req kmsg.Request) (kmsg.Response, int64, error) {
	h.mu.Lock()
	h.forwarded = append(h.forwarded, req)
	if d, ok := ctx.Deadline(); ok {
		h.deadlines = append(h.deadlines, time.Until(d))
	}
	h.mu.Unlock()
	if h.answer != nil {
		return h.answer(ctx, req)
	}
	return answerAll(req, 0, nil), 7, nil
}

func (h *fakeHost) WaitApplied(_ context.Context, offset int64) error {
	h.mu.Lock()
	h.waited = append(h.waited, offset)
	h.mu.Unlock()
	return h.waitErr
}

// answerAll is the controller's response to req with every resource
// answered code and msg.
func answerAll(req kmsg.Request, code int16, msg *string) kmsg.Response {
	switch r := req.(type) {
	case *kmsg.IncrementalAlterConfigsRequest:
		resp := r.ResponseKind().(*kmsg.IncrementalAlterConfigsResponse)
		for _, rr := range r.Resources {
			res := kmsg.NewIncrementalAlterConfigsResponseResource()
			res.ResourceType, res.ResourceName, res.ErrorCode, res.ErrorMessage = rr.ResourceType, rr.ResourceName, code, msg
			resp.Resources = append(resp.Resources, res)
		}
		return resp
	case *kmsg.AlterConfigsRequest:
		resp := r.ResponseKind().(*kmsg.AlterConfigsResponse)
		for _, rr := range r.Resources {
			res := kmsg.NewAlterConfigsResponseResource()
			res.ResourceType, res.ResourceName, res.ErrorCode, res.ErrorMessage = rr.ResourceType, rr.ResourceName, code, msg
			resp.Resources = append(resp.Resources, res)
		}
		return resp
	}
	panic(fmt.Sprintf("unexpected %T", req))
}

// fakeGroups knows one config, share.record.lock.duration.ms; the group
// "bad" refuses every change.
type fakeGroups struct{}

const groupKey = "share.record.lock.duration.ms"

func (fakeGroups) DescribeGroupConfig(group string, _ config.DescribeOptions) ([]config.Entry, error) {
	if group == "" {
		return nil, fmt.Errorf("%w: Group name must not be empty", kerr.InvalidRequest)
	}
	e := kmsg.NewDescribeConfigsResponseResourceConfig()
	e.Name, e.Value, e.Source = groupKey, kmsg.StringPtr("30000"), kmsg.ConfigSourceDefaultConfig
	return []config.Entry{e}, nil
}

func (fakeGroups) ValidateGroupConfig(group string, _ []config.IncrementalOp) error {
	if group == "bad" {
		return fmt.Errorf("%w: group %s refuses", kerr.InvalidConfig, group)
	}
	return nil
}

func (fakeGroups) MergeGroupConfigs(group string, current map[string]string, ops []config.IncrementalOp) (map[string]string, error) {
	if group == "bad" {
		return nil, fmt.Errorf("%w: group %s refuses", kerr.InvalidConfig, group)
	}
	next := maps.Clone(current)
	if next == nil {
		next = map[string]string{}
	}
	for _, op := range ops {
		if op.Value == nil {
			return nil, fmt.Errorf("%w: null value for %s", kerr.InvalidConfig, op.Name)
		}
		next[op.Name] = *op.Value
	}
	return next, nil
}

// newManager is node 1 with static props and the topics "t" (retention.ms
// overridden to 500) and "plain" (no overrides).
func newManager(t testing.TB, static map[string]string, h *fakeHost) *Manager {
	t.Helper()
	all := map[string]string{config.NodeID: "1"}
	maps.Copy(all, static)
	st, err := config.NewBroker(all)
	if err != nil {
		t.Fatal(err)
	}
	if h.topics == nil {
		h.topics = map[string]map[string]string{"t": {config.RetentionMs: "500"}, "plain": nil}
	}
	return New(Options{NodeID: 1, Static: st, Host: h})
}

// image builds a metadata image from records.
func image(t testing.TB, recs ...metadata.Record) *metadata.Image {
	t.Helper()
	b := metadata.NewBuilder(metadata.Empty())
	for _, r := range recs {
		if err := b.Apply(r); err != nil {
			t.Fatalf("apply %+v: %v", r, err)
		}
	}
	return b.Image()
}

func brokerConfig(node, key, value string) *metadata.ConfigRecord {
	return &metadata.ConfigRecord{Resource: metadata.ResourceBroker, Name: node, Key: key, Value: value}
}

// logTo returns a logger writing text lines into buf.
func logTo(buf *bytes.Buffer) *slog.Logger {
	return slog.New(slog.NewTextHandler(buf, nil))
}

func code(c int16) string {
	if c == 0 {
		return "NONE"
	}
	if e, ok := kerr.ErrorForCode(c).(*kerr.Error); ok {
		return e.Message
	}
	return fmt.Sprint(c)
}
