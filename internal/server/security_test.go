package server

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// fakeSecurity admits ApiVersions and SaslHandshake before a
// SaslHandshake for mechanism "OK", answers the handshake itself, closes
// on any other mechanism, and bounds frames at maxFrame until then.
type fakeSecurity struct {
	openErr  error
	maxFrame int32

	mu     sync.Mutex
	opened int
}

func (f *fakeSecurity) Versions() []APIVersionRange {
	return []APIVersionRange{{Key: 17, Min: 1, Max: 1}, {Key: 36, Min: 0, Max: 2}, {Key: 3, Min: 0, Max: 0}}
}

func (f *fakeSecurity) Open(ctx context.Context, nc net.Conn) (net.Conn, Gate, error) {
	f.mu.Lock()
	f.opened++
	f.mu.Unlock()
	if f.openErr != nil {
		return nil, nil, f.openErr
	}
	return nc, &fakeGate{maxFrame: f.maxFrame}, nil
}

type fakeGate struct {
	maxFrame int32
	authed   bool
}

func (g *fakeGate) Admit(key int16) bool { return g.authed || key == 18 || key == 17 }

func (g *fakeGate) MaxFrame() int32 {
	if g.authed {
		return 0
	}
	return g.maxFrame
}

func (g *fakeGate) Check(req *Request) Verdict {
	hs, ok := req.Body.(*kmsg.SASLHandshakeRequest)
	if !ok {
		return Verdict{}
	}
	resp := kmsg.NewPtrSASLHandshakeResponse()
	resp.SupportedMechanisms = []string{"OK"}
	if hs.Mechanism != "OK" {
		resp.ErrorCode = 33
		return Verdict{Response: resp, Close: true, Reason: "bad mechanism"}
	}
	g.authed = true
	return Verdict{Response: resp, Principal: "User:fake"}
}

// testVersionsWithoutSASL is testVersions less the SASL keys, which the
// edge serves.
var testVersionsWithoutSASL = slices.DeleteFunc(slices.Clone(testVersions), func(r APIVersionRange) bool { return r.Key == 17 || r.Key == 36 })

func versionsReq(v int16) *kmsg.ApiVersionsRequest {
	r := kmsg.NewPtrApiVersionsRequest()
	r.Version = v
	return r
}

