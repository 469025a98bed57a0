package share

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"time"
)

// ErrBadOffsetReset is returned for a share.auto.offset.reset value Kafka
// would refuse.
var ErrBadOffsetReset = errors.New("share: invalid share.auto.offset.reset")

// OffsetReset is a parsed share.auto.offset.reset: where a share partition
// with no state starts.
type OffsetReset struct {
	// Kind is "latest" (the default), "earliest" or "by_duration".
	Kind string
	// Duration is by_duration's look-back.
	Duration time.Duration
}

// ParseOffsetReset parses share.auto.offset.reset as Kafka 4.3 does:
// "latest", "earliest" or "by_duration:" followed by an ISO-8601 duration
// in java.time.Duration's form PnDTnHnMn.nS (signs allowed on each part,
// letters in either case, but the total may not be negative). The empty
// string is the default, latest.
func ParseOffsetReset(s string) (OffsetReset, error) {
	switch s {
	case "", "latest":
		return OffsetReset{Kind: "latest"}, nil
	case "earliest":
		return OffsetReset{Kind: "earliest"}, nil
	}
	rest, ok := strings.CutPrefix(s, "by_duration:")
	if !ok {
		return OffsetReset{}, fmt.Errorf("%w: %q", ErrBadOffsetReset, s)
	}
	d, err := parseJavaDuration(rest)
	if err != nil {
		return OffsetReset{}, fmt.Errorf("%w: %q: %v", ErrBadOffsetReset, s, err)
	}
	if d < 0 {
		return OffsetReset{}, fmt.Errorf("%w: %q: negative duration", ErrBadOffsetReset, s)
	}
	return OffsetReset{Kind: "by_duration", Duration: d}, nil
}

// String gives the config value back.
func (r OffsetReset) String() string {
	if r.Kind == "by_duration" {
		return "by_duration:" + formatJavaDuration(r.Duration)
	}
	if r.Kind == "" {
		return "latest"
	}
	return r.Kind
}

// OffsetLookup is what the log answers for ListOffsets, for the owner to
// implement over its partition.
type OffsetLookup interface {
	// Earliest is the log start offset.
	Earliest() int64
	// Latest is the offset after the last record a share consumer may
	// read (the high watermark).
	Latest() int64
	// ForTimestamp is the first offset whose record timestamp is at or
	// after ts; false when no record is that recent.
	ForTimestamp(ts time.Time) (int64, bool)
}

// InitialStartOffset is the SPSO of a share partition with no state: the
// log start for earliest, the log end for latest, and for by_duration the
// first record no older than now minus the duration (the log end if none
// is). The owner passes it to New and persists the snapshot at once.
func InitialStartOffset(r OffsetReset, now time.Time, log OffsetLookup) int64 {
	switch r.Kind {
	case "earliest":
		return log.Earliest()
	case "by_duration":
		if off, ok := log.ForTimestamp(now.Add(-r.Duration)); ok {
			return off
		}
	}
	return log.Latest()
}

// parseJavaDuration parses java.time.Duration.parse's grammar:
// [+-]P[nD][T[nH][nM][n[.f]S]] with optional signs on every number, a
// fraction of up to nine digits after '.' or ',', letters in either case,
// at least one part, and at least one part after T when T is present.
func parseJavaDuration(s string) (time.Duration, error) {
	u := strings.ToUpper(s)
	neg := false
	if u != "" && (u[0] == '+' || u[0] == '-') {
		neg = u[0] == '-'
		u = u[1:]
	}
	if !strings.HasPrefix(u, "P") {
		return 0, errors.New("no P")
	}
	u = u[1:]
	var nanos int64
	parts := 0
	add := func(n int64, unit int64) error {
		if n > math.MaxInt64/unit || n < math.MinInt64/unit {
			return errors.New("overflow")
		}
		v := n * unit
		if (v > 0 && nanos > math.MaxInt64-v) || (v < 0 && nanos < math.MinInt64-v) {
			return errors.New("overflow")
		}
		nanos += v
		return nil
	}
	if n, rest, ok := javaNumber(u); ok && strings.HasPrefix(rest, "D") {
		if err := add(n, int64(24*time.Hour)); err != nil {
			return 0, err
		}
		u, parts = rest[1:], parts+1
	}
	if strings.HasPrefix(u, "T") {
		u = u[1:]
		tparts := 0
		for _, unit := range []struct {
			letter string
			d      time.Duration
		}{{"H", time.Hour}, {"M", time.Minute}} {
			if n, rest, ok := javaNumber(u); ok && strings.HasPrefix(rest, unit.letter) {
				if err := add(n, int64(unit.d)); err != nil {
					return 0, err
				}
				u, tparts = rest[1:], tparts+1
			}
		}
		if n, rest, ok := javaNumber(u); ok {
			sign := int64(1)
			if strings.HasPrefix(u, "-") {
				sign = -1
			}
			frac := int64(0)
			if rest != "" && (rest[0] == '.' || rest[0] == ',') {
				digits := 0
				rest = rest[1:]
				for digits < len(rest) && rest[digits] >= '0' && rest[digits] <= '9' {
					digits++
				}
				if digits > 9 {
					return 0, errors.New("fraction longer than nine digits")
				}
				f := rest[:digits]
				rest = rest[digits:]
				for len(f) < 9 {
					f += "0"
				}
				for _, c := range f {
					frac = frac*10 + int64(c-'0')
				}
			}
			if strings.HasPrefix(rest, "S") {
				if err := add(n, int64(time.Second)); err != nil {
					return 0, err
				}
				if err := add(sign*frac, 1); err != nil {
					return 0, err
				}
				u, tparts = rest[1:], tparts+1
			}
		}
		if tparts == 0 {
			return 0, errors.New("T without a time part")
		}
		parts += tparts
	}
	if u != "" {
		return 0, fmt.Errorf("unexpected %q", u)
	}
	if parts == 0 {
		return 0, errors.New("no part")
	}
	if neg {
		if nanos == math.MinInt64 {
			return 0, errors.New("overflow")
		}
		nanos = -nanos
	}
	return time.Duration(nanos), nil
}

// javaNumber reads [+-]?[0-9]+ from the front of s.
func javaNumber(s string) (int64, string, bool) {
	i := 0
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		i++
	}
	start := i
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	if i == start {
		return 0, s, false
	}
	var n int64
	for _, c := range s[start:i] {
		d := int64(c - '0')
		if n > (math.MaxInt64-d)/10 {
			return 0, s, false
		}
		n = n*10 + d
	}
	if s[0] == '-' {
		n = -n
	}
	return n, s[i:], true
}

// formatJavaDuration writes d in java.time.Duration.toString's form.
func formatJavaDuration(d time.Duration) string {
	if d == 0 {
		return "PT0S"
	}
	var b strings.Builder
	b.WriteString("PT")
	if h := d / time.Hour; h != 0 {
		fmt.Fprintf(&b, "%dH", h)
		d -= h * time.Hour
	}
	if m := d / time.Minute; m != 0 {
		fmt.Fprintf(&b, "%dM", m)
		d -= m * time.Minute
	}
	if d != 0 {
		s := d / time.Second
		ns := d - s*time.Second
		if ns == 0 {
			fmt.Fprintf(&b, "%dS", s)
		} else {
			frac := strings.TrimRight(fmt.Sprintf("%09d", ns), "0")
			fmt.Fprintf(&b, "%d.%sS", s, frac)
		}
	}
	return b.String()
}
