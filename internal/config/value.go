package config

import (
	"math"
	"regexp"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Type is a config value type, numbered as DescribeConfigs v3+ reports it.
type Type = kmsg.ConfigType

// The value types Kafka's ConfigDef knows.
const (
	Boolean  = kmsg.ConfigTypeBoolean
	String   = kmsg.ConfigTypeString
	Int      = kmsg.ConfigTypeInt
	Short    = kmsg.ConfigTypeShort
	Long     = kmsg.ConfigTypeLong
	Double   = kmsg.ConfigTypeDouble
	List     = kmsg.ConfigTypeList
	Class    = kmsg.ConfigTypeClass
	Password = kmsg.ConfigTypePassword
)

// Value is one parsed config value. The zero Value is a null of unknown
// type. Values are immutable once parsed.
type Value struct {
	typ  Type
	null bool
	b    bool
	i    int64 // Int, Short and Long
	f    float64
	s    string   // String, Class and Password
	list []string // List
}

// Type is the value's type.
func (v Value) Type() Type { return v.typ }

// IsNull reports whether the value is Kafka's null (an unset config with
// no default, such as log.retention.ms).
func (v Value) IsNull() bool { return v.null || v.typ == 0 }

// Bool returns a Boolean value.
func (v Value) Bool() bool { return v.b }

// Int64 returns an Int, Short or Long value.
func (v Value) Int64() int64 { return v.i }

// Float returns a Double value.
func (v Value) Float() float64 { return v.f }

// Str returns a String, Class or Password value.
func (v Value) Str() string { return v.s }

// Strings returns a copy of a List value.
func (v Value) Strings() []string { return append([]string(nil), v.list...) }

// String returns the value in the form Kafka prints it (ConfigDef's
// convertToString): lists joined by commas, doubles as Java prints them.
// A null value prints as "".
func (v Value) String() string {
	s, _ := v.canonical()
	return s
}

// canonical is String with null reported separately.
func (v Value) canonical() (string, bool) {
	if v.IsNull() {
		return "", false
	}
	switch v.typ {
	case Boolean:
		return strconv.FormatBool(v.b), true
	case Int, Short, Long:
		return strconv.FormatInt(v.i, 10), true
	case Double:
		return javaDouble(v.f), true
	case List:
		return strings.Join(v.list, ","), true
	default:
		return v.s, true
	}
}

// nullValue is the null of type t.
func nullValue(t Type) Value { return Value{typ: t, null: true} }

// LongValue, IntValue and BoolValue build typed values, for callers and
// tests that need one without parsing.
func LongValue(n int64) Value { return Value{typ: Long, i: n} }

// IntValue builds an Int value.
func IntValue(n int32) Value { return Value{typ: Int, i: int64(n)} }

// BoolValue builds a Boolean value.
func BoolValue(b bool) Value { return Value{typ: Boolean, b: b} }

// javaTrim is Java's String.trim: it strips every char at or below ' '
// from both ends, not only Unicode white space.
func javaTrim(s string) string {
	return strings.TrimFunc(s, func(r rune) bool { return r <= ' ' })
}

// listSplit is ConfigDef's "\s*,\s*" with Java's \s ([ \t\n\x0B\f\r]).
var listSplit = regexp.MustCompile(`[ \t\n\x0B\f\r]*,[ \t\n\x0B\f\r]*`)

// javaFloat is what Double.parseDouble accepts, less hexadecimal floats.
var javaFloat = regexp.MustCompile(`^[+-]?(NaN|Infinity|([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?[fFdD]?)$`)

// parseValue parses raw as type t the way ConfigDef.parseType does: the
// text is trimmed, booleans are case-insensitive, numbers are decimal,
// lists split on commas with surrounding white space. The error message is
// the part after "Invalid value X for configuration Y: ".
func parseValue(t Type, raw string) (Value, string) {
	s := javaTrim(raw)
	v := Value{typ: t}
	switch t {
	case Boolean:
		switch {
		case strings.EqualFold(s, "true"):
			v.b = true
		case strings.EqualFold(s, "false"):
		default:
			return Value{}, "Expected value to be either true or false"
		}
	case String, Password:
		v.s = s
	case Class:
		// No Java classes exist here, so no class name can be loaded,
		// except the few Kafka classes weir implements itself.
		if !knownClasses[s] {
			return Value{}, "Class " + raw + " could not be found."
		}
		v.s = s
	case Int, Short, Long:
		n, err := strconv.ParseInt(s, 10, intBits(t))
		if err != nil {
			return Value{}, "Not a number of type " + typeName(t)
		}
		v.i = n
	case Double:
		if !javaFloat.MatchString(s) {
			return Value{}, "Not a number of type DOUBLE"
		}
		f, err := parseJavaDouble(s)
		if err != nil {
			return Value{}, "Not a number of type DOUBLE"
		}
		v.f = f
	case List:
		if s != "" {
			v.list = listSplit.Split(s, -1)
		} else {
			v.list = []string{}
		}
	default:
		return Value{}, "unknown type"
	}
	return v, ""
}

func parseJavaDouble(s string) (float64, error) {
	switch strings.TrimLeft(s, "+-") {
	case "NaN":
		return math.NaN(), nil
	case "Infinity":
		if strings.HasPrefix(s, "-") {
			return math.Inf(-1), nil
		}
		return math.Inf(1), nil
	}
	s = strings.TrimRight(s, "fFdD")
	f, err := strconv.ParseFloat(s, 64)
	if err != nil && !math.IsInf(f, 0) { // overflow is Infinity in Java too
		return 0, err
	}
	return f, nil
}

// javaDouble formats f as Java's Double.toString does (JDK 19 and
// later): the shortest digits that round-trip, but never fewer than two
// significant digits, in which case the closest two-digit decimal;
// plain notation with at least one fractional digit for 1e-3 <= |f| < 1e7,
// otherwise "d.dddE<n>".
func javaDouble(f float64) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	case f == 0:
		if math.Signbit(f) {
			return "-0.0"
		}
		return "0.0"
	}
	sign := ""
	if f < 0 {
		sign, f = "-", -f
	}
	s := strconv.FormatFloat(f, 'e', -1, 64) // d[.ddd]e±xx
	if !strings.Contains(s, ".") {
		s = strconv.FormatFloat(f, 'e', 1, 64)
	}
	mant, exps, _ := strings.Cut(s, "e")
	exp, _ := strconv.Atoi(exps)
	digits := strings.TrimRight(strings.Replace(mant, ".", "", 1), "0")
	if digits == "" {
		digits = "0"
	}
	if f < 1e-3 || f >= 1e7 {
		frac := digits[1:]
		if frac == "" {
			frac = "0"
		}
		return sign + digits[:1] + "." + frac + "E" + strconv.Itoa(exp)
	}
	if exp < 0 {
		return sign + "0." + strings.Repeat("0", -exp-1) + digits
	}
	for len(digits) < exp+2 {
		digits += "0"
	}
	return sign + digits[:exp+1] + "." + digits[exp+1:]
}

func intBits(t Type) int {
	switch t {
	case Short:
		return 16
	case Int:
		return 32
	}
	return 64
}

// typeName is the ConfigDef.Type name Kafka prints in messages.
func typeName(t Type) string {
	switch t {
	case Boolean:
		return "BOOLEAN"
	case String:
		return "STRING"
	case Int:
		return "INT"
	case Short:
		return "SHORT"
	case Long:
		return "LONG"
	case Double:
		return "DOUBLE"
	case List:
		return "LIST"
	case Class:
		return "CLASS"
	case Password:
		return "PASSWORD"
	}
	return "UNKNOWN"
}

// javaString is how Java prints a parsed value inside a ConfigException
// message: lists as "[a, b]", everything else as its canonical form.
func (v Value) javaString() string {
	if v.typ == List {
		return "[" + strings.Join(v.list, ", ") + "]"
	}
	s, _ := v.canonical()
	return s
}

// knownClasses are the Kafka classes weir implements, so that configs
// naming them load.
var knownClasses = map[string]bool{
	"org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler": true,
}
