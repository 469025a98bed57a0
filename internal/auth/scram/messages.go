package scram

import (
	"encoding/base64"
	"errors"
	"strconv"
	"strings"
)

// ErrFormat is a SCRAM message that does not follow the grammar.
var ErrFormat = errors.New("scram: malformed message")

// maxMessage bounds every message: a client-first message is a user name
// and a nonce, a few hundred bytes in practice.
const maxMessage = 8 << 10

// clientFirst is gs2-header client-first-message-bare.
type clientFirst struct {
	authzid    string // "" when absent
	user       string // decoded saslname
	nonce      string
	extensions map[string]string
	bare       string // client-first-message-bare, as sent
	gs2        string // gs2-header, as sent
}

// parseClientFirst reads "n,[a=authzid],n=user,r=nonce[,ext=value...]".
func parseClientFirst(msg string) (clientFirst, error) {
	var m clientFirst
	if len(msg) > maxMessage {
		return m, ErrFormat
	}
	rest, ok := strings.CutPrefix(msg, "n,")
	if !ok {
		return m, ErrFormat // only "n": no channel binding
	}
	az, rest, ok := strings.Cut(rest, ",")
	if !ok {
		return m, ErrFormat
	}
	if az != "" {
		enc, ok := strings.CutPrefix(az, "a=")
		if !ok {
			return m, ErrFormat
		}
		if m.authzid, ok = decodeSaslName(enc); !ok {
			return m, ErrFormat
		}
	}
	m.gs2 = msg[:len(msg)-len(rest)]
	m.bare = rest
	fields := strings.Split(rest, ",")
	if len(fields) < 2 {
		return m, ErrFormat
	}
	enc, ok := strings.CutPrefix(fields[0], "n=")
	if !ok {
		return m, ErrFormat
	}
	if m.user, ok = decodeSaslName(enc); !ok {
		return m, ErrFormat
	}
	if m.nonce, ok = strings.CutPrefix(fields[1], "r="); !ok || !printable(m.nonce) {
		return m, ErrFormat
	}
	if m.extensions, ok = parseExtensions(fields[2:]); !ok {
		return m, ErrFormat
	}
	return m, nil
}

// serverFirst is "r=nonce,s=salt,i=iterations".
type serverFirst struct {
	nonce      string
	salt       []byte
	iterations int
}

func (m serverFirst) String() string {
	return "r=" + m.nonce + ",s=" + base64.StdEncoding.EncodeToString(m.salt) + ",i=" + strconv.Itoa(m.iterations)
}

func parseServerFirst(msg string) (serverFirst, error) {
	var m serverFirst
	if len(msg) > maxMessage {
		return m, ErrFormat
	}
	fields := strings.Split(msg, ",")
	if len(fields) < 3 {
		return m, ErrFormat
	}
	var ok bool
	if m.nonce, ok = strings.CutPrefix(fields[0], "r="); !ok || !printable(m.nonce) {
		return m, ErrFormat
	}
	salt, ok := strings.CutPrefix(fields[1], "s=")
	if !ok {
		return m, ErrFormat
	}
	var err error
	if m.salt, err = base64.StdEncoding.Strict().DecodeString(salt); err != nil || len(m.salt) == 0 {
		return m, ErrFormat
	}
	iter, ok := strings.CutPrefix(fields[2], "i=")
	if !ok || !digits(iter) {
		return m, ErrFormat
	}
	if m.iterations, err = strconv.Atoi(iter); err != nil || m.iterations <= 0 {
		return m, ErrFormat
	}
	if _, ok := parseExtensions(fields[3:]); !ok {
		return m, ErrFormat
	}
	return m, nil
}

// clientFinal is "c=binding,r=nonce[,ext...],p=proof".
type clientFinal struct {
	binding      []byte
	nonce        string
	proof        []byte
	withoutProof string
}

func parseClientFinal(msg string) (clientFinal, error) {
	var m clientFinal
	if len(msg) > maxMessage {
		return m, ErrFormat
	}
	i := strings.LastIndex(msg, ",p=")
	if i < 0 {
		return m, ErrFormat
	}
	m.withoutProof = msg[:i]
	var err error
	if m.proof, err = base64.StdEncoding.Strict().DecodeString(msg[i+3:]); err != nil {
		return m, ErrFormat
	}
	fields := strings.Split(m.withoutProof, ",")
	if len(fields) < 2 {
		return m, ErrFormat
	}
	binding, ok := strings.CutPrefix(fields[0], "c=")
	if !ok {
		return m, ErrFormat
	}
	if m.binding, err = base64.StdEncoding.Strict().DecodeString(binding); err != nil {
		return m, ErrFormat
	}
	if m.nonce, ok = strings.CutPrefix(fields[1], "r="); !ok || !printable(m.nonce) {
		return m, ErrFormat
	}
	if _, ok := parseExtensions(fields[2:]); !ok {
		return m, ErrFormat
	}
	return m, nil
}

// serverFinal is "v=signature" or "e=error".
type serverFinal struct {
	signature []byte
	err       string
}

func parseServerFinal(msg string) (serverFinal, error) {
	var m serverFinal
	if len(msg) > maxMessage {
		return m, ErrFormat
	}
	fields := strings.Split(msg, ",")
	if e, ok := strings.CutPrefix(fields[0], "e="); ok {
		if len(fields) != 1 || e == "" || strings.ContainsAny(e, "=") || !ascii(e) {
			return m, ErrFormat
		}
		m.err = e
		return m, nil
	}
	v, ok := strings.CutPrefix(fields[0], "v=")
	if !ok {
		return m, ErrFormat
	}
	var err error
	if m.signature, err = base64.StdEncoding.Strict().DecodeString(v); err != nil {
		return m, ErrFormat
	}
	if _, ok := parseExtensions(fields[1:]); !ok {
		return m, ErrFormat
	}
	return m, nil
}

// parseExtensions reads ALPHA=VALUE fields, VALUE being 7-bit characters
// other than NUL and comma.
func parseExtensions(fields []string) (map[string]string, bool) {
	if len(fields) == 0 {
		return nil, true
	}
	out := make(map[string]string, len(fields))
	for _, f := range fields {
		k, v, ok := strings.Cut(f, "=")
		if !ok || k == "" || v == "" || !alpha(k) || !ascii(v) {
			return nil, false
		}
		out[k] = v
	}
	return out, true
}

// decodeSaslName undoes RFC 5802's escaping of ',' as =2C and '=' as =3D;
// any other '=' and characters outside 0x01-0x7F (Kafka's SASLNAME) are
// refused.
func decodeSaslName(s string) (string, bool) {
	if s == "" {
		return "", false
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '=':
			switch {
			case strings.HasPrefix(s[i:], "=2C"):
				b.WriteByte(',')
			case strings.HasPrefix(s[i:], "=3D"):
				b.WriteByte('=')
			default:
				return "", false
			}
			i += 2
		case c == 0 || c > 0x7f || c == ',':
			return "", false
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), true
}

// encodeSaslName escapes a user name for n= and a=.
func encodeSaslName(s string) string {
	return strings.NewReplacer("=", "=3D", ",", "=2C").Replace(s)
}

func printable(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x21 || c > 0x7e || c == ',' {
			return false
		}
	}
	return true
}

func ascii(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c == 0 || c > 0x7f || c == ',' {
			return false
		}
	}
	return true
}

func alpha(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i] | 0x20; c < 'a' || c > 'z' {
			return false
		}
	}
	return true
}

func digits(s string) bool {
	if s == "" || len(s) > 9 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
