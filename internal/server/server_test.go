package server

import (
	"bytes"
	"context"
	"encoding/binary"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// The KIP-511 fallback, checked byte by byte: an ApiVersions request above
// our max, in the flexible header a client's newest version uses, gets a
// v0 response (header v0) with UNSUPPORTED_VERSION and ApiVersions' own
// range only, as Kafka's ApiVersionsRequest.getErrorResponse builds it.
func TestApiVersionsFallbackBytes(t *testing.T) {
	d := &fakeDispatcher{versions: []APIVersionRange{{Key: 18, Min: 0, Max: 3}, {Key: 3, Min: 0, Max: 13}}}
	s := startServer(t, d, nil)
	c := dial(t, s)

	for _, version := range []int16{4, 5} {
		req := kmsg.NewPtrApiVersionsRequest()
		req.Version = version
		req.ClientSoftwareName, req.ClientSoftwareVersion = "test", "1"
		c.send(reqFrame(req, 0x0a0b0c0d, strp("client")))
		got := c.readFrame()
		want := []byte{
			0x0a, 0x0b, 0x0c, 0x0d, // correlation id, and no header tags
			0x00, 0x23, // error code 35
			0x00, 0x00, 0x00, 0x01, // ApiKeys: one entry (int32 length, v0 is not compact)
			0x00, 0x12, // ApiKey 18
			0x00, 0x00, // MinVersion 0
			0x00, 0x03, // MaxVersion 3
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("v%d fallback:\n got %x\nwant %x", version, got, want)
		}
	}
	// A version kmsg has never heard of parses the same way.
	raw := []byte{0, 0, 0, 0, 0, 18, 0x7f, 0, 0, 0, 0, 9, 0xff, 0xff, 0, 0xaa, 0xbb}
	binary.BigEndian.PutUint32(raw, uint32(len(raw)-4))
	c.send(raw)
	if got := c.readFrame(); correlationOf(got) != 9 || !bytes.Equal(got[4:6], []byte{0, 35}) {
		t.Fatalf("v127 fallback: %x", got)
	}
	// The connection stays usable and the client retries in range.
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version = 3
	c.send(reqFrame(req, 10, nil))
	if got := c.readFrame(); correlationOf(got) != 10 {
		t.Fatalf("retry: %x", got)
	}
	if n := len(d.served()); n != 1 {
		t.Fatalf("dispatcher saw %d requests, want only the in-range one", n)
	}
	if got := s.Stats().Requests[18]; got != 4 {
		t.Fatalf("Requests[18] = %d, want 4", got)
	}
}

// Round trips for each header shape: the request header version follows
// the request's flexibility, the response header carries a tag byte only
// for flexible non-ApiVersions responses.
func TestHeaderRoundTrips(t *testing.T) {
	d := &fakeDispatcher{versions: testVersions, handle: func(_ context.Context, req *Request) *Reply {
		resp := req.Body.ResponseKind()
		if m, ok := resp.(*kmsg.MetadataResponse); ok {
			m.ClusterID = strp(req.ClientID)
		}
		return Ready(resp)
	}}
	s := startServer(t, d, nil)
	c := dial(t, s)

	for i, tc := range []struct {
		req      kmsg.Request
		clientID *string
		tagByte  bool
	}{
		{&kmsg.MetadataRequest{Version: 0}, strp("old"), false},
		{&kmsg.MetadataRequest{Version: 8}, nil, false},
		{&kmsg.MetadataRequest{Version: 9}, strp("flex"), true},
		{&kmsg.MetadataRequest{Version: 13}, strp(""), true},
		{&kmsg.ApiVersionsRequest{Version: 0}, strp("a"), false},
		{&kmsg.ApiVersionsRequest{Version: 3, ClientSoftwareName: "x", ClientSoftwareVersion: "1"}, strp("a"), false},
		{&kmsg.ApiVersionsRequest{Version: 4, ClientSoftwareName: "x", ClientSoftwareVersion: "1"}, strp("a"), false},
	} {
		corr := int32(100 + i)
		c.send(reqFrame(tc.req, corr, tc.clientID))
		got := c.readFrame()
		if correlationOf(got) != corr {
			t.Fatalf("case %d: correlation %d", i, correlationOf(got))
		}
		body := got[4:]
		if tc.tagByte {
			if body[0] != 0 {
				t.Fatalf("case %d: header tag section %x", i, body[0])
			}
			body = body[1:]
		}
		resp := tc.req.ResponseKind()
		if err := resp.ReadFrom(body); err != nil {
			t.Fatalf("case %d: response does not parse: %v", i, err)
		}
		if again := resp.AppendTo(nil); !bytes.Equal(again, body) {
			t.Fatalf("case %d: response body %x does not round-trip (%x)", i, body, again)
		}
		if m, ok := resp.(*kmsg.MetadataResponse); ok && tc.req.GetVersion() >= 2 {
			want := ""
			if tc.clientID != nil {
				want = *tc.clientID
			}
			if m.ClusterID == nil || *m.ClusterID != want {
				t.Fatalf("case %d: client id seen by dispatcher %v, want %q", i, m.ClusterID, want)
			}
		}
		seen := d.served()[i]
		if seen.Key != tc.req.Key() || seen.Version != tc.req.GetVersion() || seen.CorrelationID != corr ||
			seen.Body.GetVersion() != tc.req.GetVersion() || seen.Conn.ID == 0 || seen.Conn.Remote == nil {
			t.Fatalf("case %d: request %+v", i, seen)
		}
	}
}

// A flexible request header may carry tagged fields; they are skipped.
func TestRequestHeaderTagsSkipped(t *testing.T) {
	d := &fakeDispatcher{versions: testVersions}
	s := startServer(t, d, nil)
	c := dial(t, s)
	body := (&kmsg.MetadataRequest{Version: 12}).AppendTo(nil)
	b := []byte{0, 0, 0, 0, 0, 3, 0, 12, 0, 0, 0, 42, 0, 2, 'i', 'd', 2, 0, 1, 0xee, 3, 2, 0xab, 0xcd}
	b = append(b, body...)
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	c.send(b)
	if got := c.readFrame(); correlationOf(got) != 42 || got[4] != 0 {
		t.Fatalf("response %x", got)
	}
	if seen := d.served(); len(seen) != 1 || seen[0].ClientID != "id" {
		t.Fatalf("served %+v", seen)
	}
}

// Everything that must close the connection without reaching the
// dispatcher.
func TestProtocolViolationsClose(t *testing.T) {
	validMeta := reqFrame(&kmsg.MetadataRequest{Version: 9}, 1, nil)
	withSize := func(size uint32, rest []byte) []byte {
		return append(binary.BigEndian.AppendUint32(nil, size), rest...)
	}
	withHeader := func(key, version int16, rest ...byte) []byte {
		b := binary.BigEndian.AppendUint16(nil, uint16(key))
		b = binary.BigEndian.AppendUint16(b, uint16(version))
		b = append(b, 0, 0, 0, 7)
		b = append(b, rest...)
		return withSize(uint32(len(b)), b)
	}
	for _, tc := range []struct {
		name string
		in   []byte
	}{
		{"negative size", withSize(0xffffffff, nil)},
		{"zero size", withSize(0, nil)},
		{"size below the smallest header", withSize(minFrameSize-1, make([]byte, minFrameSize-1))},
		{"size above the cap", withSize(4097, make([]byte, 100))},
		{"huge lying size", withSize(0x7fffffff, []byte{1, 2, 3})},
		{"unknown key", withHeader(999, 0, 0xff, 0xff)},
		{"known to kmsg, not served", withHeader(4, 0, 0xff, 0xff)},
		{"negative key", withHeader(-1, 0, 0xff, 0xff)},
		{"unsupported version", withHeader(3, 14, 0xff, 0xff, 0)},
		{"version below min", withHeader(0, 2, 0xff, 0xff)},
		{"negative version", withHeader(1, -1, 0xff, 0xff)},
		{"client id past the end", withHeader(3, 1, 0, 50, 'a')},
		{"bad header tags", withHeader(3, 9, 0xff, 0xff, 3, 1)},
		{"truncated body", withHeader(3, 1, 0xff, 0xff, 0, 0, 0, 5)},
		{"garbage body", withHeader(19, 2, 0xff, 0xff, 0x7f, 0xff, 0xff, 0xff)},
		{"ApiVersions fallback with a bad header", withHeader(18, 9, 0xff, 0xff, 0x85)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := &fakeDispatcher{versions: testVersions}
			s := startServer(t, d, func(c *Config) { c.MaxRequestSize = 4096 })
			c := dial(t, s)
			// A valid request first: its reply is written before the close.
			c.send(append(append([]byte{}, validMeta...), tc.in...))
			if got := c.readFrame(); correlationOf(got) != 1 {
				t.Fatalf("first reply %x", got)
			}
			c.expectClosed()
			if n := len(d.served()); n != 1 {
				t.Fatalf("dispatcher saw %d requests", n)
			}
			eventually(t, 5*time.Second, "connection cleanup", func() bool {
				st := s.Stats()
				return st.ConnectionsClosed == 1 && st.ProtocolErrors == 1
			})
		})
	}
}

