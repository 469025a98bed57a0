package e2e

import (
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestIdleConnectionClosed: weir serve with connections.max.idle.ms=300
// closes a client connection that has sent nothing since its last
// answer, and a Kafka client that finds its connection closed simply
// reconnects for its next request.
func TestIdleConnectionClosed(t *testing.T) {
	props := filepath.Join(t.TempDir(), "server.properties")
	if err := os.WriteFile(props, []byte("connections.max.idle.ms=300\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	addr := freePort(t)
	p := startWeir(t, t.TempDir(), addr, "--config", props)
	defer p.stop(t)
	ctx := testContext(t, time.Minute)

	// A raw connection that sends nothing: closed by the broker.
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	start := time.Now()
	var one [1]byte
	if n, err := nc.Read(one[:]); n != 0 || !errors.Is(err, io.EOF) {
		t.Fatalf("idle connection: read %d bytes, %v; want the broker to close it", n, err)
	}
	if took := time.Since(start); took < 300*time.Millisecond {
		t.Fatalf("closed after %v, before connections.max.idle.ms", took)
	}

	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for i := range 2 {
		if _, err := kmsg.NewPtrApiVersionsRequest().RequestWith(ctx, cl); err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		time.Sleep(time.Second) // the client's connection is closed meanwhile
	}
}
