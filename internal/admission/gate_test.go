package admission

import (
	"context"
	"fmt"
	"math"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/authz"
	"weir/internal/config"
	"weir/internal/metadata"
	"weir/internal/quota"
	"weir/internal/server"
)

var t0 = time.Date(2026, 11, 27, 4, 0, 0, 0, time.UTC)

// fakeQuotas answers with the throttles it is given and logs every call.
type fakeQuotas struct {
	produce, fetch, request time.Duration
	maxFetch                int32
	calls                   []string
}

func (f *fakeQuotas) Record(_ *metadata.ClientQuotas, k quota.Kind, c quota.Client, v float64, _ time.Time) time.Duration {
	f.calls = append(f.calls, fmt.Sprintf("record %s %s/%s %v", k, c.User, c.ClientID, v))
	if k == quota.Produce {
		return f.produce
	}
	return f.fetch
}

func (f *fakeQuotas) Unrecord(_ *metadata.ClientQuotas, k quota.Kind, c quota.Client, v float64, _ time.Time) {
	f.calls = append(f.calls, fmt.Sprintf("unrecord %s %s/%s %v", k, c.User, c.ClientID, v))
}

func (f *fakeQuotas) RecordRequestTime(_ *metadata.ClientQuotas, c quota.Client, spent time.Duration, _ time.Time) time.Duration {
	f.calls = append(f.calls, fmt.Sprintf("request %s/%s %v", c.User, c.ClientID, spent))
	return f.request
}

func (f *fakeQuotas) MaxFetchBytes(_ *metadata.ClientQuotas, c quota.Client) int32 {
	f.calls = append(f.calls, fmt.Sprintf("max-fetch %s/%s", c.User, c.ClientID))
	return f.maxFetch
}

// ticks is a clock that moves 5 ms at each reading, so a request
// served between two readings took 5 ms.
func ticks() func() time.Time {
	now := t0
	return func() time.Time {
		now = now.Add(5 * time.Millisecond)
		return now
	}
}

func acl(resource authz.ResourceType, name, principal, host string, op authz.Operation) *metadata.AccessControlEntryRecord {
	return &metadata.AccessControlEntryRecord{ID: [16]byte{byte(resource), byte(op), byte(len(name)), byte(len(principal) + len(host))},
		ResourceType: int8(resource), ResourceName: name, PatternType: int8(authz.PatternLiteral),
		Principal: principal, Host: host, Operation: int8(op), PermissionType: int8(authz.Allow)}
}

