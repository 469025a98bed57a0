package config

import (
	"maps"
	"slices"
	"strconv"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Source is where a described value comes from, numbered as
// DescribeConfigs reports it.
type Source = kmsg.ConfigSource

// The sources a TOPIC or BROKER resource can report.
const (
	SourceTopic                = kmsg.ConfigSourceDynamicTopicConfig         // 1
	SourceDynamicBroker        = kmsg.ConfigSourceDynamicBrokerConfig        // 2
	SourceDynamicDefaultBroker = kmsg.ConfigSourceDynamicDefaultBrokerConfig // 3
	SourceStaticBroker         = kmsg.ConfigSourceStaticBrokerConfig         // 4
	SourceDefault              = kmsg.ConfigSourceDefaultConfig              // 5
)

// Entry is one described config, the response's element type.
type Entry = kmsg.DescribeConfigsResponseResourceConfig

// Synonym entries list where else a value could come from.
type SynonymEntry = kmsg.DescribeConfigsResponseResourceConfigConfigSynonym

// DescribeOptions are the request flags that shape entries.
type DescribeOptions struct {
	// Keys limits the answer to these names; nil or empty means all.
	// Names that are not configs are left out, as Kafka does.
	Keys []string
	// IncludeSynonyms fills ConfigSynonyms (v1+).
	IncludeSynonyms bool
	// IncludeDocumentation fills Documentation (v3+).
	IncludeDocumentation bool
}

func (o DescribeOptions) wants(name string) bool {
	return len(o.Keys) == 0 || slices.Contains(o.Keys, name)
}

// brokerSynonymGroups are broker configs that are one setting under
// several names (DynamicBrokerConfig.brokerConfigSynonyms), in priority
// order. log.flush.scheduler.interval.ms stands alone when described by
// itself, as in Kafka.
var brokerSynonymGroups = func() map[string][]string {
	groups := [][]string{
		{"log.roll.ms", "log.roll.hours"},
		{"log.roll.jitter.ms", "log.roll.jitter.hours"},
		{"log.retention.ms", "log.retention.minutes", "log.retention.hours"},
	}
	m := map[string][]string{"log.flush.interval.ms": {"log.flush.interval.ms", "log.flush.scheduler.interval.ms"}}
	for _, g := range groups {
		for _, n := range g {
			m[n] = g
		}
	}
	return m
}()

func brokerSynonymNames(name string) []string {
	if g, ok := brokerSynonymGroups[name]; ok {
		return g
	}
	return []string{name}
}

// configSynonyms lists the broker-level values of name and its synonyms,
// highest precedence first: this node's dynamic configs, the cluster-wide
// dynamic ones, the static ones, then Kafka's defaults. Like Kafka it then
// drops everything before the first entry for name itself; so a topic's
// retention.ms lists log.retention.hours only once log.retention.ms is
// set somewhere.
func (b *Broker) configSynonyms(name string, names []string, sensitive bool) []SynonymEntry {
	layers := []struct {
		values func(string) (string, bool)
		source Source
	}{
		{mapGet(b.dynNode), SourceDynamicBroker},
		{mapGet(b.dynDefault), SourceDynamicDefaultBroker},
		{mapGet(b.static), SourceStaticBroker},
		{brokerDefaultString, SourceDefault},
	}
	var out []SynonymEntry
	for _, l := range layers {
		for _, n := range names {
			v, ok := l.values(n)
			if !ok {
				continue
			}
			s := SynonymEntry{Name: n, Source: l.source}
			if !sensitive {
				s.Value = &v
			}
			out = append(out, s)
		}
	}
	for i := range out {
		if out[i].Name == name {
			return out[i:]
		}
	}
	return nil
}

func mapGet(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) {
		v, ok := m[k]
		return v, ok
	}
}

// brokerDefaultString is Kafka's default of a broker config as a string;
// null defaults are absent, as in Kafka's table of defaults.
func brokerDefaultString(name string) (string, bool) {
	d, ok := brokerDefs.get(name)
	if !ok || d.def.IsNull() {
		return "", false
	}
	return d.def.String(), true
}

