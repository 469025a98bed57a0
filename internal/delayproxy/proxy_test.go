package delayproxy

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"io"
	"net"
	"sync"
	"testing"
	"time"
)

// echoBroker answers every request frame at once with a response frame
// carrying the request's correlation id.
func echoBroker(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				r := bufio.NewReader(c)
				for {
					var size [4]byte
					if _, err := io.ReadFull(r, size[:]); err != nil {
						return
					}
					body := make([]byte, binary.BigEndian.Uint32(size[:]))
					if _, err := io.ReadFull(r, body); err != nil {
						return
					}
					resp := make([]byte, 8)
					binary.BigEndian.PutUint32(resp, 4)
					copy(resp[4:], body[4:8])
					if _, err := c.Write(resp); err != nil {
						return
					}
				}
			}()
		}
	}()
	return ln.Addr().String()
}

func request(key int16, corr int32) []byte {
	b := make([]byte, 4+10)
	binary.BigEndian.PutUint32(b, 10)
	binary.BigEndian.PutUint16(b[4:], uint16(key))
	binary.BigEndian.PutUint32(b[8:], uint32(corr))
	return b
}

// sendAll writes requests at once on a new connection through p and
// returns each response's correlation id and arrival time, in order.
func sendAll(t *testing.T, p *Proxy, keys []int16) ([]int32, []time.Duration) {
	t.Helper()
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	start := time.Now()
	for i, k := range keys {
		if _, err := c.Write(request(k, int32(i))); err != nil {
			t.Fatal(err)
		}
	}
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	var corrs []int32
	var at []time.Duration
	for range keys {
		var resp [8]byte
		if _, err := io.ReadFull(c, resp[:]); err != nil {
			t.Fatal(err)
		}
		corrs = append(corrs, int32(binary.BigEndian.Uint32(resp[4:])))
		at = append(at, time.Since(start))
	}
	return corrs, at
}

// Five produce responses asked at once leave d apart, in order; a
// metadata response between them waits its turn without a delay of its
// own; with the delay off nothing waits.
func TestProxyDelaysSerially(t *testing.T) {
	p, err := Listen("127.0.0.1:0", echoBroker(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	const d = 30 * time.Millisecond
	p.SetDelay(0, d)
	corrs, at := sendAll(t, p, []int16{0, 0, 3, 0, 0, 0})
	for i, c := range corrs {
		if c != int32(i) {
			t.Fatalf("responses out of order: %v", corrs)
		}
	}
	produced := 0
	for i, k := range []int16{0, 0, 3, 0, 0, 0} {
		if k == 0 {
			produced++
		}
		if want := time.Duration(produced) * d; at[i] < want {
			t.Errorf("response %d (key %d) after %v, want at least %v", i, k, at[i], want)
		}
	}
	if at[2] > at[1]+d/2 {
		t.Errorf("the metadata response waited %v after the produce before it, as if delayed itself", at[2]-at[1])
	}
	p.SetDelay(0, 0)
	_, at = sendAll(t, p, []int16{0, 0, 0, 0, 0})
	if at[4] >= d {
		t.Errorf("with the delay off the last response took %v", at[4])
	}
}

// Close ends open connections and returns, whatever they wait for.
func TestProxyClose(t *testing.T) {
	p, err := Listen("127.0.0.1:0", echoBroker(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	p.SetDelay(0, time.Hour)
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write(request(0, 1)); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { p.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Close waited on a delayed response")
	}
}

// Whatever a client sends, the framing reader relays whole frames only,
// refuses a frame over MaxFrame and never panics.
func FuzzForward(f *testing.F) {
	f.Add(request(0, 7))
	f.Add([]byte{0, 0, 0, 2, 1})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, in []byte) {
		var out bytes.Buffer
		var seen int
		err := forward(bufio.NewReader(bytes.NewReader(in)), &out, func([]byte) { seen++ }, nil)
		if err == nil {
			t.Fatal("forward ended without an error before the input did")
		}
		// What was written is a run of whole frames of the input.
		if !bytes.HasPrefix(in, out.Bytes()) {
			t.Fatalf("wrote %x, not a prefix of the input", out.Bytes())
		}
		n, frames := out.Bytes(), 0
		for len(n) >= 4 {
			size := int(binary.BigEndian.Uint32(n))
			if size > len(n)-4 {
				t.Fatalf("a partial frame was written")
			}
			n = n[4+size:]
			frames++
		}
		if len(n) != 0 || frames != seen {
			t.Fatalf("%d frames written, %d seen, %d bytes left", frames, seen, len(n))
		}
	})
}