func image(t *testing.T, recs ...metadata.Record) *metadata.Image {
	t.Helper()
	img, _, err := metadata.Empty().Apply(0, recs)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// aliceQuota gives the image a client quota, which turns throttling on.
var aliceQuota = &metadata.ClientQuotaRecord{Entity: metadata.QuotaEntity{User: metadata.Named("alice")}, Key: quota.ProducerByteRate, Value: 1000}

type gateOpts struct {
	authorizer bool
	img        *metadata.Image
	forwarded  bool
}

func newGate(t *testing.T, o gateOpts, q *fakeQuotas) *Gate {
	t.Helper()
	props := map[string]string{config.NodeID: "1"}
	if o.authorizer {
		props[authz.ClassNameConfig] = authz.StandardAuthorizerClass
		props[authz.SuperUsersConfig] = "User:admin"
	}
	s, err := config.NewBroker(props)
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Settings: s, Image: func() *metadata.Image { return o.img }, Now: ticks()}
	if o.forwarded {
		cfg.Forwarded = func(*server.Request) bool { return true }
	}
	if q != nil {
		cfg.Quotas = q
	}
	g, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func request(principal, clientID string, body kmsg.Request) *server.Request {
	return &server.Request{Key: body.Key(), Version: body.GetVersion(), ClientID: clientID, Body: body, Size: 100,
		Conn: server.ConnInfo{Principal: principal, Remote: &net.TCPAddr{IP: net.IPv4(10, 0, 0, 1), Port: 50000}}}
}

func produce(topics ...string) *kmsg.ProduceRequest {
	r := kmsg.NewPtrProduceRequest()
	r.Version, r.Acks = 9, -1
	for _, name := range topics {
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = name
		rp := kmsg.NewProduceRequestTopicPartition()
		rt.Partitions = append(rt.Partitions, rp)
		r.Topics = append(r.Topics, rt)
	}
	return r
}

// produceHandler answers every topic it is asked to write.
func produceHandler(seen *[]string) func(context.Context, *server.Request) *server.Reply {
	return func(_ context.Context, req *server.Request) *server.Reply {
		r := req.Body.(*kmsg.ProduceRequest)
		resp := r.ResponseKind().(*kmsg.ProduceResponse)
		for _, t := range r.Topics {
			*seen = append(*seen, t.Topic)
			rt := kmsg.NewProduceResponseTopic()
			rt.Topic = t.Topic
			rt.Partitions = append(rt.Partitions, kmsg.NewProduceResponseTopicPartition())
			resp.Topics = append(resp.Topics, rt)
		}
		return server.Ready(resp)
	}
}

func responseOf(t *testing.T, r *server.Reply) kmsg.Response {
	t.Helper()
	resp, ok := r.Response(context.Background())
	if !ok {
		t.Fatal("the reply carries no response")
	}
	return resp
}

// topicCodes is each topic of a produce answer with its first
// partition's error code.
func topicCodes(resp kmsg.Response) map[string]int16 {
	m := map[string]int16{}
	for _, t := range resp.(*kmsg.ProduceResponse).Topics {
		m[t.Topic] = t.Partitions[0].ErrorCode
	}
	return m
}

// An open gate (no authorizer, no client quota) hands the handler the
// request and context it got, and returns the handler's reply as it is.
func TestOpenGateServesUntouched(t *testing.T) {
	q := &fakeQuotas{}
	g := newGate(t, gateOpts{img: metadata.Empty()}, q)
	req := request("User:alice", "c1", produce("t"))
	ctx := context.WithValue(context.Background(), t, "mine")
	want := server.Ready(kmsg.NewPtrProduceResponse())
	got := g.Serve(ctx, req, func(hctx context.Context, hreq *server.Request) *server.Reply {
		if hreq != req || hctx != ctx {
			t.Errorf("the handler got another request or context")
		}
		if VerdictOf(hctx).Finishes || VerdictOf(hctx).Partial || g.FetchLimit(hctx) != math.MaxInt32 {
			t.Errorf("an open gate left a verdict or a fetch quota in the context")
		}
		return want
	})
	if got != want || !got.MutedUntil().IsZero() || len(q.calls) != 0 {
		t.Fatalf("reply %p (want %p), muted until %v, quota calls %q", got, want, got.MutedUntil(), q.calls)
	}
}

// The open gate costs the request no allocation, with the handler a
// closure as the broker passes it.
func TestOpenGateAllocatesNothing(t *testing.T) {
	g := newGate(t, gateOpts{img: metadata.Empty()}, nil)
	req := request("", "c1", produce("t"))
	ctx := context.Background()
	reply := server.Ready(kmsg.NewPtrProduceResponse())
	served := 0
	if n := testing.AllocsPerRun(100, func() {
		g.Serve(ctx, req, func(context.Context, *server.Request) *server.Reply {
			served++
			return reply
		})
	}); n != 0 {
		t.Fatalf("%v allocations per request through the open gate", n)
	}
	if served == 0 {
		t.Fatal("the handler never ran")
	}
}

func BenchmarkOpenGate(b *testing.B) {
	img := metadata.Empty()
	g, err := New(Config{Image: func() *metadata.Image { return img }})
	if err != nil {
		b.Fatal(err)
	}
	req := &server.Request{Key: 0, Body: kmsg.NewPtrProduceRequest()}
	reply := server.Ready(kmsg.NewPtrProduceResponse())
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		g.Serve(ctx, req, func(context.Context, *server.Request) *server.Reply { return reply })
	}
}

