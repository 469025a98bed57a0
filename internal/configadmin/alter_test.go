package configadmin

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/config"
)

// incr is an IncrementalAlterConfigs resource with SET operations
// (key, value pairs).
func incr(typ kmsg.ConfigResourceType, name string, kv ...string) kmsg.IncrementalAlterConfigsRequestResource {
	r := kmsg.NewIncrementalAlterConfigsRequestResource()
	r.ResourceType, r.ResourceName = typ, name
	for i := 0; i+1 < len(kv); i += 2 {
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Op, c.Name, c.Value = kmsg.IncrementalAlterConfigOpSet, kv[i], kmsg.StringPtr(kv[i+1])
		r.Configs = append(r.Configs, c)
	}
	return r
}

// legacy is a legacy AlterConfigs resource with entries (key, value
// pairs).
func legacy(typ kmsg.ConfigResourceType, name string, kv ...string) kmsg.AlterConfigsRequestResource {
	r := kmsg.NewAlterConfigsRequestResource()
	r.ResourceType, r.ResourceName = typ, name
	for i := 0; i+1 < len(kv); i += 2 {
		c := kmsg.NewAlterConfigsRequestResourceConfig()
		c.Name, c.Value = kv[i], kmsg.StringPtr(kv[i+1])
		r.Configs = append(r.Configs, c)
	}
	return r
}

const (
	topic  = kmsg.ConfigResourceTypeTopic
	broker = kmsg.ConfigResourceTypeBroker
	group  = kmsg.ConfigResourceTypeGroupConfig
	logger = kmsg.ConfigResourceTypeBrokerLogger
)

// alterCase is one resource of a config request of either kind.
type alterCase struct {
	name        string
	incremental *kmsg.IncrementalAlterConfigsRequestResource // else legacy
	legacy      *kmsg.AlterConfigsRequestResource
	code        int16
}

// run sends the case's resource alone through m and returns its answer,
// the Forward, and the resource that was forwarded (as its type, name
// and number of configs) after Decide.
func (c alterCase) run(t *testing.T, m *Manager, h *fakeHost, validateOnly bool) (got kmsg.IncrementalAlterConfigsResponseResource, fwd *Forward, sent []string) {
	t.Helper()
	var resp kmsg.Response
	if c.incremental != nil {
		req := kmsg.NewPtrIncrementalAlterConfigsRequest()
		req.ValidateOnly, req.Resources = validateOnly, []kmsg.IncrementalAlterConfigsRequestResource{*c.incremental}
		var r *kmsg.IncrementalAlterConfigsResponse
		r, fwd = m.IncrementalAlter(req)
		resp, got = r, r.Resources[0]
	} else {
		req := kmsg.NewPtrAlterConfigsRequest()
		req.ValidateOnly, req.Resources = validateOnly, []kmsg.AlterConfigsRequestResource{*c.legacy}
		var r *kmsg.AlterConfigsResponse
		r, fwd = m.Alter(req)
		resp = r
		got.ResourceType, got.ResourceName, got.ErrorCode, got.ErrorMessage = r.Resources[0].ResourceType, r.Resources[0].ResourceName, r.Resources[0].ErrorCode, r.Resources[0].ErrorMessage
	}
	if fwd == nil {
		return got, nil, nil
	}
	if fwd.Decide(context.Background()) != resp {
		t.Fatal("Decide completed another response")
	}
	switch r := h.forwarded[0].(type) {
	case *kmsg.IncrementalAlterConfigsRequest:
		for _, rr := range r.Resources {
			sent = append(sent, fmt.Sprintf("%v %q %d", rr.ResourceType, rr.ResourceName, len(rr.Configs)))
		}
	case *kmsg.AlterConfigsRequest:
		for _, rr := range r.Resources {
			sent = append(sent, fmt.Sprintf("%v %q %d", rr.ResourceType, rr.ResourceName, len(rr.Configs)))
		}
	}
	return got, fwd, sent
}

