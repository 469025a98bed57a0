package console

import (
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Everything a request names (query parameters and form fields) is
// parsed here, once, into typed values or a ParamError saying which
// field was wrong and why, in words a person can act on. Nothing reaches
// the cluster unparsed.

// ParamError is a bad request parameter.
type ParamError struct {
	Param  string
	Value  string
	Reason string
}

func (e *ParamError) Error() string {
	v := e.Value
	if len(v) > 60 {
		v = v[:60] + "…"
	}
	if !utf8.ValidString(v) {
		v = strconv.Quote(v)
	}
	if e.Value == "" {
		return fmt.Sprintf("%s: %s", e.Param, e.Reason)
	}
	return fmt.Sprintf("%s %q: %s", e.Param, v, e.Reason)
}

func bad(param, value, reason string, args ...any) error {
	return &ParamError{Param: param, Value: value, Reason: fmt.Sprintf(reason, args...)}
}

// Limits on what a request may ask for.
const (
	maxTopicName     = 249 // Kafka's
	maxGroupID       = 1024
	maxListItems     = 10000
	maxReplicas      = 64
	maxBrowse        = 500
	maxRecordBytes   = 1 << 20
	maxHeaders       = 64
	maxConfigEntries = 200
)

// params reads fields of a query or form.
type params struct{ v url.Values }

func (p params) raw(name string) string { return strings.TrimSpace(p.v.Get(name)) }

// topic is a topic name as Kafka allows it.
func (p params) topic(name string) (string, error) {
	s := p.raw(name)
	switch {
	case s == "":
		return "", bad(name, s, "a topic name is required")
	case len(s) > maxTopicName:
		return "", bad(name, s, "a topic name has at most %d characters", maxTopicName)
	case s == "." || s == "..":
		return "", bad(name, s, `"." and ".." are not topic names`)
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return "", bad(name, s, "a topic name holds only letters, digits, '.', '_' and '-'")
		}
	}
	return s, nil
}

// group is a group id: any printable text.
func (p params) group(name string) (string, error) {
	s := p.v.Get(name) // group ids may have meaningful spaces
	switch {
	case strings.TrimSpace(s) == "":
		return "", bad(name, s, "a group id is required")
	case len(s) > maxGroupID:
		return "", bad(name, s, "a group id has at most %d bytes", maxGroupID)
	case !utf8.ValidString(s):
		return "", bad(name, s, "not valid UTF-8")
	}
	for _, r := range s {
		if unicode.IsControl(r) {
			return "", bad(name, s, "a group id holds no control characters")
		}
	}
	return s, nil
}

// integer reads a whole number in [lo, hi]; def when the field is empty
// and optional.
func (p params) integer(name string, lo, hi int64, def *int64) (int64, error) {
	s := p.raw(name)
	if s == "" {
		if def != nil {
			return *def, nil
		}
		return 0, bad(name, s, "a number is required")
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		if errors.Is(err, strconv.ErrRange) {
			return 0, bad(name, s, "out of range: want %d to %d", lo, hi)
		}
		return 0, bad(name, s, "not a whole number")
	}
	if n < lo || n > hi {
		return 0, bad(name, s, "out of range: want %d to %d", lo, hi)
	}
	return n, nil
}

func ptr(n int64) *int64 { return &n }

// ints reads a comma-separated list of distinct whole numbers in
// [lo, hi], at most maxN of them; empty is nil.
func (p params) ints(name string, lo, hi int64, maxN int) ([]int32, error) {
	s := p.raw(name)
	if s == "" {
		return nil, nil
	}
	parts := strings.Split(s, ",")
	if len(parts) > maxN {
		return nil, bad(name, s, "at most %d numbers", maxN)
	}
	return parseInts(name, s, parts, lo, hi)
}

func parseInts(name, whole string, parts []string, lo, hi int64) ([]int32, error) {
	out := make([]int32, 0, len(parts))
	seen := map[int32]bool{}
	for _, f := range parts {
		f = strings.TrimSpace(f)
		n, err := strconv.ParseInt(f, 10, 32)
		if err != nil {
			return nil, bad(name, whole, "%q is not a whole number", f)
		}
		if n < lo || n > hi {
			return nil, bad(name, whole, "%d is out of range: want %d to %d", n, lo, hi)
		}
		if seen[int32(n)] {
			return nil, bad(name, whole, "%d is listed twice", n)
		}
		seen[int32(n)] = true
		out = append(out, int32(n))
	}
	return out, nil
}

