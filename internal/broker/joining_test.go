package broker

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/server"
)

// newUnstartedBroker is a broker made with the default config that is
// never started; the test's end closes it.
func newUnstartedBroker(t *testing.T) *Broker {
	t.Helper()
	cfg := DefaultConfig()
	cfg.DataDir = t.TempDir()
	b, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// TestJoiningBrokerHoldsClients: until Start has applied this run's
// registration, the image is the one the node had on disk (the leaders
// and brokers of its last run), so a client's request waits, as against
// a Kafka broker that has not started (its connection in the listen
// backlog): it is neither answered nor closed, and is answered once
// Start ends. ApiVersions and the requests of other brokers (their
// controller client and inter-broker transport) are served at once.
// Closing the connection instead made franz-go fail produced records
// (an EOF on a connection's first request is not retried).
func TestJoiningBrokerHoldsClients(t *testing.T) {
	b := newUnstartedBroker(t)
	srv, err := server.New(server.Config{Listeners: []server.Listener{{Name: "PLAINTEXT", Addr: "127.0.0.1:0"}}, Dispatcher: b})
	if err != nil {
		t.Fatal(err)
	}
	b.SetAdvertised(srv.Addr())
	defer srv.Shutdown(context.Background())

	serve := func(clientID string, req kmsg.Request) *server.Reply {
		return b.Serve(context.Background(), &server.Request{Key: req.Key(), Version: req.GetVersion(), Body: req, ClientID: clientID})
	}
	answered := func(r *server.Reply) bool {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, ok := r.Response(ctx)
		return ok
	}
	metadata := func() kmsg.Request {
		req := kmsg.NewPtrMetadataRequest()
		req.Version = 12
		return req
	}
	apiVersions := func() kmsg.Request {
		req := kmsg.NewPtrApiVersionsRequest()
		req.Version = 3
		return req
	}
	for _, tc := range []struct {
		client string
		req    kmsg.Request
	}{
		{"app", apiVersions()},
		{replicaClientPrefix + "2", metadata()},
		{brokerClientPrefix + "2", metadata()},
	} {
		if !answered(serve(tc.client, tc.req)) {
			t.Errorf("before Start, %s from %q was not answered", kmsg.NameForKey(tc.req.Key()), tc.client)
		}
	}
	held := []*server.Reply{serve("app", metadata()), serve("app", metadata())}
	time.Sleep(50 * time.Millisecond)
	for i, r := range held {
		select {
		case <-r.Done():
			t.Fatalf("before Start, a client's Metadata %d completed (answered or closed)", i)
		default:
		}
	}
	if err := b.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	for i, r := range held {
		if !answered(r) {
			t.Errorf("the Metadata %d held before Start was not answered after it", i)
		}
	}
	if !answered(serve("app", metadata())) {
		t.Error("after Start, a client's Metadata was not answered")
	}
}

// TestHeartbeatsReportTheRegistrysOffset: the offset a broker reports to
// the controller (which unfences it, and elects it leader, once that
// offset reaches its registration) is what its registry applied, not
// what the metadata log holds: a restarted broker whose registry lags
// must not be made a leader it cannot serve yet.
func TestHeartbeatsReportTheRegistrysOffset(t *testing.T) {
	tb := startBroker(t, t.TempDir(), nil)
	b := tb.b
	b.applyMu.Lock() // the registry applies nothing from here
	locked := true
	defer func() {
		if locked {
			b.applyMu.Unlock()
		}
	}()
	applied := b.image().Offset()
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "lagging", 1, 1
	req.Topics = append(req.Topics, rt)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := b.ctl.Admin(ctx, req); err != nil {
		t.Fatal(err)
	}
	if b.node.Image().Offset() <= applied {
		t.Fatalf("the metadata log did not move past %d", applied)
	}
	for range 3 {
		b.life.HeartbeatNow()
		time.Sleep(50 * time.Millisecond)
		if r := b.life.Reported(); r > applied {
			t.Fatalf("reported offset %d while the registry has applied %d", r, applied)
		}
	}
	b.applyMu.Unlock()
	locked = false
	deadline := time.Now().Add(10 * time.Second)
	for b.life.Reported() < b.node.Image().Offset() {
		if time.Now().After(deadline) {
			t.Fatalf("reported %d, the registry at %d: the applied change was never reported", b.life.Reported(), b.image().Offset())
		}
		b.life.HeartbeatNow()
		time.Sleep(20 * time.Millisecond)
	}
}

// TestFailedStartReleasesHeldClients: a client's request held while the
// broker joins is closed when Start fails, not left waiting (a server
// shutting down would wait for its reply for ever).
func TestFailedStartReleasesHeldClients(t *testing.T) {
	b := newUnstartedBroker(t)
	req := kmsg.NewPtrMetadataRequest()
	req.Version = 12
	held := b.Serve(context.Background(), &server.Request{Key: req.Key(), Version: req.Version, Body: req, ClientID: "app"})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := b.Start(ctx); err == nil {
		t.Fatal("Start with an ended context succeeded")
	}
	select {
	case <-held.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the held request still waits after Start failed")
	}
	if _, ok := held.Response(context.Background()); ok {
		t.Error("the held request was answered, want its connection closed")
	}
}
