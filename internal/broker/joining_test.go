package broker

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/server"
)

// TestJoiningBrokerServesNoClient: until Start has applied this run's
// registration, the image is the one the node had on disk (the leaders
// and brokers of its last run), so a client's request closes the
// connection (the client tries another broker, as against a Kafka broker
// that has not caught up); ApiVersions and the requests of other brokers
// (their controller client and inter-broker transport) are served.
func TestJoiningBrokerServesNoClient(t *testing.T) {
	cfg := DefaultConfig()
	cfg.DataDir = t.TempDir()
	b, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	srv, err := server.New(server.Config{Listeners: []server.Listener{{Name: "PLAINTEXT", Addr: "127.0.0.1:0"}}, Dispatcher: b})
	if err != nil {
		t.Fatal(err)
	}
	b.SetAdvertised(srv.Addr())
	defer srv.Shutdown(context.Background())

	answered := func(clientID string, req kmsg.Request) bool {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, ok := b.Serve(ctx, &server.Request{Key: req.Key(), Version: req.GetVersion(), Body: req, ClientID: clientID}).Response(ctx)
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
		want   bool
	}{
		{"app", metadata(), false},
		{"app", apiVersions(), true},
		{"weir-replica-2", metadata(), true},
		{brokerClientPrefix + "2", metadata(), true},
	} {
		if got := answered(tc.client, tc.req); got != tc.want {
			t.Errorf("before Start, %s from %q answered %v, want %v", kmsg.NameForKey(tc.req.Key()), tc.client, got, tc.want)
		}
	}
	if err := b.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !answered("app", metadata()) {
		t.Error("after Start, a client's Metadata was not answered")
	}
}