// A stream that ends mid-frame just ends the connection.
func TestTruncatedFrameThenDisconnect(t *testing.T) {
	d := &fakeDispatcher{versions: testVersions}
	s := startServer(t, d, nil)
	c := dial(t, s)
	f := reqFrame(&kmsg.MetadataRequest{Version: 4}, 1, nil)
	c.send(f[:len(f)-3])
	c.nc.Close()
	eventually(t, 5*time.Second, "connection cleanup", func() bool { return s.Stats().ConnectionsClosed == 1 })
	if n := len(d.served()); n != 0 {
		t.Fatalf("dispatcher saw %d requests", n)
	}
	if st := s.Stats(); st.ProtocolErrors != 0 {
		t.Fatalf("a disconnect is not a protocol error: %+v", st)
	}
}

func TestNoResponseAndCloseConnection(t *testing.T) {
	d := &fakeDispatcher{versions: testVersions, handle: func(_ context.Context, req *Request) *Reply {
		switch req.CorrelationID {
		case 1:
			return NoResponse()
		case 3:
			return CloseConnection()
		}
		return Ready(req.Body.ResponseKind())
	}}
	s := startServer(t, d, nil)
	c := dial(t, s)
	var in []byte
	for corr := int32(1); corr <= 4; corr++ {
		in = append(in, reqFrame(&kmsg.MetadataRequest{Version: 9}, corr, nil)...)
	}
	c.send(in)
	if got := c.readFrame(); correlationOf(got) != 2 {
		t.Fatalf("want only the reply to 2, got correlation %d", correlationOf(got))
	}
	c.expectClosed()
	if n := len(d.served()); n != 3 {
		t.Fatalf("request 4 came after CloseConnection and must not be served; served %d", n)
	}
}