// timestamp reads a time as milliseconds since the epoch, RFC 3339, or
// a browser's datetime-local value (taken as UTC).
func (p params) timestamp(name string) (int64, error) {
	s := p.raw(name)
	if s == "" {
		return 0, bad(name, s, "a time is required")
	}
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		if n < 0 || n > 1<<53 {
			return 0, bad(name, s, "milliseconds since 1970 must be between 0 and 2^53")
		}
		return n, nil
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02T15:04", "2006-01-02"} {
		if t, err := time.Parse(layout, s); err == nil {
			if t.Before(time.Unix(0, 0)) || t.Year() > 9999 {
				return 0, bad(name, s, "before 1970 or after 9999")
			}
			return t.UnixMilli(), nil
		}
	}
	return 0, bad(name, s, "not a time: give milliseconds since 1970 or a date like 2026-01-02T15:04:05Z")
}

// lines reads "key=value" lines (configs, headers): at most maxN, keys
// non-empty and distinct.
func (p params) lines(name string, maxN int) ([][2]string, error) {
	s := p.v.Get(name)
	var out [][2]string
	seen := map[string]bool{}
	for _, line := range strings.Split(strings.ReplaceAll(s, "\r\n", "\n"), "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			return nil, bad(name, line, "each line is name=value")
		}
		if !utf8.ValidString(k) {
			return nil, bad(name, line, "the name is not valid UTF-8")
		}
		if seen[k] {
			return nil, bad(name, line, "%q is given twice", k)
		}
		seen[k] = true
		out = append(out, [2]string{k, v})
		if len(out) > maxN {
			return nil, bad(name, "", "at most %d lines", maxN)
		}
	}
	return out, nil
}

// configName is a config's name: dotted lower-case words as Kafka names
// them.
func configName(param, s string) error {
	if s == "" || len(s) > 255 {
		return bad(param, s, "a config name has 1 to 255 characters")
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return bad(param, s, "a config name holds only letters, digits, '.', '_' and '-'")
		}
	}
	return nil
}

// oneOf reads a field that must be one of choices (the first when
// empty).
func (p params) oneOf(name string, choices ...string) (string, error) {
	s := p.raw(name)
	if s == "" {
		return choices[0], nil
	}
	for _, c := range choices {
		if s == c {
			return s, nil
		}
	}
	return "", bad(name, s, "want one of %s", strings.Join(choices, ", "))
}

// text reads a free-text field of at most maxLen bytes; null says the
// field was absent (a null key or value), as opposed to empty.
func (p params) text(name string, maxLen int) (b []byte, null bool, err error) {
	vs, ok := p.v[name]
	if !ok || len(vs) == 0 {
		return nil, true, nil
	}
	if len(vs[0]) > maxLen {
		return nil, false, bad(name, "", "at most %d bytes", maxLen)
	}
	return []byte(vs[0]), false, nil
}

// ResetTarget is where a group's offsets go.
type ResetTarget struct {
	Kind  string // earliest, latest, offset, timestamp, shift
	Value int64
}

// resetTarget reads "to" (earliest, latest, offset, timestamp, shift)
// and its "value".
func (p params) resetTarget() (ResetTarget, error) {
	kind, err := p.oneOf("to", "earliest", "latest", "offset", "timestamp", "shift")
	if err != nil {
		return ResetTarget{}, err
	}
	t := ResetTarget{Kind: kind}
	switch kind {
	case "offset":
		t.Value, err = p.integer("value", 0, 1<<62, nil)
	case "shift":
		t.Value, err = p.integer("value", -(1 << 62), 1<<62, nil)
	case "timestamp":
		t.Value, err = p.timestamp("value")
	}
	return t, err
}

// moves reads a reassignment: lines "partition: replica,replica,..."
// ("partition: cancel" cancels one in progress).
func (p params) moves(name string) (map[int32][]int32, error) {
	s := p.v.Get(name)
	out := map[int32][]int32{}
	for _, line := range strings.Split(strings.ReplaceAll(s, "\r\n", "\n"), "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		ps, rs, ok := strings.Cut(line, ":")
		if !ok {
			return nil, bad(name, line, "each line is partition: replica,replica,... (or partition: cancel)")
		}
		part, err := strconv.ParseInt(strings.TrimSpace(ps), 10, 32)
		if err != nil || part < 0 {
			return nil, bad(name, line, "%q is not a partition number", strings.TrimSpace(ps))
		}
		if _, dup := out[int32(part)]; dup {
			return nil, bad(name, line, "partition %d is given twice", part)
		}
		if strings.TrimSpace(rs) == "cancel" {
			out[int32(part)] = nil
			continue
		}
		fields := strings.Split(rs, ",")
		if len(fields) > maxReplicas {
			return nil, bad(name, line, "at most %d replicas", maxReplicas)
		}
		reps, err := parseInts(name, line, fields, 0, 1<<31-1)
		if err != nil {
			return nil, err
		}
		out[int32(part)] = reps
		if len(out) > maxListItems {
			return nil, bad(name, "", "at most %d partitions", maxListItems)
		}
	}
	if len(out) == 0 {
		return nil, bad(name, "", "give at least one line partition: replica,replica,...")
	}
	return out, nil
}