func TestSecurityGatesRequests(t *testing.T) {
	sec := &fakeSecurity{maxFrame: 200}
	d := &fakeDispatcher{versions: testVersionsWithoutSASL, handle: func(_ context.Context, req *Request) *Reply {
		resp := req.Body.ResponseKind()
		if av, ok := resp.(*kmsg.ApiVersionsResponse); ok {
			for _, r := range testVersionsWithoutSASL {
				av.ApiKeys = append(av.ApiKeys, kmsg.ApiVersionsResponseApiKey{ApiKey: r.Key, MinVersion: r.Min, MaxVersion: r.Max})
			}
		}
		return Ready(resp)
	}}
	s := startServer(t, d, func(c *Config) {
		c.Listeners = []Listener{{Name: "SASL_PLAINTEXT", Addr: "127.0.0.1:0", Security: sec}}
	})

	t.Run("api versions lists the edge's keys", func(t *testing.T) {
		c := dial(t, s)
		c.send(reqFrame(versionsReq(3), 1, strp("c")))
		b := c.readFrame()
		resp := kmsg.NewPtrApiVersionsResponse()
		resp.Version = 3
		if err := resp.ReadFrom(b[4:]); err != nil {
			t.Fatal(err)
		}
		got := map[int16][2]int16{}
		for _, k := range resp.ApiKeys {
			got[k.ApiKey] = [2]int16{k.MinVersion, k.MaxVersion}
		}
		if got[17] != [2]int16{1, 1} || got[36] != [2]int16{0, 2} {
			t.Fatalf("SASL keys %v %v", got[17], got[36])
		}
		if got[3] != [2]int16{0, 13} {
			t.Fatalf("Metadata %v: a key both serve must keep the dispatcher's range", got[3])
		}
	})

	t.Run("request before authentication closes unanswered", func(t *testing.T) {
		before := len(d.served())
		c := dial(t, s)
		c.send(reqFrame(kmsg.NewPtrMetadataRequest(), 1, nil))
		c.expectClosed()
		if len(d.served()) != before {
			t.Fatal("dispatcher saw an unauthenticated request")
		}
	})

	t.Run("oversized frame before authentication closes", func(t *testing.T) {
		c := dial(t, s)
		req := kmsg.NewPtrSASLHandshakeRequest()
		req.Version = 1
		req.Mechanism = string(make([]byte, 300))
		c.send(reqFrame(req, 1, nil))
		c.expectClosed()
	})

	t.Run("edge answers, then the dispatcher sees the principal", func(t *testing.T) {
		c := dial(t, s)
		hs := kmsg.NewPtrSASLHandshakeRequest()
		hs.Version, hs.Mechanism = 1, "OK"
		c.send(reqFrame(hs, 7, nil))
		if b := c.readFrame(); correlationOf(b) != 7 {
			t.Fatalf("correlation %d", correlationOf(b))
		}
		md := kmsg.NewPtrMetadataRequest()
		md.Version = 12
		md.Topics = []kmsg.MetadataRequestTopic{{Topic: strp(string(make([]byte, 400)))}} // past maxFrame: authenticated now
		c.send(reqFrame(md, 8, nil))
		if b := c.readFrame(); correlationOf(b) != 8 {
			t.Fatalf("correlation %d", correlationOf(b))
		}
		seen := d.served()
		last := seen[len(seen)-1]
		if last.Key != 3 || last.Conn.Principal != "User:fake" || last.Conn.Listener != "SASL_PLAINTEXT" {
			t.Fatalf("dispatched key %d conn %+v", last.Key, last.Conn)
		}
	})

	t.Run("edge answer then close", func(t *testing.T) {
		c := dial(t, s)
		hs := kmsg.NewPtrSASLHandshakeRequest()
		hs.Version, hs.Mechanism = 1, "NOPE"
		c.send(reqFrame(hs, 9, nil))
		b := c.readFrame()
		resp := kmsg.NewPtrSASLHandshakeResponse()
		resp.Version = 1
		if err := resp.ReadFrom(b[4:]); err != nil || resp.ErrorCode != 33 {
			t.Fatalf("resp %+v err %v", resp, err)
		}
		c.expectClosed()
	})

	if st := s.Stats(); st.AuthFailures != 2 || st.ProtocolErrors != 1 {
		t.Fatalf("AuthFailures = %d, ProtocolErrors = %d: want the two refusals and the oversized frame", st.AuthFailures, st.ProtocolErrors)
	}
}

func TestSecurityOpenFailureCloses(t *testing.T) {
	sec := &fakeSecurity{openErr: errors.New("bad handshake")}
	s := startServer(t, &fakeDispatcher{versions: testVersionsWithoutSASL}, func(c *Config) {
		c.Listeners = []Listener{{Name: "SSL", Addr: "127.0.0.1:0", Security: sec}}
	})
	c := dial(t, s)
	c.send(reqFrame(versionsReq(3), 1, nil))
	c.expectClosed()
	eventually(t, 5*time.Second, "the failure counted", func() bool { return s.Stats().AuthFailures == 1 })
}

// Two listeners: each connection knows which one it came in on, and only
// the secured one gates.
func TestSeveralListeners(t *testing.T) {
	d := &fakeDispatcher{versions: testVersionsWithoutSASL}
	s := startServer(t, d, func(c *Config) {
		c.Listeners = []Listener{
			{Name: "INTERNAL", Addr: "127.0.0.1:0"},
			{Name: "EXTERNAL", Addr: "127.0.0.1:0", Security: &fakeSecurity{}},
		}
	})
	if s.Addr().String() != s.ListenerAddr("INTERNAL").String() || s.ListenerAddr("NONE") != nil {
		t.Fatal("listener addresses")
	}
	in, err := net.Dial("tcp", s.ListenerAddr("INTERNAL").String())
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	c := &rawConn{t: t, nc: in}
	c.send(reqFrame(kmsg.NewPtrMetadataRequest(), 1, nil))
	c.readFrame()
	if got := d.served()[0].Conn; got.Listener != "INTERNAL" || got.Principal != "" {
		t.Fatalf("conn %+v", got)
	}
	ex, err := net.Dial("tcp", s.ListenerAddr("EXTERNAL").String())
	if err != nil {
		t.Fatal(err)
	}
	defer ex.Close()
	c = &rawConn{t: t, nc: ex}
	c.send(reqFrame(kmsg.NewPtrMetadataRequest(), 1, nil))
	c.expectClosed()
}

