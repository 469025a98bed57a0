package config

import (
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// validator checks a parsed, non-null value; nil means acceptable.
type validator interface {
	check(name string, v Value) *violation
	// String describes the valid values as Kafka's documentation does.
	String() string
}

// violation is why a value was refused.
type violation struct {
	msg string
	// item is the offending list item, printed instead of the whole value.
	item *string
	// sentence marks messages that are complete sentences (ValidList's)
	// rather than the tail of "Invalid value X for configuration Y: ".
	sentence bool
}

func refuse(msg string) *violation   { return &violation{msg: msg} }
func sentence(msg string) *violation { return &violation{msg: msg, sentence: true} }

// message is Kafka's full text for a refused value of name.
func (x *violation) message(name string, v Value) string {
	switch {
	case x.sentence:
		return x.msg
	case x.item != nil:
		return invalidValue(name, *x.item, x.msg)
	}
	return invalidValue(name, v.javaString(), x.msg)
}

// numRange is ConfigDef.Range: bounds compared as doubles, as Kafka does.
type numRange struct {
	min, max       float64
	hasMin, hasMax bool
}

func atLeast(n float64) validator    { return numRange{min: n, hasMin: true} }
func between(a, b float64) validator { return numRange{min: a, max: b, hasMin: true, hasMax: true} }

func (r numRange) check(_ string, v Value) *violation {
	n := float64(v.i)
	if v.typ == Double {
		n = v.f
	}
	if r.hasMin && n < r.min {
		return refuse("Value must be at least " + num(r.min))
	}
	if r.hasMax && n > r.max {
		return refuse("Value must be no more than " + num(r.max))
	}
	return nil
}

func (r numRange) String() string {
	switch {
	case !r.hasMax:
		return "[" + num(r.min) + ",...]"
	case !r.hasMin:
		return "[...," + num(r.max) + "]"
	}
	return "[" + num(r.min) + ",...," + num(r.max) + "]"
}

// num prints a bound as the Java Number it was declared with (an int).
func num(f float64) string {
	if f == math.Trunc(f) && math.Abs(f) < 1<<53 {
		return strconv.FormatInt(int64(f), 10)
	}
	return javaDouble(f)
}

// oneOf is ConfigDef.ValidString: a case-sensitive set of strings.
type oneOf []string

func (o oneOf) check(_ string, v Value) *violation {
	if slices.Contains(o, v.s) {
		return nil
	}
	return refuse("String must be one of: " + strings.Join(o, ", "))
}

func (o oneOf) String() string { return "[" + strings.Join(o, ", ") + "]" }

// listOf is ConfigDef.ValidList as of Kafka 4.2: no duplicates, no empty
// items, optionally no empty list, and (when allowed is set) every item
// one of allowed.
type listOf struct {
	allowed    oneOf
	emptyOK    bool
	nullOK     bool // only meaningful for configs whose default is null
	anyStrings bool // ValidList.anyNonDuplicateValues
}

func (l listOf) check(name string, v Value) *violation {
	if !l.emptyOK && len(v.list) == 0 {
		valid := "any non-empty value"
		if !l.anyStrings {
			valid = l.allowed.String()
		}
		return sentence("Configuration '" + name + "' must not be empty. Valid values include: " + valid)
	}
	seen := make(map[string]bool, len(v.list))
	for _, s := range v.list {
		if seen[s] {
			return sentence("Configuration '" + name + "' values must not be duplicated.")
		}
		seen[s] = true
	}
	for _, s := range v.list {
		if s == "" {
			return sentence("Configuration '" + name + "' values must not be empty.")
		}
		if !l.anyStrings && !slices.Contains(l.allowed, s) {
			return &violation{item: &s, msg: "String must be one of: " + strings.Join(l.allowed, ", ")}
		}
	}
	return nil
}

func (l listOf) String() string {
	s := l.allowed.String()
	if l.anyStrings {
		s = "[]"
	}
	if l.emptyOK {
		s += " (empty config allowed)"
	} else {
		s += " (empty not allowed)"
	}
	if l.nullOK {
		return s + " (null config allowed)"
	}
	return s + " (null not allowed)"
}

// throttledReplicas checks leader/follower.replication.throttled.replicas:
// the literal "*" or partition:broker pairs.
type throttledReplicas struct{}

var replicaPair = regexp.MustCompile(`^([0-9]+:[0-9]+)?$`)

func (throttledReplicas) check(name string, v Value) *violation {
	if strings.Join(v.list, "") == "*" {
		return nil
	}
	for _, s := range v.list {
		if !replicaPair.MatchString(javaTrim(s)) {
			return refuse(name + " must be the literal '*' or a list of replicas in the following format: [partitionId]:[brokerId],[partitionId]:[brokerId],...")
		}
	}
	return nil
}

func (throttledReplicas) String() string {
	return "[partitionId]:[brokerId],[partitionId]:[brokerId],..."
}

// gzipLevel accepts 1..9 or -1 (the codec's default level).
type gzipLevel struct{}

func (gzipLevel) check(_ string, v Value) *violation {
	if v.i > 9 || (v.i < 1 && v.i != -1) {
		return refuse("Value must be between 1 and 9 or equal to -1")
	}
	return nil
}

func (gzipLevel) String() string { return "[1,...,9] or -1" }

// invalidValue is ConfigException's message.
func invalidValue(name, value, msg string) string {
	return "Invalid value " + value + " for configuration " + name + ": " + msg
}
