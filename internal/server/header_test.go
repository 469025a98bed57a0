package server

import (
	"bytes"
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestRequestHeaderVersion(t *testing.T) {
	for _, tc := range []struct {
		key, version int16
		want         int
	}{
		{18, 0, 1}, {18, 2, 1}, {18, 3, 2}, {18, 4, 2},
		{18, 120, 2}, // a future ApiVersions is flexible too
		{3, 8, 1}, {3, 9, 2}, {3, 13, 2},
		{0, 8, 1}, {0, 9, 2},
		{1, 11, 1}, {1, 12, 2},
		{7, 0, 0}, {7, 1, 1}, {7, 3, 2},
		{78, 1, 2},
	} {
		req := kmsg.RequestForKey(tc.key)
		req.SetVersion(tc.version)
		if got := requestHeaderVersion(req); got != tc.want {
			t.Errorf("key %d v%d: header v%d, want v%d", tc.key, tc.version, got, tc.want)
		}
	}
}

func TestFlexibleResponseHeader(t *testing.T) {
	for _, tc := range []struct {
		key, version int16
		want         bool
	}{
		{18, 0, false}, {18, 3, false}, {18, 4, false}, // ApiVersions: always header v0
		{3, 8, false}, {3, 9, true},
		{1, 12, true}, {0, 8, false}, {0, 9, true},
	} {
		req := kmsg.RequestForKey(tc.key)
		req.SetVersion(tc.version)
		if got := flexibleResponseHeader(req); got != tc.want {
			t.Errorf("key %d v%d: flexible %v, want %v", tc.key, tc.version, got, tc.want)
		}
	}
}

func TestReadHeaderRest(t *testing.T) {
	body := []byte{0xde, 0xad}
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	for _, tc := range []struct {
		name     string
		in       []byte
		hv       int
		clientID string
		body     []byte
		err      error
	}{
		{"v0 has no client id", cat([]byte{0, 3}, body), 0, "", cat([]byte{0, 3}, body), nil},
		{"v1 client id", cat([]byte{0, 3}, []byte("abc"), body), 1, "abc", body, nil},
		{"v1 null client id", cat([]byte{0xff, 0xff}, body), 1, "", body, nil},
		{"v1 empty client id", cat([]byte{0, 0}, body), 1, "", body, nil},
		{"v1 length -2", cat([]byte{0xff, 0xfe}, body), 1, "", nil, errShortHeader},
		{"v1 client id past the end", cat([]byte{0, 9}, []byte("abc")), 1, "", nil, errShortHeader},
		{"v1 no length", []byte{0}, 1, "", nil, errShortHeader},
		{"v2 no tags", cat([]byte{0, 1}, []byte("x"), []byte{0}, body), 2, "x", body, nil},
		{"v2 client id is not compact", cat([]byte{0, 2}, []byte("xy"), []byte{0}), 2, "xy", []byte{}, nil},
		{"v2 two tags skipped", cat([]byte{0xff, 0xff}, []byte{2, 0, 1, 7, 5, 2, 8, 9}, body), 2, "", body, nil},
		{"v2 missing tags", []byte{0, 0}, 2, "", nil, errBadTags},
		{"v2 tag past the end", cat([]byte{0, 0}, []byte{1, 0, 5, 1}), 2, "", nil, errBadTags},
		{"v2 huge tag count stops at once", cat([]byte{0, 0}, []byte{0xff, 0xff, 0xff, 0xff, 0x0f}), 2, "", nil, errBadTags},
		{"v2 tag count overflows 32 bits", cat([]byte{0, 0}, []byte{0xff, 0xff, 0xff, 0xff, 0x7f}), 2, "", nil, errBadTags},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clientID, rest, err := readHeaderRest(tc.in, tc.hv)
			if !errors.Is(err, tc.err) {
				t.Fatalf("err %v, want %v", err, tc.err)
			}
			if err != nil {
				return
			}
			if clientID != tc.clientID || !bytes.Equal(rest, tc.body) {
				t.Fatalf("got %q %x, want %q %x", clientID, rest, tc.clientID, tc.body)
			}
		})
	}
}

func TestAppendResponseHeader(t *testing.T) {
	if got := appendResponseHeader(nil, 0x01020304, false); !bytes.Equal(got, []byte{1, 2, 3, 4}) {
		t.Errorf("v0: %x", got)
	}
	if got := appendResponseHeader(nil, -1, true); !bytes.Equal(got, []byte{0xff, 0xff, 0xff, 0xff, 0}) {
		t.Errorf("v1: %x", got)
	}
}

func TestCheckVersions(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   []APIVersionRange
		ok   bool
	}{
		{"fine", testVersions, true},
		{"unknown key", []APIVersionRange{{Key: 999, Min: 0, Max: 0}}, false},
		{"beyond kmsg", []APIVersionRange{{Key: 18, Min: 0, Max: 99}}, false},
		{"min above max", []APIVersionRange{{Key: 3, Min: 5, Max: 4}}, false},
		{"negative min", []APIVersionRange{{Key: 3, Min: -1, Max: 4}}, false},
		{"duplicate", []APIVersionRange{{Key: 3, Min: 0, Max: 4}, {Key: 3, Min: 0, Max: 4}}, false},
	} {
		_, err := checkVersions(tc.in)
		if (err == nil) != tc.ok {
			t.Errorf("%s: err %v", tc.name, err)
		}
	}
}