func TestListenerConfigErrors(t *testing.T) {
	d := &fakeDispatcher{versions: testVersionsWithoutSASL}
	if _, err := newServer(Config{Dispatcher: d, Listeners: []Listener{{Name: "A"}, {Name: "A"}}}); err == nil {
		t.Fatal("duplicate listener names accepted")
	}
	bad := &badVersions{}
	if _, err := newServer(Config{Dispatcher: d, Listeners: []Listener{{Name: "A", Security: bad}}}); err == nil {
		t.Fatal("an edge key kmsg does not know accepted")
	}
}

type badVersions struct{ fakeSecurity }

func (*badVersions) Versions() []APIVersionRange { return []APIVersionRange{{Key: 17, Min: 0, Max: 9}} }

// handshakeSecurity reads a 4-byte "handshake" in Open, within ctx's
// deadline, as a TLS handshake reads the ClientHello.
type handshakeSecurity struct{ fakeSecurity }

func (h *handshakeSecurity) Open(ctx context.Context, nc net.Conn) (net.Conn, Gate, error) {
	if d, ok := ctx.Deadline(); ok {
		nc.SetReadDeadline(d)
		defer nc.SetReadDeadline(time.Time{})
	}
	var hello [4]byte
	if _, err := io.ReadFull(nc, hello[:]); err != nil {
		return nil, nil, err
	}
	return nc, &fakeGate{authed: true}, nil
}

// TestHandshakeTimeoutStartsAtFirstByte: a connection that sends nothing
// is idle, not a failed handshake: it stays open past the handshake
// timeout and counts no authentication failure (the controller's
// liveness watch holds such a connection to every broker's inter-broker
// listener), and a handshake it starts later succeeds. A handshake
// started and not finished within the timeout closes the connection and
// counts. A silent connection still open does not hold up Shutdown.
func TestHandshakeTimeoutStartsAtFirstByte(t *testing.T) {
	const timeout = 200 * time.Millisecond
	var idle net.Conn
	t.Cleanup(func() { // after the server's Shutdown
		if idle != nil {
			idle.Close()
		}
	})
	d := &fakeDispatcher{versions: testVersionsWithoutSASL}
	s := startServer(t, d, func(c *Config) {
		c.Listeners = []Listener{{Name: "SSL", Addr: "127.0.0.1:0", Security: &handshakeSecurity{}}}
		c.HandshakeTimeout = timeout
	})
	var err error
	if idle, err = net.Dial("tcp", s.Addr().String()); err != nil {
		t.Fatal(err)
	}

	silent := dial(t, s)
	silent.nc.SetReadDeadline(time.Now().Add(5 * timeout))
	var one [1]byte
	if n, err := silent.nc.Read(one[:]); n != 0 || !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("a connection that sent nothing for 5x the handshake timeout: read %d bytes, %v; want it still open", n, err)
	}
	silent.send([]byte("helo"))
	silent.send(reqFrame(kmsg.NewPtrMetadataRequest(), 7, nil))
	if b := silent.readFrame(); correlationOf(b) != 7 {
		t.Fatalf("correlation id %d after a late handshake", correlationOf(b))
	}

	gone := dial(t, s)
	gone.nc.Close()
	eventually(t, 5*time.Second, "the silent connection that closed is gone", func() bool { return s.Stats().ConnectionsClosed >= 1 })

	partial := dial(t, s)
	partial.send([]byte("h"))
	partial.expectClosed()
	eventually(t, 5*time.Second, "the unfinished handshake counted", func() bool { return s.Stats().AuthFailures == 1 })
	if st := s.Stats(); st.AuthFailures != 1 {
		t.Fatalf("AuthFailures = %d, want only the unfinished handshake", st.AuthFailures)
	}
}
