package server

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"log/slog"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// eventually polls fn until it returns true or timeout passes.
func eventually(t testing.TB, timeout time.Duration, what string, fn func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !fn() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// fakeDispatcher serves a fixed version table and answers with handle, or
// with an empty response of the right kind when handle is nil.
type fakeDispatcher struct {
	versions []APIVersionRange
	handle   func(ctx context.Context, req *Request) *Reply

	mu   sync.Mutex
	seen []*Request
}

func (d *fakeDispatcher) Versions() []APIVersionRange { return d.versions }

func (d *fakeDispatcher) Serve(ctx context.Context, req *Request) *Reply {
	d.mu.Lock()
	d.seen = append(d.seen, req)
	d.mu.Unlock()
	if d.handle != nil {
		return d.handle(ctx, req)
	}
	return Ready(req.Body.ResponseKind())
}

func (d *fakeDispatcher) served() []*Request {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]*Request(nil), d.seen...)
}

// testVersions is a small 4.x-like table.
var testVersions = []APIVersionRange{
	{Key: 0, Min: 3, Max: 13}, // Produce
	{Key: 1, Min: 4, Max: 18}, // Fetch
	{Key: 3, Min: 0, Max: 13}, // Metadata
	{Key: 10, Min: 0, Max: 6}, // FindCoordinator
	{Key: 18, Min: 0, Max: 4}, // ApiVersions
	{Key: 19, Min: 2, Max: 7}, // CreateTopics
	{Key: 22, Min: 0, Max: 5}, // InitProducerId
	{Key: 32, Min: 1, Max: 4}, // DescribeConfigs
	{Key: 60, Min: 0, Max: 2}, // DescribeCluster
	{Key: 78, Min: 1, Max: 2}, // ShareFetch
	{Key: 12, Min: 0, Max: 4}, // Heartbeat
	{Key: 11, Min: 0, Max: 9}, // JoinGroup
	{Key: 68, Min: 0, Max: 1}, // ConsumerGroupHeartbeat
	{Key: 36, Min: 0, Max: 2}, // SaslAuthenticate
	{Key: 2, Min: 1, Max: 11}, // ListOffsets
	{Key: 8, Min: 2, Max: 10}, // OffsetCommit
	{Key: 9, Min: 1, Max: 10}, // OffsetFetch
	{Key: 75, Min: 0, Max: 0}, // DescribeTopicPartitions
	{Key: 17, Min: 0, Max: 1}, // SaslHandshake
	{Key: 23, Min: 2, Max: 4}, // OffsetForLeaderEpoch
}

func testLogger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(tWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type tWriter struct{ t testing.TB }

func (w tWriter) Write(p []byte) (int, error) {
	w.t.Log(string(p[:len(p)-1]))
	return len(p), nil
}

// startServer runs a server on 127.0.0.1:0 until the test ends.
func startServer(t *testing.T, d Dispatcher, tweak func(*Config)) *Server {
	t.Helper()
	cfg := Config{Addr: "127.0.0.1:0", Dispatcher: d, Logger: testLogger(t)}
	if tweak != nil {
		tweak(&cfg)
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Serve(context.Background()) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := s.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	return s
}

// frame builds a request frame with the header version req's key and
// version call for.
func reqFrame(req kmsg.Request, correlationID int32, clientID *string) []byte {
	b := make([]byte, 4, 64)
	b = binary.BigEndian.AppendUint16(b, uint16(req.Key()))
	b = binary.BigEndian.AppendUint16(b, uint16(req.GetVersion()))
	b = binary.BigEndian.AppendUint32(b, uint32(correlationID))
	hv := requestHeaderVersion(req)
	if hv >= 1 {
		if clientID == nil {
			b = binary.BigEndian.AppendUint16(b, 0xffff)
		} else {
			b = binary.BigEndian.AppendUint16(b, uint16(len(*clientID)))
			b = append(b, *clientID...)
		}
	}
	if hv == 2 {
		b = append(b, 0)
	}
	b = req.AppendTo(b)
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	return b
}

func strp(s string) *string { return &s }

// rawConn is a test client speaking bytes.
type rawConn struct {
	t  testing.TB
	nc net.Conn
}

func dial(t testing.TB, s *Server) *rawConn {
	t.Helper()
	nc, err := net.Dial("tcp", s.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	return &rawConn{t: t, nc: nc}
}

func (c *rawConn) send(b []byte) {
	c.t.Helper()
	if _, err := c.nc.Write(b); err != nil {
		c.t.Fatal(err)
	}
}

// readFrame reads one response frame, failing the test after 5 s.
func (c *rawConn) readFrame() []byte {
	c.t.Helper()
	b, err := c.tryReadFrame()
	if err != nil {
		c.t.Fatal(err)
	}
	return b
}

func (c *rawConn) tryReadFrame() ([]byte, error) {
	c.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	var size [4]byte
	if _, err := io.ReadFull(c.nc, size[:]); err != nil {
		return nil, err
	}
	b := make([]byte, binary.BigEndian.Uint32(size[:]))
	_, err := io.ReadFull(c.nc, b)
	return b, err
}

// expectClosed checks the server closes the connection without sending
// anything more.
func (c *rawConn) expectClosed() {
	c.t.Helper()
	c.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	var one [1]byte
	n, err := c.nc.Read(one[:])
	if n != 0 || !errors.Is(err, io.EOF) && !isReset(err) {
		c.t.Fatalf("want the server to close the connection, got %d bytes, err %v", n, err)
	}
}

func isReset(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && !op.Timeout()
}

func correlationOf(b []byte) int32 { return int32(binary.BigEndian.Uint32(b)) }
