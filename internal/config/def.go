package config

import (
	"fmt"
	"slices"
)

// Support says what weir does with a config it accepts.
type Support uint8

const (
	// Honoured configs change what weir does.
	Honoured Support = iota + 1
	// Stored configs are validated, kept and described exactly as Kafka
	// would, but weir does not act on them (tiered storage, throttling,
	// broker-side recompression, preallocation, ...).
	Stored
)

func (s Support) String() string {
	if s == Honoured {
		return "honoured"
	}
	return "stored only"
}

// Synonym is a broker config that supplies a topic config's default.
type Synonym struct {
	Name string
	// Scale converts the broker value to the topic config's unit (for
	// example 3600000 for log.retention.hours); 0 means 1.
	Scale int64
}

// Def describes one config key: Kafka's name, type, default and valid
// values, and what weir does with it.
type Def struct {
	Name string
	Type Type
	// Default is Kafka's default in its printed form. NullDefault marks
	// Kafka's null default (the config is unset unless given).
	Default     string
	NullDefault bool
	// Doc is a one-line description.
	Doc     string
	Support Support
	// Dynamic marks broker configs that AlterConfigs and
	// IncrementalAlterConfigs may change at run time; the others are
	// read-only. Topic configs are always dynamic.
	Dynamic bool
	// Synonyms lists, for a topic config, the broker configs its default
	// comes from, highest priority first.
	Synonyms []Synonym

	valid validator
	def   Value
}

// ValidValues describes the accepted values as Kafka's documentation
// does ("[1,...]", "[compact, delete]"), or "" when any value of the type
// is accepted.
func (d *Def) ValidValues() string {
	if d.valid == nil {
		return ""
	}
	return d.valid.String()
}

// DefaultValue is the parsed default (null when NullDefault).
func (d *Def) DefaultValue() Value { return d.def }

// Sensitive reports whether values of this config are never shown.
func (d *Def) Sensitive() bool { return d.Type == Password }

// parse parses and validates raw for this config. The message is Kafka's
// ConfigException text, naming the key and the constraint.
func (d *Def) parse(raw string) (Value, string) {
	v, msg := parseValue(d.Type, raw)
	if msg != "" {
		return Value{}, invalidValue(d.Name, raw, msg)
	}
	if d.valid != nil {
		if x := d.valid.check(d.Name, v); x != nil {
			return Value{}, x.message(d.Name, v)
		}
	}
	return v, ""
}

// defSet is an immutable table of configs in definition order (the order
// Kafka validates them in).
type defSet struct {
	list   []*Def
	byName map[string]*Def
}

// newDefSet parses every default. A default that does not parse or fails
// its own validator is a mistake in the table, caught at start-up and by
// the tests, exactly as Kafka's ConfigDef refuses one.
func newDefSet(list []Def) *defSet {
	s := &defSet{byName: make(map[string]*Def, len(list))}
	for i := range list {
		d := &list[i]
		if _, dup := s.byName[d.Name]; dup {
			panic("config: " + d.Name + " defined twice")
		}
		if d.NullDefault {
			d.def = nullValue(d.Type)
		} else {
			v, msg := d.parse(d.Default)
			if msg != "" {
				panic(fmt.Sprintf("config: bad default for %s: %s", d.Name, msg))
			}
			d.def = v
		}
		s.list = append(s.list, d)
		s.byName[d.Name] = d
	}
	return s
}

func (s *defSet) get(name string) (*Def, bool) {
	d, ok := s.byName[name]
	return d, ok
}

// all returns copies of the definitions, in definition order.
func (s *defSet) all() []Def {
	out := make([]Def, len(s.list))
	for i, d := range s.list {
		out[i] = d.clone()
	}
	return out
}

// clone copies a definition so that callers cannot change the table.
func (d *Def) clone() Def {
	c := *d
	c.Synonyms = slices.Clone(d.Synonyms)
	return c
}

// TopicDefs returns every topic config, in Kafka's definition order.
func TopicDefs() []Def { return topicDefs.all() }

// BrokerDefs returns every broker config weir knows.
func BrokerDefs() []Def { return brokerDefs.all() }

// TopicDef looks up a topic config.
func TopicDef(name string) (Def, bool) {
	d, ok := topicDefs.get(name)
	if !ok {
		return Def{}, false
	}
	return d.clone(), true
}

// BrokerDef looks up a broker config.
func BrokerDef(name string) (Def, bool) {
	d, ok := brokerDefs.get(name)
	if !ok {
		return Def{}, false
	}
	return d.clone(), true
}