func TestAuthorization(t *testing.T) {
	img := image(t,
		acl(authz.ResourceTopic, "t", "User:alice", "*", authz.OpWrite),
		acl(authz.ResourceTopic, "h", "User:alice", "10.0.0.9", authz.OpWrite),
		acl(authz.ResourceTopic, "t", "User:ANONYMOUS", "10.0.0.1", authz.OpWrite),
	)
	for _, tc := range []struct {
		name      string
		principal string
		topics    []string
		served    []string         // what the handler sees
		codes     map[string]int16 // the answer
	}{
		{"allowed", "User:alice", []string{"t"}, []string{"t"}, map[string]int16{"t": 0}},
		{"denied items are taken out and answered", "User:alice", []string{"t", "u"}, []string{"t"},
			map[string]int16{"t": 0, "u": kerr.TopicAuthorizationFailed.Code}},
		{"an ACL of another host does not apply", "User:alice", []string{"h"}, nil,
			map[string]int16{"h": kerr.TopicAuthorizationFailed.Code}},
		{"no principal is User:ANONYMOUS at its host", "", []string{"t"}, []string{"t"}, map[string]int16{"t": 0}},
		{"super users pass", "User:admin", []string{"t", "u"}, []string{"t", "u"}, map[string]int16{"t": 0, "u": 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := &fakeQuotas{}
			g := newGate(t, gateOpts{authorizer: true, img: img}, q)
			var seen []string
			reply := g.Serve(context.Background(), request(tc.principal, "c1", produce(tc.topics...)), produceHandler(&seen))
			if !slices.Equal(seen, tc.served) {
				t.Errorf("the handler saw %q, want %q", seen, tc.served)
			}
			if got := topicCodes(responseOf(t, reply)); fmt.Sprint(got) != fmt.Sprint(tc.codes) {
				t.Errorf("answer %v, want %v", got, tc.codes)
			}
			if len(q.calls) != 0 {
				t.Errorf("quota calls without a client quota: %q", q.calls)
			}
		})
	}
}

// A handler finds its principal's DESCRIBE filter in the context when an
// authorizer is on (alice's WRITE on t implies DESCRIBE; super users
// describe everything), and none without one, client quotas or not.
func TestDescribableTopics(t *testing.T) {
	img := image(t, acl(authz.ResourceTopic, "t", "User:alice", "*", authz.OpWrite))
	for _, tc := range []struct {
		name        string
		opts        gateOpts
		principal   string
		describable []string // nil: no filter
	}{
		{"authorizer", gateOpts{authorizer: true, img: img}, "User:alice", []string{"t"}},
		{"super user", gateOpts{authorizer: true, img: img}, "User:admin", []string{"t", "u", "v"}},
		{"no authorizer", gateOpts{img: img}, "User:alice", nil},
		{"no authorizer, client quotas", gateOpts{img: image(t, aliceQuota)}, "User:alice", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			filtered := false
			g := newGate(t, tc.opts, &fakeQuotas{})
			g.Serve(context.Background(), request(tc.principal, "c1", produce("t")), func(ctx context.Context, req *server.Request) *server.Reply {
				if f := DescribableTopics(ctx); f != nil {
					filtered, got = true, f([]string{"t", "u", "v"})
				}
				return server.Ready(req.Body.ResponseKind())
			})
			if filtered != (tc.describable != nil) || !slices.Equal(got, tc.describable) {
				t.Fatalf("filter %v keeps %q, want %q", filtered, got, tc.describable)
			}
		})
	}
}

// A whole-request denial is answered without the handler.
func TestRejectedRequestSkipsTheHandler(t *testing.T) {
	g := newGate(t, gateOpts{authorizer: true, img: metadata.Empty()}, nil)
	reply := g.Serve(context.Background(), request("User:alice", "c1", kmsg.NewPtrUnregisterBrokerRequest()),
		func(context.Context, *server.Request) *server.Reply {
			t.Fatal("the handler ran for a denied request")
			return nil
		})
	if code := responseOf(t, reply).(*kmsg.UnregisterBrokerResponse).ErrorCode; code != kerr.ClusterAuthorizationFailed.Code {
		t.Fatalf("error code %d, want CLUSTER_AUTHORIZATION_FAILED", code)
	}
}