// A reply of the wrong kind is a dispatcher bug; the connection closes
// rather than sending a response the client cannot read.
func TestWrongResponseKeyCloses(t *testing.T) {
	d := &fakeDispatcher{versions: testVersions, handle: func(context.Context, *Request) *Reply {
		return Ready(kmsg.NewPtrFetchResponse())
	}}
	s := startServer(t, d, nil)
	c := dial(t, s)
	c.send(reqFrame(&kmsg.MetadataRequest{Version: 9}, 1, nil))
	c.expectClosed()
}

func TestServeCounters(t *testing.T) {
	d := &fakeDispatcher{versions: testVersions}
	s := startServer(t, d, nil)
	c := dial(t, s)
	f := reqFrame(&kmsg.MetadataRequest{Version: 9}, 1, nil)
	c.send(f)
	got := c.readFrame()
	c.nc.Close()
	eventually(t, 5*time.Second, "close", func() bool { return s.Stats().ConnectionsClosed == 1 })
	st := s.Stats()
	if st.BytesIn != uint64(len(f)) || st.BytesOut != uint64(4+len(got)) || st.Requests[3] != 1 || st.ConnectionsOpened != 1 {
		t.Fatalf("stats %+v, frame in %d, out %d", st, len(f), 4+len(got))
	}
}
