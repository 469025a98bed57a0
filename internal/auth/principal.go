package auth

import (
	"crypto/x509"
	"encoding/asn1"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"
)

// Principal names, as Kafka's KafkaPrincipal prints them and ACLs name
// them ("User:alice").
const (
	UserType  = "User"
	Anonymous = "User:ANONYMOUS"
)

// UserPrincipal is the principal of an authenticated user name.
func UserPrincipal(name string) string { return UserType + ":" + name }

// PrincipalRules is a parsed ssl.principal.mapping.rules: the rules that
// turn a client certificate's distinguished name into a user name, tried
// in order, the first that matches winning.
type PrincipalRules struct {
	rules []principalRule
	text  string
}

type principalRule struct {
	isDefault   bool
	re          *regexp.Regexp
	replacement string // Go template syntax (${1}), converted from Java's
	lower       bool
	upper       bool
}

// ErrNoMatchingRule is a distinguished name no rule maps.
var ErrNoMatchingRule = errors.New("auth: no principal mapping rule applies")

// maxRulesBytes bounds ssl.principal.mapping.rules.
const maxRulesBytes = 64 << 10

// ParsePrincipalRules reads ssl.principal.mapping.rules as Kafka's
// SslPrincipalMapper does: a comma-separated list of DEFAULT and
// RULE:pattern/replacement/[LU], where '/' and '\' inside pattern and
// replacement are escaped with '\', and replacement refers to pattern's
// groups as $1. Patterns are Go regular expressions (RE2): Java's
// look-arounds and back-references in patterns are refused.
func ParsePrincipalRules(s string) (*PrincipalRules, error) {
	if len(s) > maxRulesBytes {
		return nil, fmt.Errorf("ssl.principal.mapping.rules longer than %d bytes", maxRulesBytes)
	}
	pr := &PrincipalRules{text: s}
	rest := strings.TrimSpace(s)
	for rest != "" {
		var r principalRule
		var err error
		r, rest, err = parseRule(rest)
		if err != nil {
			return nil, err
		}
		pr.rules = append(pr.rules, r)
		rest = strings.TrimLeft(rest, " \t\n\r\f")
		if rest == "" {
			break
		}
		if rest[0] != ',' {
			return nil, fmt.Errorf("Invalid rule: `%s`, unmatched substring: `%s`", s, rest)
		}
		rest = strings.TrimLeft(rest[1:], " \t\n\r\f")
	}
	if len(pr.rules) == 0 {
		pr.rules = []principalRule{{isDefault: true}}
	}
	return pr, nil
}

// parseRule reads one rule at the start of s and returns what follows.
func parseRule(s string) (principalRule, string, error) {
	if rest, ok := strings.CutPrefix(s, "DEFAULT"); ok {
		return principalRule{isDefault: true}, rest, nil
	}
	body, ok := strings.CutPrefix(s, "RULE:")
	if !ok {
		end := strings.IndexByte(s, ',')
		if end < 0 {
			end = len(s)
		}
		return principalRule{}, "", fmt.Errorf("Invalid rule: %s", strings.TrimSpace(s[:end]))
	}
	pattern, body, ok := cutEscaped(body)
	if !ok {
		return principalRule{}, "", fmt.Errorf("Invalid rule: %s", s)
	}
	replacement, body, ok := cutEscaped(body)
	if !ok {
		return principalRule{}, "", fmt.Errorf("Invalid rule: %s", s)
	}
	r := principalRule{}
	if len(body) > 0 && (body[0] == 'L' || body[0] == 'U') {
		r.lower, r.upper = body[0] == 'L', body[0] == 'U'
		body = body[1:]
	}
	re, err := regexp.Compile("^(?:" + unescapeSlashes(pattern) + ")$")
	if err != nil {
		return principalRule{}, "", fmt.Errorf("Invalid rule: %s: %v", s, err)
	}
	r.re = re
	if r.replacement, err = javaReplacement(unescapeSlashes(replacement), re.NumSubexp()); err != nil {
		return principalRule{}, "", fmt.Errorf("Invalid rule: %s: %v", s, err)
	}
	return r, body, nil
}

// cutEscaped returns s up to its first unescaped '/', and what follows it.
func cutEscaped(s string) (string, string, bool) {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '/':
			return s[:i], s[i+1:], true
		}
	}
	return "", "", false
}

// unescapeSlashes turns the rule syntax's "\/" into "/"; other escapes are
// the regular expression's own and stay.
func unescapeSlashes(s string) string { return strings.ReplaceAll(s, `\/`, "/") }

