package config

import (
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Broker is one node's broker configuration: the static properties it
// started with and the dynamic overrides set later through
// (Incremental)AlterConfigs, cluster-wide (resource name "") and for this
// node. A Broker is immutable; changes return a new one, so a holder can
// swap it atomically and readers never lock.
type Broker struct {
	static     map[string]string // server.properties and command-line overrides, raw
	dynDefault map[string]string // dynamic, cluster-wide, raw
	dynNode    map[string]string // dynamic, this node, raw
	values     map[string]Value  // effective value of every known config
	listeners  []Listener
	advertised []Listener
}

// Listener is one entry of listeners or advertised.listeners.
type Listener struct {
	Name             string // upper case, as Kafka normalises it
	Host             string // "" binds every interface
	Port             int
	SecurityProtocol string
}

// Addr is host:port, suitable for net.Listen.
func (l Listener) Addr() string { return joinHostPort(l.Host, l.Port) }

// NewBroker validates static broker properties (already merged with any
// command-line overrides) the way Kafka's KafkaConfig does and returns the
// configuration. Keys that are not broker configs are kept (Kafka passes
// them to plugins); UnknownKeys lists them so the caller can warn.
func NewBroker(static map[string]string) (*Broker, error) {
	b := &Broker{static: maps.Clone(static), dynDefault: map[string]string{}, dynNode: map[string]string{}}
	if b.static == nil {
		b.static = map[string]string{}
	}
	var errs []error
	for _, d := range brokerDefs.list {
		if raw, ok := b.static[d.Name]; ok {
			if _, msg := d.parse(raw); msg != "" {
				errs = append(errs, &KeyError{Key: d.Name, Msg: msg})
			}
		}
	}
	errs = append(errs, checkListenerKeys(b.static)...)
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	if err := b.resolve(); err != nil {
		return nil, err
	}
	return b, nil
}

// KeyError is a broker property that failed validation.
type KeyError struct {
	Key string
	Msg string
}

func (e *KeyError) Error() string { return e.Msg }

// UnknownKeys lists the static keys that are not broker configs, sorted.
// Kafka logs these as supplied but unused.
func (b *Broker) UnknownKeys() []string {
	var out []string
	for k := range b.static {
		if _, ok := brokerDefs.get(k); ok {
			continue
		}
		if _, _, _, ok := splitListenerKey(k); !ok {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// resolve computes the effective values (static, then cluster-wide
// dynamic, then per-node dynamic, each key on its own) and checks the
// rules that span several keys.
func (b *Broker) resolve() error {
	b.values = make(map[string]Value, len(brokerDefs.list))
	for _, d := range brokerDefs.list {
		v := d.def
		for _, layer := range []map[string]string{b.static, b.dynDefault, b.dynNode} {
			if raw, ok := layer[d.Name]; ok {
				if pv, msg := d.parse(raw); msg == "" {
					v = pv
				}
			}
		}
		b.values[d.Name] = v
	}
	var errs []error
	req := func(ok bool, key, msg string) {
		if !ok {
			errs = append(errs, &KeyError{Key: key, Msg: msg})
		}
	}
	req(b.NodeID() >= 0, NodeID, "Missing configuration `node.id` which is required when running in KRaft mode.")
	req(b.topicDefault(SegmentMs).i >= 1, "log.roll.ms", "log.roll.ms must be greater than or equal to 1")
	req(b.topicDefault("segment.jitter.ms").i >= 0, "log.roll.jitter.ms", "log.roll.jitter.ms must be greater than or equal to 0")
	ret := b.topicDefault(RetentionMs).i
	req(ret >= 1 || ret == -1, "log.retention.ms", "log.retention.ms must be unlimited (-1) or, greater than or equal to 1")
	req(len(b.LogDirs()) > 0, LogDirs, "At least one log directory must be defined via log.dirs or log.dir.")
	for _, g := range [][2]string{{GroupConsumerHeartbeat, GroupConsumerSession}, {GroupStreamsHeartbeat, GroupStreamsSession}} {
		req(b.mustValue(g[0]).i < b.mustValue(g[1]).i, g[0], g[0]+" must be less than "+g[1])
	}
	if err := b.parseListeners(); err != nil {
		errs = append(errs, err)
	} else {
		errs = append(errs, b.checkSecurity()...)
	}
	return errors.Join(errs...)
}

// Value returns the effective value of a broker config, and false when
// weir does not know the name.
func (b *Broker) Value(name string) (Value, bool) {
	v, ok := b.values[name]
	return v, ok
}

func (b *Broker) mustValue(name string) Value {
	v, ok := b.values[name]
	if !ok {
		panic("config: no broker config " + name) // a typo in weir's code
	}
	return v
}

// NodeID is node.id.
func (b *Broker) NodeID() int32 { return int32(b.mustValue(NodeID).i) }

// Listeners are the parsed listeners.
func (b *Broker) Listeners() []Listener { return slices.Clone(b.listeners) }

// AdvertisedListeners are advertised.listeners, or listeners when unset.
func (b *Broker) AdvertisedListeners() []Listener { return slices.Clone(b.advertised) }

// LogDirs is log.dirs, or log.dir when log.dirs is unset.
func (b *Broker) LogDirs() []string {
	if v := b.mustValue(LogDirs); !v.IsNull() {
		return v.Strings()
	}
	return b.mustValue(LogDir).Strings()
}

// Rack is broker.rack, "" when unset.
func (b *Broker) Rack() string { return b.mustValue(BrokerRack).s }

// Int returns an Int or Short broker config.
func (b *Broker) Int(name string) int32 { return int32(b.mustValue(name).i) }

// Long returns a Long broker config.
func (b *Broker) Long(name string) int64 { return b.mustValue(name).i }

// Bool returns a Boolean broker config.
func (b *Broker) Bool(name string) bool { return b.mustValue(name).b }

// Millis returns a millisecond Int or Long broker config as a duration.
func (b *Broker) Millis(name string) time.Duration { return msDuration(b.mustValue(name).i) }

// msDuration converts milliseconds, saturating instead of overflowing.
func msDuration(ms int64) time.Duration {
	if ms > infiniteMs {
		ms = infiniteMs
	}
	if ms < -infiniteMs {
		ms = -infiniteMs
	}
	return time.Duration(ms) * time.Millisecond
}

// topicDefault is the broker's default for a topic config: the first of
// its synonyms that is set, converted to the topic's unit, or the topic
// config's own default when it has no broker synonym set.
func (b *Broker) topicDefault(name string) Value {
	d, _ := topicDefs.get(name)
	for _, s := range d.Synonyms {
		v := b.mustValue(s.Name)
		if v.IsNull() {
			continue
		}
		if s.Scale > 1 {
			v = Value{typ: d.Type, i: v.i * s.Scale}
		} else {
			v.typ = d.Type
		}
		if name == RetentionMs && v.i < 0 {
			v.i = -1 // any negative broker retention means forever
		}
		return v
	}
	return d.def
}

// DynamicConfigs returns a copy of the dynamic overrides: the cluster-wide
// ones when node is false, this node's otherwise.
func (b *Broker) DynamicConfigs(node bool) map[string]string {
	if node {
		return maps.Clone(b.dynNode)
	}
	return maps.Clone(b.dynDefault)
}

// StaticConfigs returns a copy of the static properties.
func (b *Broker) StaticConfigs() map[string]string { return maps.Clone(b.static) }

// WithDynamic returns the configuration with its dynamic overrides
// replaced, as replayed from where they are stored. Like Kafka when it
// loads them, it drops entries that do not parse or may not be set
// dynamically, and returns why so the caller can log it.
func (b *Broker) WithDynamic(clusterDefault, node map[string]string) (*Broker, []string) {
	var dropped []string
	clean := func(in map[string]string, perNode bool) map[string]string {
		out := make(map[string]string, len(in))
		for _, k := range slices.Sorted(maps.Keys(in)) {
			if e := checkDynamicBroker(map[string]string{k: in[k]}, perNode); e != nil {
				dropped = append(dropped, e.Message)
				continue
			}
			out[k] = in[k]
		}
		return out
	}
	nb := &Broker{static: b.static, dynDefault: clean(clusterDefault, false), dynNode: clean(node, true)}
	if err := nb.resolve(); err != nil {
		// The layers are individually valid but break a rule spanning
		// keys (say log.retention.ms=0 reached through minutes); keep
		// the old dynamic state rather than run with a broken one.
		return b, append(dropped, "ignoring dynamic broker configs: "+err.Error())
	}
	return nb, dropped
}

// listenerRE is Kafka's endpoint syntax: NAME://host:port with an
// optional [IPv6] host.
var listenerRE = regexp.MustCompile(`^(.*)://\[?([0-9a-zA-Z\-%._:]*?)\]?:(-?[0-9]+)$`)

func parseListenerList(key, raw string) ([]Listener, error) {
	s := javaTrim(raw)
	if s == "" {
		return nil, nil
	}
	var out []Listener
	seen := map[string]bool{}
	for _, item := range listSplit.Split(s, -1) {
		m := listenerRE.FindStringSubmatch(item)
		if m == nil {
			return nil, &KeyError{Key: key, Msg: fmt.Sprintf("Unable to parse %s to a broker endpoint", item)}
		}
		port, err := strconv.Atoi(m[3])
		if err != nil || port < 0 || port > 65535 {
			return nil, &KeyError{Key: key, Msg: fmt.Sprintf("Invalid value %s for configuration %s: port %s is out of range", raw, key, m[3])}
		}
		name := strings.ToUpper(m[1])
		if seen[name] {
			return nil, &KeyError{Key: key, Msg: fmt.Sprintf("Each listener must have a different name, %s: %s", key, raw)}
		}
		seen[name] = true
		out = append(out, Listener{Name: name, Host: m[2], Port: port})
	}
	return out, nil
}

func (b *Broker) parseListeners() error {
	protocols := map[string]string{}
	for _, pair := range listSplit.Split(javaTrim(b.mustValue(ListenerSecurityMap).s), -1) {
		if pair == "" {
			continue
		}
		name, proto, ok := strings.Cut(pair, ":")
		if !ok || name == "" || proto == "" {
			return &KeyError{Key: ListenerSecurityMap, Msg: fmt.Sprintf("Invalid value %s for configuration %s: map entry %q is not NAME:PROTOCOL", b.mustValue(ListenerSecurityMap).s, ListenerSecurityMap, pair)}
		}
		protocols[strings.ToUpper(javaTrim(name))] = strings.ToUpper(javaTrim(proto))
	}
	ls, err := parseListenerList(Listeners, b.mustValue(Listeners).s)
	if err != nil {
		return err
	}
	adv := ls
	if v := b.mustValue(AdvertisedListeners); !v.IsNull() {
		if adv, err = parseListenerList(AdvertisedListeners, v.s); err != nil {
			return err
		}
	}
	names := map[string]bool{}
	for i := range ls {
		p, ok := protocols[ls[i].Name]
		if !ok {
			return &KeyError{Key: Listeners, Msg: fmt.Sprintf("No security protocol defined for listener %s in %s", ls[i].Name, ListenerSecurityMap)}
		}
		ls[i].SecurityProtocol = p
		names[ls[i].Name] = true
	}
	for i := range adv {
		if !names[adv[i].Name] {
			return &KeyError{Key: AdvertisedListeners, Msg: fmt.Sprintf("%s listener names must be equal to or a subset of the ones defined in %s. Found %s.", AdvertisedListeners, Listeners, adv[i].Name)}
		}
		adv[i].SecurityProtocol = protocols[adv[i].Name]
	}
	b.listeners, b.advertised = ls, adv
	return nil
}

func joinHostPort(host string, port int) string {
	if strings.Contains(host, ":") {
		return "[" + host + "]:" + strconv.Itoa(port)
	}
	return host + ":" + strconv.Itoa(port)
}