func inc(name string, r kmsg.IncrementalAlterConfigsRequestResource, code int16) alterCase {
	return alterCase{name: "incremental " + name, incremental: &r, code: code}
}

func leg(name string, r kmsg.AlterConfigsRequestResource, code int16) alterCase {
	return alterCase{name: "legacy " + name, legacy: &r, code: code}
}

// TestAlterChecks: each resource is checked against this node's copy
// before anything is forwarded, with Kafka's code: INVALID_CONFIG for a
// bad topic config (before an unknown topic), UNKNOWN_TOPIC_OR_PARTITION,
// INVALID_TOPIC_EXCEPTION for a name no topic can have, INVALID_REQUEST
// for a bad broker config and an unsupported resource type. Only what
// passes is forwarded, as asked, and nothing under ValidateOnly.
func TestAlterChecks(t *testing.T) {
	for _, tc := range []alterCase{
		inc("topic", incr(topic, "t", config.RetentionMs, "100"), 0),
		inc("topic bad value", incr(topic, "t", config.RetentionMs, "soon"), kerr.InvalidConfig.Code),
		inc("topic unknown name", incr(topic, "t", "no.such.config", "1"), kerr.InvalidConfig.Code),
		inc("topic keys in conflict", incr(topic, "t", config.MinCompactionLagMs, "10", config.MaxCompactionLagMs, "5"), kerr.InvalidConfig.Code),
		inc("unknown topic", incr(topic, "missing", config.RetentionMs, "100"), kerr.UnknownTopicOrPartition.Code),
		inc("unknown topic, bad value first", incr(topic, "missing", config.RetentionMs, "soon"), kerr.InvalidConfig.Code),
		inc("illegal topic name", incr(topic, "a/b", config.RetentionMs, "100"), kerr.InvalidTopicException.Code),
		inc("broker", incr(broker, "1", "log.retention.ms", "100"), 0),
		inc("cluster default", incr(broker, "", "log.retention.ms", "100"), 0),
		inc("broker bad value", incr(broker, "1", "log.retention.ms", "soon"), kerr.InvalidRequest.Code),
		inc("broker read-only", incr(broker, "1", config.NodeID, "5"), kerr.InvalidRequest.Code),
		inc("another node", incr(broker, "2", "log.retention.ms", "100"), kerr.InvalidRequest.Code),
		inc("group", incr(group, "g", groupKey, "1000"), 0),
		inc("group refused", incr(group, "bad", groupKey, "1000"), kerr.InvalidConfig.Code),
		inc("broker logger", incr(logger, "1", "root", "DEBUG"), kerr.InvalidRequest.Code),
		leg("topic", legacy(topic, "t", config.SegmentBytes, "1048576"), 0),
		leg("topic bad value", legacy(topic, "t", config.SegmentBytes, "big"), kerr.InvalidConfig.Code),
		leg("unknown topic", legacy(topic, "missing", config.SegmentBytes, "1048576"), kerr.UnknownTopicOrPartition.Code),
		leg("unknown topic, bad value first", legacy(topic, "missing", config.SegmentBytes, "big"), kerr.InvalidConfig.Code),
		leg("illegal topic name", legacy(topic, "..", config.SegmentBytes, "1048576"), kerr.InvalidTopicException.Code),
		leg("broker", legacy(broker, "1", "log.retention.ms", "100"), 0),
		leg("broker bad value", legacy(broker, "1", "log.retention.ms", "soon"), kerr.InvalidRequest.Code),
		leg("group", legacy(group, "g", groupKey, "1000"), kerr.InvalidRequest.Code),
	} {
		for _, validateOnly := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s validate-only=%v", tc.name, validateOnly), func(t *testing.T) {
				h := &fakeHost{}
				got, fwd, sent := tc.run(t, newManager(t, nil, h), h, validateOnly)
				var typ kmsg.ConfigResourceType
				var name string
				var n int
				if tc.incremental != nil {
					typ, name, n = tc.incremental.ResourceType, tc.incremental.ResourceName, len(tc.incremental.Configs)
				} else {
					typ, name, n = tc.legacy.ResourceType, tc.legacy.ResourceName, len(tc.legacy.Configs)
				}
				if got.ErrorCode != tc.code || got.ResourceType != typ || got.ResourceName != name {
					t.Fatalf("%v %q: %s (%s), want %s", got.ResourceType, got.ResourceName, code(got.ErrorCode), deref(got.ErrorMessage), code(tc.code))
				}
				if (tc.code != 0 || validateOnly) != (fwd == nil) {
					t.Fatalf("forward %v for code %s, validate-only %v", fwd != nil, code(tc.code), validateOnly)
				}
				if want := fmt.Sprintf("%v %q %d", typ, name, n); fwd != nil && (len(sent) != 1 || sent[0] != want) {
					t.Fatalf("forwarded %v, want [%s]", sent, want)
				}
			})
		}
	}
}

