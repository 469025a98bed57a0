package server

import (
	"bytes"
	"context"
	"encoding/binary"
	"io"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// segmentFile writes n distinct bytes to a temporary file.
func segmentFile(t *testing.T, n int) (*os.File, []byte) {
	t.Helper()
	data := make([]byte, n)
	for i := range data {
		data[i] = byte(i*7 + i/251)
	}
	path := filepath.Join(t.TempDir(), "segment")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f, data
}

// A body of byte slices and file ranges reaches the wire intact, after the
// right response header, and file ranges go through sendfile(2) on Linux
// TCP. Two connections read overlapping ranges of one *os.File at once:
// offsets are explicit, so they cannot disturb each other.
func TestBodyWithFileRanges(t *testing.T) {
	f, data := segmentFile(t, 3<<20)
	var released atomic.Int32
	d := &fakeDispatcher{versions: testVersions, handle: func(_ context.Context, req *Request) *Reply {
		b := &Body{Release: func() { released.Add(1) }}
		b.AppendBytes([]byte("head"))
		b.AppendFile(f, 10, 1<<20)
		b.AppendFile(f, 0, 5)
		b.AppendBytes([]byte("mid"))
		b.AppendBytes([]byte("dle"))
		b.AppendFile(f, 2<<20, 1<<20)
		b.AppendFile(f, 0, 0) // empty ranges are dropped
		return ReadyBody(b)
	}}
	s := startServer(t, d, nil)
	want := bytes.Join([][]byte{[]byte("head"), data[10 : 10+1<<20], data[:5], []byte("middle"), data[2<<20:]}, nil)

	const conns, perConn = 2, 3
	errs := make(chan string, conns)
	for range conns {
		c := dial(t, s)
		go func() {
			for corr := int32(0); corr < perConn; corr++ {
				if _, err := c.nc.Write(reqFrame(&kmsg.FetchRequest{Version: 12}, corr, nil)); err != nil {
					errs <- err.Error()
					return
				}
				got, err := c.tryReadFrame()
				switch {
				case err != nil:
					errs <- err.Error()
					return
				case correlationOf(got) != corr || got[4] != 0: // Fetch v12 is flexible: one header tag byte
					errs <- "bad response header"
					return
				case !bytes.Equal(got[5:], want):
					errs <- "body bytes differ"
					return
				}
			}
			errs <- ""
		}()
	}
	for range conns {
		if e := wait(t, errs); e != "" {
			t.Fatal(e)
		}
	}
	fileBytes := uint64(conns * perConn * (2<<20 + 5))
	eventually(t, 5*time.Second, "bodies released", func() bool { return released.Load() == conns*perConn })
	st := s.Stats()
	if runtime.GOOS == "linux" {
		if st.SendfileBytes != fileBytes || st.CopiedFileBytes != 0 {
			t.Fatalf("sendfile %d, copied %d, want %d by sendfile", st.SendfileBytes, st.CopiedFileBytes, fileBytes)
		}
	} else if st.CopiedFileBytes != fileBytes {
		t.Fatalf("copied %d, want %d", st.CopiedFileBytes, fileBytes)
	}
	if pos, _ := f.Seek(0, io.SeekCurrent); pos != 0 {
		t.Fatalf("file position moved to %d", pos)
	}
}

// On a connection without a file descriptor the copy path is used; a range
// past the end of the file fails the write and closes the connection
// instead of sending a short frame.
func TestBodyCopyPathAndShortFile(t *testing.T) {
	f, data := segmentFile(t, 1000)
	for _, tc := range []struct {
		name  string
		off   int64
		n     int64
		whole bool
	}{
		{"range inside the file", 100, 900, true},
		{"range past the end", 900, 200, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := &fakeDispatcher{versions: testVersions, handle: func(context.Context, *Request) *Reply {
				b := &Body{}
				b.AppendFile(f, tc.off, tc.n)
				return ReadyBody(b)
			}}
			s, err := newServer(Config{Dispatcher: d, Logger: testLogger(t)})
			if err != nil {
				t.Fatal(err)
			}
			client, srv := net.Pipe()
			defer client.Close()
			s.startConn(srv)
			var writer sync.WaitGroup
			defer writer.Wait()
			writer.Go(func() { client.Write(reqFrame(&kmsg.FetchRequest{Version: 4}, 1, nil)) })
			var size [4]byte
			if _, err := io.ReadFull(client, size[:]); err != nil {
				t.Fatal(err)
			}
			if got := binary.BigEndian.Uint32(size[:]); got != uint32(4+tc.n) {
				t.Fatalf("frame size %d", got)
			}
			got, err := io.ReadAll(io.LimitReader(client, 4+tc.n))
			if tc.whole {
				if err != nil || !bytes.Equal(got[4:], data[tc.off:tc.off+tc.n]) {
					t.Fatalf("err %v, body differs", err)
				}
			} else if len(got) == int(4+tc.n) {
				t.Fatal("a short file produced a whole frame")
			}
			client.Close()
			s.wg.Wait()
			if st := s.Stats(); st.SendfileBytes != 0 || st.CopiedFileBytes != uint64(min(tc.n, 1000-tc.off)) {
				t.Fatalf("stats %+v", st)
			}
		})
	}
}
