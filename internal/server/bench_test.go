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
	pipeline(b, c, batch, depth)
}

// pipeline writes batch, depth requests, and reads their depth replies
// until b.N requests were answered.
func pipeline(b *testing.B, c *rawConn, batch []byte, depth int) {
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

// funcDispatcher serves with a function and keeps nothing.
type funcDispatcher func(context.Context, *Request) *Reply

func (funcDispatcher) Versions() []APIVersionRange { return testVersions }

func (f funcDispatcher) Serve(ctx context.Context, req *Request) *Reply { return f(ctx, req) }

// BenchmarkProduceFrames: one connection, 5 produce requests in flight,
// each of 6 partitions with a 16 KiB record batch (what Java's
// ProducerPerformance sends with its defaults); per request cost of
// reading the ~97 KiB frame, decoding it and answering. Allocations here
// are the garbage a produce stream makes in the server.
//
// "reused" is the same with a dispatcher that lets the server reuse
// produce frames (FrameReuser).
func BenchmarkProduceFrames(b *testing.B) {
	resp := kmsg.NewPtrProduceResponse()
	serve := funcDispatcher(func(context.Context, *Request) *Reply { return Ready(resp) })
	b.Run("fresh", func(b *testing.B) { benchProduceFrames(b, serve) })
	b.Run("reused", func(b *testing.B) { benchProduceFrames(b, reusingDispatcher{serve}) })
}

// reusingDispatcher is a funcDispatcher that keeps no produce frame.
type reusingDispatcher struct{ funcDispatcher }

func (reusingDispatcher) ReusesFrame(key int16) bool { return key == 0 }

func benchProduceFrames(b *testing.B, d Dispatcher) {
	c := benchServer(b, d)
	req := kmsg.NewPtrProduceRequest()
	req.Version, req.Acks, req.TimeoutMillis = 9, -1, 30000
	topic := kmsg.NewProduceRequestTopic()
	topic.Topic = "bench"
	for i := range int32(6) {
		p := kmsg.NewProduceRequestTopicPartition()
		p.Partition = i
		p.Records = bytes.Repeat([]byte{byte(i)}, 16<<10)
		topic.Partitions = append(topic.Partitions, p)
	}
	req.Topics = append(req.Topics, topic)
	const depth = 5
	var batch []byte
	for corr := range int32(depth) {
		batch = append(batch, reqFrame(req, corr, strp("bench"))...)
	}
	b.ReportAllocs()
	b.SetBytes(int64(len(batch) / depth))
	pipeline(b, c, batch, depth)
}