// TestForwardAnswersInPlace: of a request whose resources pass and fail
// in turn, only those that passed are forwarded, in order, and each
// controller answer lands in its resource's place once this node applied
// the offset the change committed at.
func TestForwardAnswersInPlace(t *testing.T) {
	h := &fakeHost{answer: func(_ context.Context, req kmsg.Request) (kmsg.Response, int64, error) {
		resp := answerAll(req, 0, nil).(*kmsg.IncrementalAlterConfigsResponse)
		resp.Resources[1].ErrorCode, resp.Resources[1].ErrorMessage = kerr.PolicyViolation.Code, kmsg.StringPtr("not now")
		return resp, 42, nil
	}}
	m := newManager(t, nil, h)
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	req.Resources = append(req.Resources,
		incr(topic, "missing", config.RetentionMs, "1"),
		incr(topic, "t", config.RetentionMs, "1"),
		incr(broker, "1", "log.retention.ms", "soon"),
		incr(broker, "", "log.retention.ms", "100"),
	)
	resp, fwd := m.IncrementalAlter(req)
	if fwd == nil {
		t.Fatal("nothing forwarded")
	}
	fwd.Decide(context.Background())
	want := []struct {
		code int16
		msg  string
	}{
		{kerr.UnknownTopicOrPartition.Code, "<null>"},
		{0, "<null>"},
		{kerr.InvalidRequest.Code, "Invalid value soon for configuration log.retention.ms: Not a number of type LONG"},
		{kerr.PolicyViolation.Code, "not now"},
	}
	for i, w := range want {
		got := resp.Resources[i]
		if got.ErrorCode != w.code || deref(got.ErrorMessage) != w.msg {
			t.Errorf("resource %d: %s %q, want %s %q", i, code(got.ErrorCode), deref(got.ErrorMessage), code(w.code), w.msg)
		}
	}
	sent := h.forwarded[0].(*kmsg.IncrementalAlterConfigsRequest)
	if len(h.forwarded) != 1 || len(sent.Resources) != 2 || sent.Resources[0].ResourceName != "t" || sent.Resources[1].ResourceName != "" {
		t.Fatalf("forwarded %+v", sent.Resources)
	}
	if len(h.waited) != 1 || h.waited[0] != 42 {
		t.Fatalf("waited for %v, want [42]", h.waited)
	}
}

