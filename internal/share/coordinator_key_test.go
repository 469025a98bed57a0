package share

import (
	"encoding/base64"
	"strconv"
	"testing"
)

func TestParseCoordinatorKey(t *testing.T) {
	id := [16]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
	tid := base64.RawURLEncoding.EncodeToString(id[:])
	for _, tc := range []struct {
		key  string
		want StateKey
		ok   bool
	}{
		{"g:" + tid + ":3", StateKey{Group: "g", TopicID: id, Partition: 3}, true},
		{"a:b:" + tid + ":0", StateKey{Group: "a:b", TopicID: id, Partition: 0}, true},
		{":" + tid + ":7", StateKey{Group: "", TopicID: id, Partition: 7}, true},
		{"g:" + tid, StateKey{}, false},
		{"g", StateKey{}, false},
		{"g:" + tid + ":-1", StateKey{}, false},
		{"g:" + tid + ":x", StateKey{}, false},
		{"g:" + tid + ":99999999999", StateKey{}, false},
		{"g:notanid:1", StateKey{}, false},
		{"g:" + tid[:20] + ":1", StateKey{}, false},
	} {
		got, err := ParseCoordinatorKey(tc.key)
		if (err == nil) != tc.ok || (tc.ok && got != tc.want) {
			t.Errorf("ParseCoordinatorKey(%q) = %+v, %v; want %+v, ok %v", tc.key, got, err, tc.want, tc.ok)
		}
	}
}

// FuzzParseCoordinatorKey: any key either fails or reads back to itself
// (group, printed topic id, partition).
func FuzzParseCoordinatorKey(f *testing.F) {
	f.Add("g:AQIDBAUGBwgJCgsMDQ4PEA:3")
	f.Add("a:b::1")
	f.Add(":::")
	f.Fuzz(func(t *testing.T, key string) {
		k, err := ParseCoordinatorKey(key)
		if err != nil {
			return
		}
		again := k.Group + ":" + base64.RawURLEncoding.EncodeToString(k.TopicID[:]) + ":" + strconv.Itoa(int(k.Partition))
		k2, err := ParseCoordinatorKey(again)
		if err != nil || k2 != k {
			t.Fatalf("%q read as %+v, which prints as %q and reads as %+v, %v", key, k, again, k2, err)
		}
	})
}
