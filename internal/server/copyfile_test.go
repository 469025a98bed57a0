package server

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestCopyFileRange(t *testing.T) {
	data := make([]byte, 3*copyChunk+123)
	for i := range data {
		data[i] = byte(i * 7)
	}
	path := filepath.Join(t.TempDir(), "seg")
	os.WriteFile(path, data, 0o600)
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, r := range [][2]int64{{0, int64(len(data))}, {5, copyChunk}, {copyChunk - 1, copyChunk + 2}, {int64(len(data)) - 1, 1}} {
		var out bytes.Buffer
		n, zero, err := copyFileRange(&out, f, r[0], r[1])
		if err != nil || zero || n != r[1] || !bytes.Equal(out.Bytes(), data[r[0]:r[0]+r[1]]) {
			t.Fatalf("range %v: n=%d zero=%v err=%v", r, n, zero, err)
		}
	}
	if _, _, err := copyFileRange(io.Discard, f, int64(len(data))-10, 20); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("range past the end: %v", err)
	}
}

// wrapSecurity hands the connection over wrapped, as TLS does: file
// ranges then take the copying path.
type wrapSecurity struct{ fakeSecurity }

type wrapped struct{ net.Conn }

func (w *wrapSecurity) Open(ctx context.Context, nc net.Conn) (net.Conn, Gate, error) {
	return wrapped{nc}, &fakeGate{authed: true}, nil
}

func TestFileRangesOverAWrappedConnectionAreCopied(t *testing.T) {
	payload := bytes.Repeat([]byte("record-bytes "), 20000)
	path := filepath.Join(t.TempDir(), "seg")
	os.WriteFile(path, payload, 0o600)
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	d := &fakeDispatcher{versions: testVersionsWithoutSASL, handle: func(_ context.Context, req *Request) *Reply {
		b := &Body{}
		b.AppendFile(f, 0, int64(len(payload)))
		return ReadyBody(b)
	}}
	s := startServer(t, d, func(c *Config) {
		c.Listeners = []Listener{{Name: "SSL", Addr: "127.0.0.1:0", Security: &wrapSecurity{}}}
	})
	c := dial(t, s)
	c.send(reqFrame(kmsg.NewPtrMetadataRequest(), 3, nil))
	b := c.readFrame()
	if correlationOf(b) != 3 || !bytes.Equal(b[4:], payload) {
		t.Fatalf("body of %d bytes, want the file's %d", len(b)-4, len(payload))
	}
	// The server counts the bytes once its write returns, which can be
	// after the client has read them.
	eventually(t, 5*time.Second, "the file's bytes counted as copied", func() bool {
		return s.Stats().CopiedFileBytes == uint64(len(payload))
	})
	if st := s.Stats(); st.CopiedFileBytes != uint64(len(payload)) || st.SendfileBytes != 0 {
		t.Fatalf("copied %d, sendfile %d", st.CopiedFileBytes, st.SendfileBytes)
	}
}