// javaReplacement converts a java.util.regex replacement ($1, \$ for a
// literal dollar, \\ for a backslash) into regexp.Expand's syntax.
func javaReplacement(s string, groups int) (string, error) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case '\\':
			if i+1 >= len(s) {
				return "", errors.New("character to be escaped is missing")
			}
			i++
			if s[i] == '$' {
				b.WriteString("$$")
			} else {
				b.WriteByte(s[i])
			}
		case '$':
			// Java reads the longest group number that exists.
			j := i + 1
			if j >= len(s) || s[j] < '0' || s[j] > '9' {
				return "", errors.New("illegal group reference")
			}
			n := int(s[j] - '0')
			j++
			for j < len(s) && s[j] >= '0' && s[j] <= '9' && n*10+int(s[j]-'0') <= groups {
				n = n*10 + int(s[j]-'0')
				j++
			}
			if n > groups {
				return "", fmt.Errorf("no group %d", n)
			}
			fmt.Fprintf(&b, "${%d}", n)
			i = j - 1
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), nil
}

// Map returns the user name for a distinguished name in RFC 2253 form.
func (p *PrincipalRules) Map(dn string) (string, error) {
	for _, r := range p.rules {
		if r.isDefault {
			return dn, nil
		}
		m := r.re.FindStringSubmatchIndex(dn)
		if m == nil {
			continue
		}
		out := string(r.re.ExpandString(nil, r.replacement, dn, m))
		switch {
		case r.lower:
			out = strings.ToLower(out)
		case r.upper:
			out = strings.ToUpper(out)
		}
		return out, nil
	}
	return "", fmt.Errorf("%w: No rules apply to %s, rules %s", ErrNoMatchingRule, dn, p.text)
}

// CertificateDN is a certificate subject as Java's
// X500Principal.getName() prints it (RFC 2253): most specific RDN first,
// the keywords CN, C, L, ST, O, OU, STREET, DC and UID for string values,
// any other attribute as its dotted OID, "#" and the hex of its DER value
// as the certificate holds it.
func CertificateDN(cert *x509.Certificate) (string, error) {
	var seq []rawRDNSET
	if rest, err := asn1.Unmarshal(cert.RawSubject, &seq); err != nil || len(rest) > 0 {
		return "", fmt.Errorf("auth: certificate subject does not parse: %v", err)
	}
	var b strings.Builder
	for i := len(seq) - 1; i >= 0; i-- {
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		for j, atv := range seq[i] {
			if j > 0 {
				b.WriteByte('+')
			}
			writeAttribute(&b, atv)
		}
	}
	return b.String(), nil
}

// rawRDNSET is one relative distinguished name with its values undecoded
// (encoding/asn1 reads a type whose name ends in SET as a SET OF).
type rawRDNSET []rawATV

type rawATV struct {
	Type  asn1.ObjectIdentifier
	Value asn1.RawValue
}

var dnKeywords = map[string]string{
	"2.5.4.3":                    "CN",
	"2.5.4.6":                    "C",
	"2.5.4.7":                    "L",
	"2.5.4.8":                    "ST",
	"2.5.4.10":                   "O",
	"2.5.4.11":                   "OU",
	"2.5.4.9":                    "STREET",
	"0.9.2342.19200300.100.1.25": "DC",
	"0.9.2342.19200300.100.1.1":  "UID",
}

func writeAttribute(b *strings.Builder, atv rawATV) {
	oid := atv.Type.String()
	var s string
	_, err := asn1.Unmarshal(atv.Value.FullBytes, &s)
	if kw, known := dnKeywords[oid]; known && err == nil {
		b.WriteString(kw)
		b.WriteByte('=')
		writeEscaped(b, s)
		return
	}
	b.WriteString(oid)
	b.WriteString("=#")
	b.WriteString(strings.ToUpper(hex.EncodeToString(atv.Value.FullBytes)))
}

// writeEscaped escapes a value as RFC 2253 section 2.4 asks.
func writeEscaped(b *strings.Builder, s string) {
	for i, r := range s {
		switch {
		case strings.ContainsRune(`,+"\<>;`, r),
			i == 0 && (r == '#' || r == ' '),
			r == ' ' && i+utf8.RuneLen(r) == len(s):
			b.WriteByte('\\')
			b.WriteRune(r)
		default:
			b.WriteRune(r)
		}
	}
}
