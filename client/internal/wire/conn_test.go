package wire

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// fakeBroker answers ApiVersions and Metadata on 127.0.0.1. Behaviour knobs
// let a test reject ApiVersions above a version, swap correlation ids or
// stay silent.
type fakeBroker struct {
	ln          net.Listener
	maxAPIVer   int16 // ApiVersions versions above this get error 35
	swap        bool  // answer the second of each pair first
	silentKey   int16 // never answer this key (-1: answer all)
	mu          sync.Mutex
	frames      int
	apiVersions []int16
	wg          sync.WaitGroup
}

func startFake(t *testing.T, fb *fakeBroker) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	fb.ln = ln
	fb.wg.Add(1)
	go func() {
		defer fb.wg.Done()
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			fb.wg.Add(1)
			go func() {
				defer fb.wg.Done()
				fb.serve(nc)
			}()
		}
	}()
	t.Cleanup(func() { ln.Close(); fb.wg.Wait() })
	return ln.Addr().String()
}

func (fb *fakeBroker) serve(nc net.Conn) {
	defer nc.Close()
	var held []byte
	for {
		var size [4]byte
		if _, err := io.ReadFull(nc, size[:]); err != nil {
			return
		}
		body := make([]byte, binary.BigEndian.Uint32(size[:]))
		if _, err := io.ReadFull(nc, body); err != nil {
			return
		}
		fb.mu.Lock()
		fb.frames++
		fb.mu.Unlock()
		key := int16(binary.BigEndian.Uint16(body))
		ver := int16(binary.BigEndian.Uint16(body[2:]))
		id := binary.BigEndian.Uint32(body[4:])
		var resp kmsg.Response
		switch key {
		case 18:
			fb.mu.Lock()
			fb.apiVersions = append(fb.apiVersions, ver)
			fb.mu.Unlock()
			r := kmsg.NewPtrApiVersionsResponse()
			if ver > fb.maxAPIVer {
				r.ErrorCode = 35
				ver = 0
			}
			r.ApiKeys = []kmsg.ApiVersionsResponseApiKey{{ApiKey: 18, MaxVersion: fb.maxAPIVer}, {ApiKey: 3, MinVersion: 0, MaxVersion: 9}}
			resp = r
		case 3:
			r := kmsg.NewPtrMetadataResponse()
			r.ClusterID = kmsg.StringPtr("c")
			resp = r
		default:
			return
		}
		if key == fb.silentKey {
			continue
		}
		resp.SetVersion(ver)
		out := kbin.AppendInt32(nil, 0)
		out = kbin.AppendInt32(out, int32(id))
		if resp.IsFlexible() && key != 18 {
			out = append(out, 0)
		}
		out = resp.AppendTo(out)
		binary.BigEndian.PutUint32(out, uint32(len(out)-4))
		if fb.swap && key != 18 && held == nil {
			held = out
			continue
		}
		if _, err := nc.Write(out); err != nil {
			return
		}
		if held != nil {
			if _, err := nc.Write(held); err != nil {
				return
			}
			held = nil
		}
	}
}

