package server

import (
	"context"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// kgoDispatcher answers ApiVersions from its table and Metadata with
// itself as the only broker, which is what a client needs to bootstrap.
type kgoDispatcher struct {
	fakeDispatcher
	host string
	port int32
}

func newKgoDispatcher(versions []APIVersionRange) *kgoDispatcher {
	d := &kgoDispatcher{}
	d.versions = versions
	d.handle = func(_ context.Context, req *Request) *Reply {
		switch body := req.Body.(type) {
		case *kmsg.ApiVersionsRequest:
			resp := body.ResponseKind().(*kmsg.ApiVersionsResponse)
			for _, v := range d.versions {
				k := kmsg.NewApiVersionsResponseApiKey()
				k.ApiKey, k.MinVersion, k.MaxVersion = v.Key, v.Min, v.Max
				resp.ApiKeys = append(resp.ApiKeys, k)
			}
			return Ready(resp)
		case *kmsg.MetadataRequest:
			resp := body.ResponseKind().(*kmsg.MetadataResponse)
			b := kmsg.NewMetadataResponseBroker()
			b.NodeID, b.Host, b.Port = 0, d.host, d.port
			resp.Brokers = append(resp.Brokers, b)
			resp.ClusterID = strp("weir-test")
			resp.ControllerID = 0
			return Ready(resp)
		}
		return CloseConnection()
	}
	return d
}

// A real client bootstraps against the server: its ApiVersions v5 is
// answered by the KIP-511 fallback, it retries at our max (v4, flexible
// request header, v0 response header), then issues a flexible Metadata.
func TestKgoClientInterop(t *testing.T) {
	d := newKgoDispatcher([]APIVersionRange{{Key: 18, Min: 0, Max: 4}, {Key: 3, Min: 0, Max: 12}})
	s := startServer(t, d, nil)
	host, port, _ := net.SplitHostPort(s.Addr().String())
	p, _ := strconv.Atoi(port)
	d.host, d.port = host, int32(p)

	cl, err := kgo.NewClient(kgo.SeedBrokers(s.Addr().String()), kgo.ClientID("interop"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	meta, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if meta.ClusterID == nil || *meta.ClusterID != "weir-test" || len(meta.Brokers) != 1 {
		t.Fatalf("metadata %+v", meta)
	}
	versions, err := kmsg.NewPtrApiVersionsRequest().RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if versions.ErrorCode != 0 || len(versions.ApiKeys) != 2 {
		t.Fatalf("api versions %+v", versions)
	}

	var apiVersions, metadata []int16
	for _, r := range d.served() {
		switch r.Key {
		case 18:
			apiVersions = append(apiVersions, r.Version)
		case 3:
			metadata = append(metadata, r.Version)
			if r.ClientID != "interop" {
				t.Fatalf("client id %q", r.ClientID)
			}
		}
	}
	if len(apiVersions) == 0 || apiVersions[0] != 4 {
		t.Fatalf("ApiVersions versions served %v, want the retry at v4 first", apiVersions)
	}
	if len(metadata) == 0 || metadata[0] != 12 {
		t.Fatalf("Metadata versions served %v, want v12", metadata)
	}
	// Every connection the client opened began with a fallback.
	if fallbacks := s.Stats().Requests[18] - uint64(len(apiVersions)); fallbacks == 0 {
		t.Fatal("the client's first ApiVersions was not answered by the fallback")
	}
}
