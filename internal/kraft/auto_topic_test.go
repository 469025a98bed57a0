package kraft

import (
	"context"
	"errors"
	"maps"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/metadata"
)

// topicAdmin is a controller that records each CreateTopics and answers
// it with answer (nil: success), or blocks it until release closes.
type topicAdmin struct {
	mu      sync.Mutex
	reqs    []*kmsg.CreateTopicsRequest
	answer  func(*kmsg.CreateTopicsRequest) (kmsg.Response, error)
	release chan struct{}
}

func (a *topicAdmin) Admin(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
	r := req.(*kmsg.CreateTopicsRequest)
	a.mu.Lock()
	a.reqs = append(a.reqs, r)
	answer, release := a.answer, a.release
	a.mu.Unlock()
	if release != nil {
		select {
		case <-release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if answer != nil {
		return answer(r)
	}
	return created(r, 0), nil
}

func (a *topicAdmin) requests() []*kmsg.CreateTopicsRequest {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]*kmsg.CreateTopicsRequest(nil), a.reqs...)
}

// created answers every topic of r with code.
func created(r *kmsg.CreateTopicsRequest, code int16) *kmsg.CreateTopicsResponse {
	resp := r.ResponseKind().(*kmsg.CreateTopicsResponse)
	for _, t := range r.Topics {
		rt := kmsg.NewCreateTopicsResponseTopic()
		rt.Topic, rt.ErrorCode = t.Topic, code
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// imageOf applies recs to an empty image.
func imageOf(tb testing.TB, recs ...metadata.Record) *metadata.Image {
	tb.Helper()
	img, _, err := metadata.Empty().Apply(1, recs)
	if err != nil {
		tb.Fatal(err)
	}
	return img
}

// brokers registers active brokers 1..active and fenced ones after them.
func brokers(active, fenced int) []metadata.Record {
	var recs []metadata.Record
	for id := int32(1); id <= int32(active+fenced); id++ {
		r := brokerRec(id)
		r.Fenced = id > int32(active)
		recs = append(recs, r)
	}
	return recs
}

// minISRConfigs is a Configs that caps min.insync.replicas 2 at the
// replication factor, as __transaction_state's does.
func minISRConfigs(rf int16) map[string]string {
	return map[string]string{"cleanup.policy": "compact", "min.insync.replicas": strconv.Itoa(int(min(2, rf)))}
}

// An internal topic gets the partitions asked for, the replication factor
// wanted capped at the active brokers (fenced ones do not count) and at
// least one, and the configs for that replication factor.
func TestAutoTopicCreation(t *testing.T) {
	for _, tc := range []struct {
		name           string
		active, fenced int
		want           int16
		rf             int16
		configs        map[string]string
	}{
		{name: "enough brokers", active: 5, want: 3, rf: 3, configs: map[string]string{"cleanup.policy": "compact", "min.insync.replicas": "2"}},
		{name: "fewer brokers", active: 2, fenced: 3, want: 3, rf: 2, configs: map[string]string{"cleanup.policy": "compact", "min.insync.replicas": "2"}},
		{name: "one broker", active: 1, want: 3, rf: 1, configs: map[string]string{"cleanup.policy": "compact", "min.insync.replicas": "1"}},
		{name: "no active broker", fenced: 1, want: 3, rf: 1, configs: map[string]string{"cleanup.policy": "compact", "min.insync.replicas": "1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			admin := &topicAdmin{}
			img := imageOf(t, brokers(tc.active, tc.fenced)...)
			m := NewAutoTopicCreationManager(AutoTopicCreationConfig{Image: func() *metadata.Image { return img }, Admin: admin, Logger: testLogger(t)})
			defer m.Close()
			err := m.Ensure(context.Background(), InternalTopic{Name: "__transaction_state", Partitions: 7, ReplicationFactor: tc.want, Configs: minISRConfigs})
			if err != nil {
				t.Fatal(err)
			}
			reqs := admin.requests()
			if len(reqs) != 1 || len(reqs[0].Topics) != 1 {
				t.Fatalf("requests: %+v", reqs)
			}
			rt := reqs[0].Topics[0]
			if rt.Topic != "__transaction_state" || rt.NumPartitions != 7 || rt.ReplicationFactor != tc.rf {
				t.Fatalf("topic %s, %d partitions, rf %d; want rf %d", rt.Topic, rt.NumPartitions, rt.ReplicationFactor, tc.rf)
			}
			got := map[string]string{}
			for _, c := range rt.Configs {
				got[c.Name] = *c.Value
			}
			if !maps.Equal(got, tc.configs) {
				t.Fatalf("configs %v, want %v", got, tc.configs)
			}
		})
	}
}

// A topic the image has is not asked for; one another node created
// meanwhile (TOPIC_ALREADY_EXISTS) is no error; any other refusal or a
// controller that cannot be reached is.
func TestAutoTopicCreationOutcomes(t *testing.T) {
	unreachable := errors.New("no controller")
	for _, tc := range []struct {
		name     string
		exists   bool
		answer   func(*kmsg.CreateTopicsRequest) (kmsg.Response, error)
		requests int
		err      error
	}{
		{name: "exists here", exists: true, requests: 0},
		{name: "created", requests: 1},
		{name: "created elsewhere", requests: 1, answer: func(r *kmsg.CreateTopicsRequest) (kmsg.Response, error) {
			return created(r, kerr.TopicAlreadyExists.Code), nil
		}},
		{name: "refused", requests: 1, err: kerr.InvalidReplicationFactor, answer: func(r *kmsg.CreateTopicsRequest) (kmsg.Response, error) {
			return created(r, kerr.InvalidReplicationFactor.Code), nil
		}},
		{name: "no answer", requests: 1, err: unreachable, answer: func(*kmsg.CreateTopicsRequest) (kmsg.Response, error) {
			return nil, unreachable
		}},
		{name: "empty answer", requests: 1, err: kerr.UnknownServerError, answer: func(r *kmsg.CreateTopicsRequest) (kmsg.Response, error) {
			return r.ResponseKind(), nil
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			recs := brokers(1, 0)
			if tc.exists {
				recs = append(recs, topicRecs("__consumer_offsets", 1, 1, 1)...)
			}
			img := imageOf(t, recs...)
			admin := &topicAdmin{answer: tc.answer}
			m := NewAutoTopicCreationManager(AutoTopicCreationConfig{Image: func() *metadata.Image { return img }, Admin: admin})
			defer m.Close()
			err := m.Ensure(context.Background(), InternalTopic{Name: "__consumer_offsets", Partitions: 1, ReplicationFactor: 1})
			if n := len(admin.requests()); n != tc.requests {
				t.Fatalf("%d requests, want %d", n, tc.requests)
			}
			if (tc.err == nil) != (err == nil) || (tc.err != nil && !errors.Is(err, tc.err)) {
				t.Fatalf("err %v, want %v", err, tc.err)
			}
		})
	}
}

// EnsureAsync starts one creation per topic at a time, another once it
// ended, none once closed; Close abandons a creation under way and waits
// for it.
func TestAutoTopicCreationAsync(t *testing.T) {
	img := imageOf(t, brokers(1, 0)...)
	admin := &topicAdmin{release: make(chan struct{})}
	m := NewAutoTopicCreationManager(AutoTopicCreationConfig{Image: func() *metadata.Image { return img }, Admin: admin, Logger: testLogger(t)})
	offsets := InternalTopic{Name: "__consumer_offsets", Partitions: 1, ReplicationFactor: 1}
	txns := InternalTopic{Name: "__transaction_state", Partitions: 1, ReplicationFactor: 1}

	m.EnsureAsync(offsets)
	m.EnsureAsync(offsets)
	m.EnsureAsync(txns)
	eventually(t, 5*time.Second, "two creations under way", func() bool { return len(admin.requests()) == 2 })
	m.EnsureAsync(offsets)
	close(admin.release)
	eventually(t, 5*time.Second, "creations ended", func() bool {
		m.mu.Lock()
		defer m.mu.Unlock()
		return len(m.creating) == 0
	})
	if n := len(admin.requests()); n != 2 {
		t.Fatalf("%d requests while one per topic was under way, want 2", n)
	}
	m.EnsureAsync(offsets)
	eventually(t, 5*time.Second, "a new creation once the first ended", func() bool { return len(admin.requests()) == 3 })

	// A creation the controller never answers ends with Close.
	admin.mu.Lock()
	admin.release = make(chan struct{})
	admin.mu.Unlock()
	eventually(t, 5*time.Second, "the third creation ended", func() bool {
		m.mu.Lock()
		defer m.mu.Unlock()
		return len(m.creating) == 0
	})
	m.EnsureAsync(txns)
	eventually(t, 5*time.Second, "a creation blocked", func() bool { return len(admin.requests()) == 4 })
	closed := make(chan struct{})
	go func() {
		m.Close()
		close(closed)
	}()
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not abandon the creation under way")
	}
	m.EnsureAsync(offsets)
	if n := len(admin.requests()); n != 4 {
		t.Fatalf("a creation started after Close: %d requests", n)
	}
}

// Ensure returns once this node has applied the topic, whether it created
// it or the image had it already, and not after a failed creation.
func TestAutoTopicCreationWaitsUntilApplied(t *testing.T) {
	notYet := errors.New("not applied yet")
	for _, tc := range []struct {
		name    string
		exists  bool
		refuse  bool
		applied error
		waits   int
		err     error
	}{
		{name: "created", waits: 1},
		{name: "in the image", exists: true, waits: 1},
		{name: "not applied in time", applied: notYet, waits: 1, err: notYet},
		{name: "refused", refuse: true, waits: 0, err: kerr.PolicyViolation},
	} {
		t.Run(tc.name, func(t *testing.T) {
			recs := brokers(1, 0)
			if tc.exists {
				recs = append(recs, topicRecs("__share_group_state", 1, 1, 1)...)
			}
			img := imageOf(t, recs...)
			admin := &topicAdmin{}
			if tc.refuse {
				admin.answer = func(r *kmsg.CreateTopicsRequest) (kmsg.Response, error) {
					return created(r, kerr.PolicyViolation.Code), nil
				}
			}
			var waited []string
			m := NewAutoTopicCreationManager(AutoTopicCreationConfig{
				Image: func() *metadata.Image { return img }, Admin: admin,
				Applied: func(_ context.Context, topic string) error {
					waited = append(waited, topic)
					return tc.applied
				},
			})
			defer m.Close()
			err := m.Ensure(context.Background(), InternalTopic{Name: "__share_group_state", Partitions: 1, ReplicationFactor: 1})
			if (tc.err == nil) != (err == nil) || (tc.err != nil && !errors.Is(err, tc.err)) {
				t.Fatalf("err %v, want %v", err, tc.err)
			}
			if len(waited) != tc.waits || (tc.waits > 0 && waited[0] != "__share_group_state") {
				t.Fatalf("waited for %v, want %d waits", waited, tc.waits)
			}
		})
	}
}
