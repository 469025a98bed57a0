package kframe

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// frame is a response frame: size, correlation id, header tags when
// flexible, body.
func frame(id int32, flexibleHeader bool, body []byte) []byte {
	b := binary.BigEndian.AppendUint32(nil, 0)
	b = binary.BigEndian.AppendUint32(b, uint32(id))
	if flexibleHeader {
		b = append(b, 0)
	}
	b = append(b, body...)
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	return b
}

func TestReadAndDecodeResponse(t *testing.T) {
	hb := kmsg.NewPtrBrokerHeartbeatRequest()
	hb.Version = 1
	ok := kmsg.NewPtrBrokerHeartbeatResponse()
	ok.Version, ok.IsCaughtUp = 1, true
	good := frame(7, true, ok.AppendTo(nil))
	withTags := frame(7, false, append([]byte{1, 5, 2, 'x', 'y'}, ok.AppendTo(nil)...))
	for _, tc := range []struct {
		name string
		in   []byte
		max  int32
		want error
	}{
		{"good", good, 1 << 20, nil},
		{"header tags", withTags, 1 << 20, nil},
		{"size below the header", binary.BigEndian.AppendUint32(nil, 3), 1 << 20, ErrSize},
		{"size above the bound", good, int32(len(good) - 5), ErrSize},
		{"truncated", good[:len(good)-2], 1 << 20, io.ErrUnexpectedEOF},
		{"empty", nil, 1 << 20, io.EOF},
		{"bad header tags", frame(7, false, []byte{1, 5, 9}), 1 << 20, ErrTags},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id, rest, err := ReadResponse(bytes.NewReader(tc.in), tc.max)
			var resp kmsg.Response
			if err == nil {
				if id != 7 {
					t.Fatalf("correlation id %d, want 7", id)
				}
				resp, err = DecodeResponse(hb, rest)
			}
			if tc.want == nil {
				if err != nil {
					t.Fatal(err)
				}
				if r := resp.(*kmsg.BrokerHeartbeatResponse); !r.IsCaughtUp || r.Version != 1 {
					t.Fatalf("decoded %+v", r)
				}
				return
			}
			if !errors.Is(err, tc.want) {
				t.Fatalf("err %v, want %v", err, tc.want)
			}
		})
	}
}

// A broker that does not speak the ApiVersions version asked answers in
// v0 with UNSUPPORTED_VERSION; that answer decodes.
func TestDecodeApiVersionsFallback(t *testing.T) {
	v0 := kmsg.NewPtrApiVersionsResponse()
	v0.Version, v0.ErrorCode = 0, 35
	v0.ApiKeys = append(v0.ApiKeys, kmsg.ApiVersionsResponseApiKey{ApiKey: 18, MaxVersion: 2})
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version = 4
	resp, err := DecodeResponse(req, v0.AppendTo(nil))
	if err != nil {
		t.Fatal(err)
	}
	if r := resp.(*kmsg.ApiVersionsResponse); r.ErrorCode != 35 || len(r.ApiKeys) != 1 || r.ApiKeys[0].MaxVersion != 2 {
		t.Fatalf("decoded %+v", r)
	}
}

func TestSkipTags(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   []byte
		rest int // bytes left, -1 for an error
	}{
		{"none", []byte{0, 9}, 1},
		{"one field", []byte{1, 0, 2, 'a', 'b', 9}, 1},
		{"missing count", nil, -1},
		{"field past the end", []byte{1, 0, 5, 1}, -1},
		{"huge count stops at once", []byte{0xff, 0xff, 0xff, 0xff, 0x0f}, -1},
		{"count overflows 32 bits", []byte{0xff, 0xff, 0xff, 0xff, 0x7f}, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rest, err := SkipTags(tc.in)
			if tc.rest < 0 {
				if !errors.Is(err, ErrTags) {
					t.Fatalf("err %v, want ErrTags", err)
				}
				return
			}
			if err != nil || len(rest) != tc.rest {
				t.Fatalf("rest %v, err %v; want %d bytes", rest, err, tc.rest)
			}
		})
	}
}

// FuzzReadResponse: whatever the bytes, reading and decoding a response
// returns a response or an error, never panics, and allocates no more
// than the bound. Bodies are decoded by kmsg at versions without tagged
// fields (kmsg trusts tag counts in bodies; headers are ours).
func FuzzReadResponse(f *testing.F) {
	ok := kmsg.NewPtrCreateTopicsResponse()
	ok.Version = 4
	f.Add(frame(1, false, ok.AppendTo(nil)))
	av := kmsg.NewPtrApiVersionsResponse()
	av.ApiKeys = append(av.ApiKeys, kmsg.ApiVersionsResponseApiKey{ApiKey: 19, MaxVersion: 7})
	f.Add(frame(1, false, av.AppendTo(nil)))
	f.Add(frame(1, false, []byte{0, 0, 0, 1}))
	f.Add([]byte{0, 0, 0, 4, 0, 0, 0, 1})
	f.Fuzz(func(t *testing.T, in []byte) {
		for _, req := range []kmsg.Request{&kmsg.CreateTopicsRequest{Version: 4}, &kmsg.ApiVersionsRequest{Version: 0}} {
			_, rest, err := ReadResponse(bytes.NewReader(in), 1<<16)
			if err != nil {
				continue
			}
			if resp, err := DecodeResponse(req, rest); (resp == nil) == (err == nil) {
				t.Fatalf("response %v and error %v", resp, err)
			}
		}
		if rest, err := SkipTags(in); err == nil && len(rest) > len(in) {
			t.Fatal("SkipTags grew its input")
		}
	})
}
