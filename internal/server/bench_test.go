package server

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// benchServer is a server with d on loopback and one client connection.
func benchServer(b *testing.B, d Dispatcher) *rawConn {
	s, err := New(Config{Addr: "127.0.0.1:0", Dispatcher: d})
	if err != nil {
		b.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Serve(context.Background()) }()
	b.Cleanup(func() {
		s.Shutdown(context.Background())
		<-done
	})
	return dial(b, s)
}

// BenchmarkPipelinedRoundTrip: one connection, 64 small requests in flight
// at a time; per request cost of framing, decoding, dispatch and ordered
// writing.
func BenchmarkPipelinedRoundTrip(b *testing.B) {
	d := &fakeDispatcher{versions: testVersions, handle: func(_ context.Context, req *Request) *Reply {
		return Ready(req.Body.ResponseKind())
	}}
	c := benchServer(b, d)
	const depth = 64
	var batch []byte
	for corr := range int32(depth) {
		batch = append(batch, reqFrame(&kmsg.MetadataRequest{Version: 12}, corr, strp("bench"))...)
	}
	b.ReportAllocs()
	b.SetBytes(int64(len(batch) / depth))
	for i := 0; i < b.N; i += depth {
		if _, err := c.nc.Write(batch); err != nil {
			b.Fatal(err)
		}
		for range depth {
			if _, err := c.tryReadFrame(); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkFileBody: 1 MiB file-range bodies to a loopback client.
func BenchmarkFileBody(b *testing.B) {
	path := filepath.Join(b.TempDir(), "segment")
	if err := os.WriteFile(path, bytes.Repeat([]byte{1}, 1<<20), 0o600); err != nil {
		b.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	d := &fakeDispatcher{versions: testVersions, handle: func(context.Context, *Request) *Reply {
		body := &Body{}
		body.AppendFile(f, 0, 1<<20)
		return ReadyBody(body)
	}}
	c := benchServer(b, d)
	req := reqFrame(&kmsg.FetchRequest{Version: 12}, 1, nil)
	b.ReportAllocs()
	b.SetBytes(1 << 20)
	for b.Loop() {
		if _, err := c.nc.Write(req); err != nil {
			b.Fatal(err)
		}
		if _, err := c.tryReadFrame(); err != nil {
			b.Fatal(err)
		}
	}
}
