package wiretag

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// The tag survives encoding and decoding a ShareFetch; other tags and
// other values of it do not count.
func TestShareFetchAllLeaders(t *testing.T) {
	cases := []struct {
		name string
		set  func(*kmsg.Tags)
		want bool
	}{
		{"set", SetShareFetchAllLeaders, true},
		{"absent", func(*kmsg.Tags) {}, false},
		{"another value", func(tg *kmsg.Tags) { tg.Set(ShareFetchAllLeaders, []byte{2}) }, false},
		{"empty value", func(tg *kmsg.Tags) { tg.Set(ShareFetchAllLeaders, nil) }, false},
		{"another tag", func(tg *kmsg.Tags) { tg.Set(ShareFetchAllLeaders+1, []byte{1}) }, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req := kmsg.NewPtrShareFetchRequest()
			req.Version = 2
			tc.set(&req.UnknownTags)
			var back kmsg.ShareFetchRequest
			back.Version = 2
			if err := back.ReadFrom(req.AppendTo(nil)); err != nil {
				t.Fatal(err)
			}
			if got := HasShareFetchAllLeaders(&back.UnknownTags); got != tc.want {
				t.Fatalf("after a round trip: %v, want %v", got, tc.want)
			}
		})
	}
}