// TestForwardFailures: when the controller cannot decide, or this node
// cannot apply the outcome in time, every forwarded resource gets the
// failure, a retriable code; resources that failed their checks keep
// their own answer.
func TestForwardFailures(t *testing.T) {
	for _, tc := range []struct {
		name    string
		answer  func(context.Context, kmsg.Request) (kmsg.Response, int64, error)
		waitErr error
		code    int16
		waits   int
	}{
		{name: "no controller", code: kerr.NotController.Code,
			answer: func(context.Context, kmsg.Request) (kmsg.Response, int64, error) {
				return nil, -1, fmt.Errorf("%w: no leader", kerr.NotController)
			}},
		{name: "controller answers fewer resources", code: kerr.UnknownServerError.Code,
			answer: func(_ context.Context, req kmsg.Request) (kmsg.Response, int64, error) {
				resp := answerAll(req, 0, nil).(*kmsg.AlterConfigsResponse)
				resp.Resources = resp.Resources[:1]
				return resp, 3, nil
			}},
		{name: "not applied in time", waitErr: context.DeadlineExceeded, code: kerr.RequestTimedOut.Code, waits: 1},
		{name: "no offset: answered without waiting", code: kerr.ThrottlingQuotaExceeded.Code,
			answer: func(_ context.Context, req kmsg.Request) (kmsg.Response, int64, error) {
				return answerAll(req, kerr.ThrottlingQuotaExceeded.Code, nil), -1, nil
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := &fakeHost{answer: tc.answer, waitErr: tc.waitErr}
			m := newManager(t, nil, h)
			req := kmsg.NewPtrAlterConfigsRequest()
			req.Resources = append(req.Resources,
				legacy(topic, "t", config.RetentionMs, "1"),
				legacy(topic, "missing", config.RetentionMs, "1"),
				legacy(broker, "1", "log.retention.ms", "100"),
			)
			resp, fwd := m.Alter(req)
			fwd.Decide(context.Background())
			for i, want := range []int16{tc.code, kerr.UnknownTopicOrPartition.Code, tc.code} {
				if got := resp.Resources[i].ErrorCode; got != want {
					t.Errorf("resource %d: %s (%s), want %s", i, code(got), deref(resp.Resources[i].ErrorMessage), code(want))
				}
			}
			if len(h.waited) != tc.waits {
				t.Errorf("waited %d times, want %d", len(h.waited), tc.waits)
			}
		})
	}
}

// TestForwardBounded: the controller's decision and this node's wait
// share one deadline, Options.Timeout, whatever the caller's context.
func TestForwardBounded(t *testing.T) {
	h := &fakeHost{answer: func(ctx context.Context, req kmsg.Request) (kmsg.Response, int64, error) {
		<-ctx.Done()
		if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
			t.Errorf("context ended by %v", ctx.Err())
		}
		return nil, -1, fmt.Errorf("%w: %v", kerr.RequestTimedOut, ctx.Err())
	}}
	st, err := config.NewBroker(map[string]string{config.NodeID: "1"})
	if err != nil {
		t.Fatal(err)
	}
	h.topics = map[string]map[string]string{"t": nil}
	m := New(Options{NodeID: 1, Static: st, Host: h, Timeout: 50 * time.Millisecond})
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	req.Resources = append(req.Resources, incr(topic, "t", config.RetentionMs, "1"))
	resp, fwd := m.IncrementalAlter(req)
	start := time.Now()
	fwd.Decide(context.Background())
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("Decide took %v", took)
	}
	if got := resp.Resources[0].ErrorCode; got != kerr.RequestTimedOut.Code {
		t.Fatalf("%s, want REQUEST_TIMED_OUT", code(got))
	}
	if len(h.deadlines) != 1 || h.deadlines[0] > 50*time.Millisecond {
		t.Fatalf("deadlines %v, want one within 50ms", h.deadlines)
	}
}

// TestKafkaError: a config error becomes a Go error wrapping its Kafka
// code (INVALID_CONFIG when it carries none), and nil stays an
// untyped nil.
func TestKafkaError(t *testing.T) {
	if err := KafkaError(nil); err != nil {
		t.Fatalf("KafkaError(nil) = %#v", err)
	}
	for _, tc := range []struct {
		in   *config.Error
		want *kerr.Error
	}{
		{&config.Error{Code: kerr.InvalidRequest.Code, Message: "m"}, kerr.InvalidRequest},
		{&config.Error{Code: kerr.InvalidConfig.Code, Message: "m"}, kerr.InvalidConfig},
		{&config.Error{Code: 0, Message: "m"}, kerr.InvalidConfig},
	} {
		err := KafkaError(tc.in)
		if !errors.Is(err, tc.want) || err.Error() != tc.want.Error()+": m" {
			t.Errorf("KafkaError(%d) = %v, want %v: m", tc.in.Code, err, tc.want)
		}
	}
}