// DescribeTopic answers DescribeConfigs for one topic given its stored
// overrides. The handler checks first that the name is valid
// (INVALID_TOPIC_EXCEPTION) and that the topic exists
// (UNKNOWN_TOPIC_OR_PARTITION). Every topic config is listed, read-write,
// with its effective value; the source is DYNAMIC_TOPIC_CONFIG for an
// override, else that of the broker setting it falls back to, else
// DEFAULT_CONFIG. Entries are sorted by name.
func (b *Broker) DescribeTopic(overrides map[string]string, o DescribeOptions) ([]Entry, *Error) {
	values, e := b.topicValues(overrides)
	if e != nil {
		return nil, e
	}
	var out []Entry
	for _, d := range topicDefs.list {
		if !o.wants(d.Name) {
			continue
		}
		value := optional(values[d.Name])
		if d.Sensitive() {
			value = nil
		}
		var syns []SynonymEntry
		if _, ok := overrides[d.Name]; ok {
			syns = append(syns, SynonymEntry{Name: d.Name, Value: value, Source: SourceTopic})
		}
		if len(d.Synonyms) > 0 {
			first := d.Synonyms[0].Name
			syns = append(syns, b.configSynonyms(first, brokerSynonymNames(first), d.Sensitive())...)
		}
		out = append(out, b.entry(d, d.Name, value, false, syns, o))
	}
	sortEntries(out)
	return out, nil
}

// DescribeBroker answers DescribeConfigs for a BROKER resource. The name
// "" describes the cluster-wide dynamic defaults (only those set, with
// only cluster-wide synonyms); this node's id describes every broker
// config with its effective value. Any other name is INVALID_REQUEST, as
// in Kafka. Keys weir does not know (from the properties file or set
// dynamically) are listed as Kafka lists unknown keys: sensitive (value
// hidden), read-only, of unknown type.
func (b *Broker) DescribeBroker(resourceName string, o DescribeOptions) ([]Entry, *Error) {
	perNode := resourceName != ""
	if perNode {
		id, err := strconv.ParseInt(resourceName, 10, 32)
		if err != nil {
			return nil, invalidRequest("Broker id must be an integer, but it is: " + resourceName)
		}
		if int32(id) != b.NodeID() {
			return nil, invalidRequest("Unexpected broker id, expected " + itoa(int64(b.NodeID())) + " or empty string, but received " + resourceName)
		}
	}
	names := maps.Clone(b.dynDefault)
	if perNode {
		for _, m := range []map[string]string{b.static, b.dynNode} {
			maps.Copy(names, m)
		}
		for _, d := range brokerDefs.list {
			names[d.Name] = ""
		}
	}
	var out []Entry
	for _, name := range slices.Sorted(maps.Keys(names)) {
		if !o.wants(name) {
			continue
		}
		d, known := brokerDefs.get(name)
		sensitive := !known || d.Sensitive()
		var value *string
		switch {
		case sensitive:
		case perNode:
			value = optional(b.values[name])
		default:
			v := b.dynDefault[name]
			value = &v
		}
		syns := b.configSynonyms(name, brokerSynonymNames(name), sensitive)
		if !perNode {
			syns = slices.DeleteFunc(syns, func(s SynonymEntry) bool { return s.Source != SourceDynamicDefaultBroker })
		}
		if !known {
			d = &Def{Name: name}
		}
		out = append(out, b.entry(d, name, value, !d.Dynamic, syns, o))
	}
	return out, nil
}

// entry builds one described config; its source is that of the first
// synonym, or DEFAULT_CONFIG when there is none.
func (b *Broker) entry(d *Def, name string, value *string, readOnly bool, syns []SynonymEntry, o DescribeOptions) Entry {
	e := kmsg.NewDescribeConfigsResponseResourceConfig()
	e.Name = name
	e.Value = value
	e.ReadOnly = readOnly
	e.Source = SourceDefault
	if len(syns) > 0 {
		e.Source = syns[0].Source
	}
	e.IsDefault = e.Source == SourceDefault // only v0 carries it
	e.IsSensitive = d.Type == 0 || d.Sensitive()
	if o.IncludeSynonyms {
		e.ConfigSynonyms = syns
	}
	e.ConfigType = d.Type
	if o.IncludeDocumentation && d.Doc != "" {
		doc := d.Doc
		e.Documentation = &doc
	}
	return e
}

func optional(v Value) *string {
	s, ok := v.canonical()
	if !ok {
		return nil
	}
	return &s
}

func sortEntries(es []Entry) {
	slices.SortFunc(es, func(a, b Entry) int {
		switch {
		case a.Name < b.Name:
			return -1
		case a.Name > b.Name:
			return 1
		}
		return 0
	})
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