func TestNegotiateFallsBack(t *testing.T) {
	fb := &fakeBroker{maxAPIVer: 3, silentKey: -1}
	c, err := Dial(context.Background(), startFake(t, fb), Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if v, ok := c.Version(3); !ok || v != 9 {
		t.Fatalf("Metadata version %d %v, want 9 (the broker's max)", v, ok)
	}
	if _, ok := c.Version(0); ok {
		t.Fatal("Produce reported supported by a broker that does not list it")
	}
	fb.mu.Lock()
	defer fb.mu.Unlock()
	want := []int16{(&kmsg.ApiVersionsRequest{}).MaxVersion(), 3}
	if len(fb.apiVersions) != 2 || fb.apiVersions[0] != want[0] || fb.apiVersions[1] != want[1] {
		t.Fatalf("ApiVersions tried %v, want %v", fb.apiVersions, want)
	}
}

// TestPipelined hands over many requests at once; they share writes, and
// every one must arrive as its own frame and be answered.
func TestPipelined(t *testing.T) {
	fb := &fakeBroker{maxAPIVer: 4, silentKey: -1}
	c, err := Dial(context.Background(), startFake(t, fb), Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	const n = 200
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		c.Send(kmsg.NewPtrMetadataRequest(), 5*time.Second, false, func(r kmsg.Response, err error) {
			defer wg.Done()
			if err == nil && *r.(*kmsg.MetadataResponse).ClusterID != "c" {
				err = errors.New("wrong response")
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	fb.mu.Lock()
	defer fb.mu.Unlock()
	if fb.frames != n+2 { // two ApiVersions (v5 rejected, then v4) and the requests
		t.Fatalf("broker read %d frames, want %d", fb.frames, n+2)
	}
}

func TestCorrelationMismatchKillsConnection(t *testing.T) {
	fb := &fakeBroker{maxAPIVer: 4, swap: true, silentKey: -1}
	c, err := Dial(context.Background(), startFake(t, fb), Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	results := make(chan error, 2)
	for i := 0; i < 2; i++ {
		c.Send(kmsg.NewPtrMetadataRequest(), 5*time.Second, false, func(_ kmsg.Response, err error) { results <- err })
	}
	for i := 0; i < 2; i++ {
		if err := <-results; !errors.Is(err, ErrCorrelation) {
			t.Fatalf("err %v, want ErrCorrelation", err)
		}
	}
	<-c.Done()
}

func TestRequestTimeout(t *testing.T) {
	fb := &fakeBroker{maxAPIVer: 4, silentKey: 3}
	c, err := Dial(context.Background(), startFake(t, fb), Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	done := make(chan error, 1)
	c.Send(kmsg.NewPtrMetadataRequest(), 50*time.Millisecond, false, func(_ kmsg.Response, err error) { done <- err })
	select {
	case err := <-done:
		if !errors.Is(err, ErrRequestTimeout) {
			t.Fatalf("err %v, want ErrRequestTimeout", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no timeout")
	}
	// A dead connection fails later requests at once.
	_, err = c.Do(context.Background(), kmsg.NewPtrMetadataRequest(), time.Second)
	if err == nil {
		t.Fatal("request on a dead connection succeeded")
	}
}

func TestUnsupportedKey(t *testing.T) {
	fb := &fakeBroker{maxAPIVer: 4, silentKey: -1}
	c, err := Dial(context.Background(), startFake(t, fb), Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Do(context.Background(), kmsg.NewPtrProduceRequest(), 0); !errors.Is(err, ErrUnsupported) {
		t.Fatalf("err %v, want ErrUnsupported", err)
	}
}

// TestDoContextLeavesConnection: a caller giving up (ctx) does not close the
// connection; only a request timeout does.
func TestDoContextLeavesConnection(t *testing.T) {
	fb := &fakeBroker{maxAPIVer: 4, silentKey: 3}
	c, err := Dial(context.Background(), startFake(t, fb), Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	if _, err := c.Do(ctx, kmsg.NewPtrMetadataRequest(), 0); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err %v, want the context's", err)
	}
	select {
	case <-c.Done():
		t.Fatalf("connection closed: %v", c.Err())
	default:
	}
}

// TestIdleConnectionClosed: with MaxIdle a connection that sends nothing
// for that long is closed with ErrIdle; requests keep it open, a request
// awaiting its answer keeps it open however long it waits, and without
// MaxIdle nothing closes it.
func TestIdleConnectionClosed(t *testing.T) {
	const idle = 150 * time.Millisecond
	t.Run("idle", func(t *testing.T) {
		c, err := Dial(context.Background(), startFake(t, &fakeBroker{maxAPIVer: 4, silentKey: -1}), Config{MaxIdle: idle})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		start := time.Now()
		var quiet time.Time // when the last request was answered
		// Busy for 3x the limit: a request every third of it.
		for time.Since(start) < 3*idle {
			if _, err := c.Do(context.Background(), kmsg.NewPtrMetadataRequest(), time.Second); err != nil {
				t.Fatalf("request on a connection in use: %v", err)
			}
			quiet = time.Now()
			time.Sleep(idle / 3)
		}
		select {
		case <-c.Done():
		case <-time.After(10 * time.Second):
			t.Fatal("idle connection not closed")
		}
		if waited := time.Since(quiet); waited < idle-10*time.Millisecond { // quiet is a little after the answer
			t.Fatalf("closed %v after its last request, before the %v limit", waited, idle)
		}
		if !errors.Is(c.Err(), ErrIdle) {
			t.Fatalf("err %v, want ErrIdle", c.Err())
		}
		if _, err := c.Do(context.Background(), kmsg.NewPtrMetadataRequest(), time.Second); !errors.Is(err, ErrIdle) {
			t.Fatalf("request after the idle close: %v, want ErrIdle", err)
		}
	})
	t.Run("awaiting an answer", func(t *testing.T) {
		c, err := Dial(context.Background(), startFake(t, &fakeBroker{maxAPIVer: 4, silentKey: 3}), Config{MaxIdle: idle})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.Send(kmsg.NewPtrMetadataRequest(), 0, false, func(kmsg.Response, error) {})
		select {
		case <-c.Done():
			t.Fatalf("closed with a request awaiting its answer: %v", c.Err())
		case <-time.After(4 * idle):
		}
	})
	t.Run("no limit", func(t *testing.T) {
		c, err := Dial(context.Background(), startFake(t, &fakeBroker{maxAPIVer: 4, silentKey: -1}), Config{MaxIdle: -1})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		select {
		case <-c.Done():
			t.Fatalf("closed without a limit: %v", c.Err())
		case <-time.After(4 * idle):
		}
	})
}
