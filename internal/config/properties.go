package config

import (
	"fmt"
	"slices"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// Property is one key=value of a properties file.
type Property struct {
	Key   string
	Value string
	// Line is the 1-based line the entry starts on; 0 for entries set by
	// the program (command-line flags).
	Line int
}

// Properties is a parsed properties file: entries in file order, where a
// later entry for the same key replaces an earlier one, as in Java.
type Properties struct {
	File    string // for messages; "" when not read from a file
	Entries []Property
}

// maxPropertiesBytes bounds the input; a server.properties file is a few
// kilobytes.
const maxPropertiesBytes = 16 << 20

// ParseProperties reads Java's properties format (java.util.Properties
// load) as Kafka reads server.properties:
//
//   - lines end at \n, \r or \r\n; blank lines are skipped;
//   - a line whose first non-blank character is # or ! is a comment;
//   - a line ending in an odd number of backslashes continues on the next
//     line, whose leading blanks are dropped (comments do not continue);
//   - the key ends at the first unescaped '=', ':' or blank; blanks around
//     the separator are skipped and the rest of the line is the value,
//     trailing blanks included;
//   - \t \n \r \f and \uXXXX are escapes, any other escaped character
//     stands for itself.
//
// Blanks are space, tab and form feed. The text is read as UTF-8, where
// Java reads ISO-8859-1; \u escapes work in both. A malformed \u escape or
// invalid UTF-8 is an error naming the file and line.
func ParseProperties(file string, data []byte) (*Properties, error) {
	p := &Properties{File: file}
	if len(data) > maxPropertiesBytes {
		return nil, fmt.Errorf("%s: larger than %d bytes", p.where(0), maxPropertiesBytes)
	}
	lines := splitLines(string(data))
	for i := 0; i < len(lines); i++ {
		start := i
		line := strings.TrimLeft(lines[i], " \t\f")
		if line == "" || line[0] == '#' || line[0] == '!' {
			continue
		}
		// Join continuation lines.
		var logical strings.Builder
		for {
			cont := trailingBackslashes(line)%2 == 1
			if cont {
				line = line[:len(line)-1]
			}
			logical.WriteString(line)
			if !cont || i+1 >= len(lines) {
				break
			}
			i++
			line = strings.TrimLeft(lines[i], " \t\f")
		}
		if !utf8.ValidString(logical.String()) {
			return nil, fmt.Errorf("%s: invalid UTF-8", p.where(start+1))
		}
		key, value, err := splitEntry(logical.String())
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p.where(start+1), err)
		}
		p.Entries = append(p.Entries, Property{Key: key, Value: value, Line: start + 1})
	}
	return p, nil
}

func (p *Properties) where(line int) string {
	name := p.File
	if name == "" {
		name = "properties"
	}
	if line == 0 {
		return name
	}
	return fmt.Sprintf("%s:%d", name, line)
}

// Set adds an entry that overrides the file (a command-line flag).
func (p *Properties) Set(key, value string) {
	p.Entries = append(p.Entries, Property{Key: key, Value: value})
}

// SetDefault adds an entry only when the key is absent.
func (p *Properties) SetDefault(key, value string) {
	if _, ok := p.Get(key); !ok {
		p.Set(key, value)
	}
}

// Delete removes every entry of a key.
func (p *Properties) Delete(key string) {
	p.Entries = slices.DeleteFunc(p.Entries, func(e Property) bool { return e.Key == key })
}

// Get returns a key's value (the last entry for it).
func (p *Properties) Get(key string) (string, bool) {
	for i := len(p.Entries) - 1; i >= 0; i-- {
		if p.Entries[i].Key == key {
			return p.Entries[i].Value, true
		}
	}
	return "", false
}

// Map returns every key with its last value.
func (p *Properties) Map() map[string]string {
	m := make(map[string]string, len(p.Entries))
	for _, e := range p.Entries {
		m[e.Key] = e.Value
	}
	return m
}

// lineOf is the line of a key's last entry (0 when set by the program).
func (p *Properties) lineOf(key string) int {
	for i := len(p.Entries) - 1; i >= 0; i-- {
		if p.Entries[i].Key == key {
			return p.Entries[i].Line
		}
	}
	return 0
}

func splitLines(s string) []string {
	var out []string
	for len(s) > 0 {
		i := strings.IndexAny(s, "\r\n")
		if i < 0 {
			out = append(out, s)
			break
		}
		out = append(out, s[:i])
		if s[i] == '\r' && i+1 < len(s) && s[i+1] == '\n' {
			i++
		}
		s = s[i+1:]
	}
	return out
}

func trailingBackslashes(s string) int {
	n := 0
	for n < len(s) && s[len(s)-1-n] == '\\' {
		n++
	}
	return n
}

// splitEntry splits a logical line (no leading blanks) into its unescaped
// key and value.
func splitEntry(line string) (string, string, error) {
	end := len(line) // first byte after the key
	sep := len(line) // first byte of separator-and-blanks
	for i := 0; i < len(line); i++ {
		c := line[i]
		if c == '\\' {
			i++ // the escaped byte belongs to the key
			continue
		}
		if c == '=' || c == ':' || c == ' ' || c == '\t' || c == '\f' {
			end, sep = i, i
			break
		}
	}
	rest := strings.TrimLeft(line[sep:], " \t\f")
	if rest != "" && (rest[0] == '=' || rest[0] == ':') {
		rest = strings.TrimLeft(rest[1:], " \t\f")
	}
	key, err := unescape(line[:end])
	if err != nil {
		return "", "", err
	}
	value, err := unescape(rest)
	if err != nil {
		return "", "", fmt.Errorf("%s: %w", key, err)
	}
	return key, value, nil
}

// unescape resolves backslash escapes.
func unescape(s string) (string, error) {
	if !strings.Contains(s, `\`) {
		return s, nil
	}
	var b strings.Builder
	var pending rune = -1 // a high surrogate waiting for its low half
	flush := func() {
		if pending >= 0 {
			b.WriteRune(utf8.RuneError)
			pending = -1
		}
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' || i+1 >= len(s) {
			flush()
			if c != '\\' { // a lone trailing backslash is dropped, as in Java
				b.WriteByte(c)
			}
			continue
		}
		i++
		switch c = s[i]; c {
		case 'u':
			if len(s)-(i+1) < 4 {
				return "", fmt.Errorf(`malformed \uxxxx encoding`)
			}
			var r rune
			for _, h := range []byte(s[i+1 : i+5]) {
				d, ok := hexDigit(h)
				if !ok {
					return "", fmt.Errorf(`malformed \uxxxx encoding`)
				}
				r = r<<4 | d
			}
			i += 4
			switch {
			case utf16.IsSurrogate(r) && r < 0xDC00:
				flush()
				pending = r
			case utf16.IsSurrogate(r):
				if pending >= 0 {
					b.WriteRune(utf16.DecodeRune(pending, r))
					pending = -1
				} else {
					b.WriteRune(utf8.RuneError)
				}
			default:
				flush()
				b.WriteRune(r)
			}
			continue
		case 't':
			c = '\t'
		case 'n':
			c = '\n'
		case 'r':
			c = '\r'
		case 'f':
			c = '\f'
		}
		flush()
		b.WriteByte(c)
	}
	flush()
	return b.String(), nil
}

func hexDigit(h byte) (rune, bool) {
	switch {
	case h >= '0' && h <= '9':
		return rune(h - '0'), true
	case h >= 'a' && h <= 'f':
		return rune(h-'a') + 10, true
	case h >= 'A' && h <= 'F':
		return rune(h-'A') + 10, true
	}
	return 0, false
}