// A request forwarded by another broker is served whole when that
// broker's principal has CLUSTER_ACTION, and refused otherwise.
func TestForwardedNeedsClusterAction(t *testing.T) {
	img := image(t, acl(authz.ResourceCluster, authz.ClusterName, "User:broker", "*", authz.OpClusterAction))
	for _, tc := range []struct {
		principal string
		code      int16
	}{
		{"User:broker", 0},
		{"User:alice", kerr.ClusterAuthorizationFailed.Code},
	} {
		t.Run(tc.principal, func(t *testing.T) {
			g := newGate(t, gateOpts{authorizer: true, img: img, forwarded: true}, nil)
			ct := kmsg.NewPtrCreateTopicsRequest()
			topic := kmsg.NewCreateTopicsRequestTopic()
			topic.Topic = "new"
			ct.Topics = append(ct.Topics, topic)
			req := request(tc.principal, "weir-broker-2", ct)
			served := false
			reply := g.Serve(context.Background(), req, func(_ context.Context, hreq *server.Request) *server.Reply {
				served = hreq == req // the request whole, not a copy
				resp := ct.ResponseKind().(*kmsg.CreateTopicsResponse)
				resp.Topics = append(resp.Topics, kmsg.NewCreateTopicsResponseTopic())
				return server.Ready(resp)
			})
			resp := responseOf(t, reply).(*kmsg.CreateTopicsResponse)
			if served != (tc.code == 0) || len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != tc.code {
				t.Fatalf("served %v, answer %+v, want code %d", served, resp.Topics, tc.code)
			}
		})
	}
}

func TestThrottle(t *testing.T) {
	img := image(t, aliceQuota)
	consumerFetch := kmsg.NewPtrFetchRequest()
	consumerFetch.Version, consumerFetch.ReplicaState.ID = 15, -1
	followerFetch := kmsg.NewPtrFetchRequest()
	followerFetch.Version, followerFetch.ReplicaState.ID = 15, 2
	for _, tc := range []struct {
		name    string
		body    kmsg.Request
		q       fakeQuotas
		handler int32         // the handler's own throttle time
		want    int32         // the answer's throttle time
		mute    time.Duration // the quotas' throttle: how long the connection is muted
		calls   []string
	}{
		{"within quotas", produce("t"), fakeQuotas{}, 0, 0, 0,
			[]string{"record Produce alice/c1 100", "request alice/c1 5ms"}},
		{"over the produce quota", produce("t"), fakeQuotas{produce: 400 * time.Millisecond, request: 100 * time.Millisecond}, 0, 400, 400 * time.Millisecond,
			[]string{"record Produce alice/c1 100", "request alice/c1 5ms"}},
		{"over the request quota", produce("t"), fakeQuotas{produce: 100 * time.Millisecond, request: 300 * time.Millisecond}, 0, 300, 300 * time.Millisecond,
			[]string{"record Produce alice/c1 100", "request alice/c1 5ms"}},
		{"the handler's longer throttle stays", produce("t"), fakeQuotas{request: 300 * time.Millisecond}, 1000, 1000, 300 * time.Millisecond,
			[]string{"record Produce alice/c1 100", "request alice/c1 5ms"}},
		{"a consumer fetch counts its time", consumerFetch, fakeQuotas{request: 50 * time.Millisecond}, 0, 50, 50 * time.Millisecond,
			[]string{"request alice/c1 5ms"}},
		{"a follower fetch is exempt", followerFetch, fakeQuotas{request: 50 * time.Millisecond}, 0, 0, 0, nil},
		{"AlterPartition is exempt", kmsg.NewPtrAlterPartitionRequest(), fakeQuotas{request: 50 * time.Millisecond}, 0, 0, 0, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := tc.q
			g := newGate(t, gateOpts{img: img}, &q)
			var sawCtx context.Context
			reply := g.Serve(context.Background(), request("User:alice", "c1", tc.body), func(ctx context.Context, req *server.Request) *server.Reply {
				sawCtx = ctx
				resp := req.Body.ResponseKind()
				resp.(kmsg.SetThrottleResponse).SetThrottle(tc.handler)
				return server.Ready(resp)
			})
			got, _ := responseOf(t, reply).(kmsg.ThrottleResponse).Throttle()
			if got != tc.want {
				t.Errorf("throttle %d ms, want %d", got, tc.want)
			}
			// The request started at the clock's first reading and
			// ended at its second: the mute runs from there.
			wantMute := time.Time{}
			if tc.mute > 0 {
				wantMute = t0.Add(10*time.Millisecond + tc.mute)
			}
			if !reply.MutedUntil().Equal(wantMute) {
				t.Errorf("muted until %v, want %v", reply.MutedUntil(), wantMute)
			}
			if !slices.Equal(q.calls, tc.calls) {
				t.Errorf("quota calls %q, want %q", q.calls, tc.calls)
			}
			if VerdictOf(sawCtx).Finishes {
				t.Errorf("a verdict that finishes without an authorizer")
			}
		})
	}
}
