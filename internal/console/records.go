package console

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"unicode"
	"unicode/utf8"
)

// Shown is a key, value or header value as the page prints it.
type Shown struct {
	Null   bool
	Format string // text, json or hex
	Text   string
	Size   int
}

// maxShown bounds the bytes of one value printed.
const maxShown = 4096

// show renders b as format: text (bytes as UTF-8, invalid ones
// replaced), json (indented; text when b is not JSON), hex, or auto
// (json if b parses, text if it is printable UTF-8, hex otherwise).
func show(b []byte, null bool, format string) Shown {
	if null {
		return Shown{Null: true, Format: format, Text: "null"}
	}
	s := Shown{Size: len(b)}
	cut := b
	if len(cut) > maxShown {
		cut = cut[:maxShown]
	}
	if format == "auto" {
		switch {
		case len(b) > 0 && len(b) <= maxShown && json.Valid(b):
			format = "json"
		case printable(cut):
			format = "text"
		default:
			format = "hex"
		}
	}
	switch format {
	case "json":
		var out bytes.Buffer
		if len(b) <= maxShown && json.Indent(&out, b, "", "  ") == nil {
			// JSON strings may hold bytes that are not UTF-8.
			s.Format, s.Text = "json", string(bytes.ToValidUTF8(out.Bytes(), []byte("\uFFFD")))
			return s
		}
		s.Format, s.Text = "text", string(bytes.ToValidUTF8(cut, []byte("\uFFFD")))
	case "hex":
		s.Format, s.Text = "hex", hex.Dump(cut)
	default:
		s.Format, s.Text = "text", string(bytes.ToValidUTF8(cut, []byte("\uFFFD")))
	}
	if len(b) > maxShown {
		s.Text += "… (" + humanBytes(float64(len(b))) + " in all)"
	}
	return s
}

// printable says whether b is UTF-8 text without control characters
// (tabs and newlines allowed), with a partial rune at the end tolerated
// (b may be cut).
func printable(b []byte) bool {
	for len(b) > 0 {
		r, n := utf8.DecodeRune(b)
		if r == utf8.RuneError && n <= 1 {
			return len(b) < utf8.UTFMax && !utf8.FullRune(b)
		}
		if unicode.IsControl(r) && r != '\n' && r != '\t' && r != '\r' {
			return false
		}
		b = b[n:]
	}
	return true
}
