package console

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestShow(t *testing.T) {
	for _, tc := range []struct {
		in           []byte
		null         bool
		format       string
		wantFormat   string
		wantContains string
	}{
		{nil, true, "auto", "auto", "null"},
		{[]byte(`{"a":[1,2]}`), false, "auto", "json", "\"a\": ["},
		{[]byte("hello world"), false, "auto", "text", "hello world"},
		{[]byte{0, 1, 2, 0xff}, false, "auto", "hex", "00 01 02 ff"},
		{[]byte("not json"), false, "json", "text", "not json"},
		{[]byte("hi"), false, "hex", "hex", "68 69"},
		{[]byte{0xff, 'a'}, false, "text", "text", "\uFFFDa"},
		{[]byte(strings.Repeat("x", maxShown+10)), false, "text", "text", "in all)"},
	} {
		s := show(tc.in, tc.null, tc.format)
		if s.Format != tc.wantFormat || !strings.Contains(s.Text, tc.wantContains) {
			t.Errorf("show(%q, %s) = %s %q, want %s containing %q", tc.in, tc.format, s.Format, s.Text, tc.wantFormat, tc.wantContains)
		}
	}
}

// FuzzShow: any bytes in any format print as valid UTF-8, bounded.
func FuzzShow(f *testing.F) {
	f.Add([]byte(`{"k":"v"}`), "auto")
	f.Add([]byte{0xe2, 0x82}, "text")
	f.Add([]byte{0, 0xff}, "hex")
	f.Fuzz(func(t *testing.T, b []byte, format string) {
		s := show(b, false, format)
		if !utf8.ValidString(s.Text) {
			t.Fatalf("%q as %s printed invalid UTF-8", b, format)
		}
		if len(s.Text) > 6*maxShown+100 {
			t.Fatalf("%d bytes printed for %d", len(s.Text), len(b))
		}
	})
}
