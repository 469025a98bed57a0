package auth

import (
	"fmt"
	"strings"
)

// JAASModule is one login module entry of a JAAS configuration, as Kafka's
// sasl.jaas.config holds: "<class> <flag> key="value" ...;".
type JAASModule struct {
	Class   string
	Flag    string // required, requisite, sufficient or optional
	Options map[string]string
}

// maxJAASBytes bounds a JAAS value; a config with thousands of users is
// a few hundred kilobytes.
const maxJAASBytes = 4 << 20

// ParseJAAS reads a JAAS configuration the way Kafka's JaasConfig does
// (a java.io.StreamTokenizer): words of letters, digits and "._-$",
// values quoted with " or ' (with Java's \n \t \\ \" escapes), // and
// /* */ comments, each module ending with ';'.
func ParseJAAS(s string) ([]JAASModule, error) {
	if len(s) > maxJAASBytes {
		return nil, fmt.Errorf("JAAS config larger than %d bytes", maxJAASBytes)
	}
	t := &jaasTokenizer{s: s}
	var mods []JAASModule
	for {
		tok, err := t.next()
		if err != nil {
			return nil, err
		}
		if tok.kind == tokEOF {
			return mods, nil
		}
		if tok.kind != tokWord {
			return nil, fmt.Errorf("Login module not specified in JAAS config")
		}
		m := JAASModule{Class: tok.text, Options: map[string]string{}}
		flag, err := t.next()
		if err != nil {
			return nil, err
		}
		if flag.kind != tokWord {
			return nil, fmt.Errorf("Login module control flag not specified in JAAS config")
		}
		switch strings.ToUpper(flag.text) {
		case "REQUIRED", "REQUISITE", "SUFFICIENT", "OPTIONAL":
			m.Flag = strings.ToLower(flag.text)
		default:
			return nil, fmt.Errorf("Invalid login module control flag '%s' in JAAS config", flag.text)
		}
		for {
			key, err := t.next()
			if err != nil {
				return nil, err
			}
			if key.kind == tokSemi {
				break
			}
			if key.kind != tokWord {
				return nil, fmt.Errorf("JAAS config entry not terminated by semi-colon")
			}
			eq, err := t.next()
			if err != nil {
				return nil, err
			}
			if eq.kind != tokEquals {
				return nil, fmt.Errorf("Value not specified for key '%s' in JAAS config", key.text)
			}
			val, err := t.next()
			if err != nil {
				return nil, err
			}
			if val.kind != tokWord && val.kind != tokQuoted {
				return nil, fmt.Errorf("Value not specified for key '%s' in JAAS config", key.text)
			}
			m.Options[key.text] = val.text
		}
		mods = append(mods, m)
	}
}

// ParseJAASOne reads a sasl.jaas.config value, which must hold exactly one
// login module.
func ParseJAASOne(s string) (JAASModule, error) {
	mods, err := ParseJAAS(s)
	if err != nil {
		return JAASModule{}, err
	}
	if len(mods) != 1 {
		return JAASModule{}, fmt.Errorf("JAAS config property contains %d login modules, should be 1 module", len(mods))
	}
	return mods[0], nil
}

type tokKind uint8

const (
	tokEOF tokKind = iota
	tokWord
	tokQuoted
	tokEquals
	tokSemi
	tokOther
)

type jaasToken struct {
	kind tokKind
	text string
}

type jaasTokenizer struct {
	s string
	i int
}

func isJAASWord(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
		c == '.' || c == '_' || c == '-' || c == '$' || c >= 0x80
}

func (t *jaasTokenizer) next() (jaasToken, error) {
	for t.i < len(t.s) {
		c := t.s[t.i]
		switch {
		case c <= ' ':
			t.i++
		case strings.HasPrefix(t.s[t.i:], "//"):
			end := strings.IndexAny(t.s[t.i:], "\r\n")
			if end < 0 {
				t.i = len(t.s)
			} else {
				t.i += end
			}
		case strings.HasPrefix(t.s[t.i:], "/*"):
			end := strings.Index(t.s[t.i+2:], "*/")
			if end < 0 {
				t.i = len(t.s)
			} else {
				t.i += 2 + end + 2
			}
		case c == '"' || c == '\'':
			return t.quoted(c)
		case c == '=':
			t.i++
			return jaasToken{kind: tokEquals, text: "="}, nil
		case c == ';':
			t.i++
			return jaasToken{kind: tokSemi, text: ";"}, nil
		case isJAASWord(c):
			start := t.i
			for t.i < len(t.s) && isJAASWord(t.s[t.i]) {
				t.i++
			}
			return jaasToken{kind: tokWord, text: t.s[start:t.i]}, nil
		default:
			t.i++
			return jaasToken{kind: tokOther, text: string(c)}, nil
		}
	}
	return jaasToken{kind: tokEOF}, nil
}

// quoted reads a quoted string as StreamTokenizer does: the usual
// backslash escapes, and a string cut by the end of a line or of input
// ends there.
func (t *jaasTokenizer) quoted(q byte) (jaasToken, error) {
	t.i++
	var b strings.Builder
	for t.i < len(t.s) {
		c := t.s[t.i]
		t.i++
		switch {
		case c == q:
			return jaasToken{kind: tokQuoted, text: b.String()}, nil
		case c == '\n' || c == '\r':
			return jaasToken{kind: tokQuoted, text: b.String()}, nil
		case c == '\\' && t.i < len(t.s):
			e := t.s[t.i]
			t.i++
			switch e {
			case 'n':
				b.WriteByte('\n')
			case 't':
				b.WriteByte('\t')
			case 'r':
				b.WriteByte('\r')
			case 'b':
				b.WriteByte('\b')
			case 'f':
				b.WriteByte('\f')
			case 'a':
				b.WriteByte(7)
			case 'v':
				b.WriteByte('\v')
			default:
				b.WriteByte(e)
			}
		default:
			b.WriteByte(c)
		}
	}
	return jaasToken{kind: tokQuoted, text: b.String()}, nil
}
