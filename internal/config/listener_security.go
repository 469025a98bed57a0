package config

import (
	"fmt"
	"slices"
	"strings"
)

// saslMechanismPrefixes are the lower-case mechanism names Kafka puts
// between a listener prefix and a SASL config
// (listener.name.sasl_ssl.plain.sasl.jaas.config).
var saslMechanismPrefixes = []string{"plain", "scram-sha-256", "scram-sha-512", "oauthbearer", "gssapi"}

const listenerKeyPrefix = "listener.name."

// splitListenerKey reads listener.name.<listener>.[<mechanism>.]<config>
// where <config> is a security config. The listener comes back upper
// case, the mechanism as written.
func splitListenerKey(key string) (listener, mechanism, base string, ok bool) {
	rest, found := strings.CutPrefix(key, listenerKeyPrefix)
	if !found {
		return "", "", "", false
	}
	l, rest, found := strings.Cut(rest, ".")
	if !found || l == "" {
		return "", "", "", false
	}
	if isSecurityDef(rest) {
		return strings.ToUpper(l), "", rest, true
	}
	for _, m := range saslMechanismPrefixes {
		if b, found := strings.CutPrefix(rest, m+"."); found && isSecurityDef(b) {
			return strings.ToUpper(l), m, b, true
		}
	}
	return "", "", "", false
}

func isSecurityDef(name string) bool {
	return slices.ContainsFunc(securityDefs, func(d Def) bool { return d.Name == name })
}

// ListenerKey is the listener-prefixed name of a security config, as an
// operator sets it: listener.name.<lower-case listener>.<config>.
func ListenerKey(listener, name string) string {
	return listenerKeyPrefix + strings.ToLower(listener) + "." + name
}

// ListenerMechanismKey is listener.name.<listener>.<mechanism>.<config>.
func ListenerMechanismKey(listener, mechanism, name string) string {
	return listenerKeyPrefix + strings.ToLower(listener) + "." + strings.ToLower(mechanism) + "." + name
}

// ListenerValue is a security config's effective value for one listener:
// listener.name.<listener>.<name> when set (this node's dynamic value,
// then the cluster-wide one, then the static one), else the broker-wide
// value of name.
func (b *Broker) ListenerValue(listener, name string) Value {
	if v, ok := b.prefixedValue(ListenerKey(listener, name), name); ok {
		return v
	}
	return b.mustValue(name)
}

// ListenerMechanismValue is a SASL config's value for one listener and
// mechanism: listener.name.<listener>.<mechanism>.<name>, else
// ListenerValue.
func (b *Broker) ListenerMechanismValue(listener, mechanism, name string) Value {
	if v, ok := b.prefixedValue(ListenerMechanismKey(listener, mechanism, name), name); ok {
		return v
	}
	return b.ListenerValue(listener, name)
}

// ListenerConfigs returns every listener-prefixed security key set for
// listener, with its raw effective value: what a change of the listener's
// configs compares.
func (b *Broker) ListenerConfigs(listener string) map[string]string {
	out := map[string]string{}
	for _, layer := range []map[string]string{b.static, b.dynDefault, b.dynNode} {
		for k, v := range layer {
			if l, _, _, ok := splitListenerKey(k); ok && l == strings.ToUpper(listener) {
				out[k] = v
			}
		}
	}
	return out
}

func (b *Broker) prefixedValue(key, base string) (Value, bool) {
	d, ok := brokerDefs.get(base)
	if !ok {
		panic("config: no broker config " + base) // a typo in weir's code
	}
	for _, layer := range []map[string]string{b.dynNode, b.dynDefault, b.static} {
		if raw, ok := layer[key]; ok {
			if v, msg := d.parse(raw); msg == "" {
				return v, true
			}
		}
	}
	return Value{}, false
}

// checkListenerKeys validates listener-prefixed security keys against
// their configs' rules.
func checkListenerKeys(props map[string]string) []error {
	var errs []error
	for _, k := range slices.Sorted(mapKeys(props)) {
		_, _, base, ok := splitListenerKey(k)
		if !ok {
			continue
		}
		d, _ := brokerDefs.get(base)
		if _, msg := d.parse(props[k]); msg != "" {
			errs = append(errs, &KeyError{Key: k, Msg: strings.Replace(msg, "configuration "+base, "configuration "+k, 1)})
		}
	}
	return errs
}

func mapKeys(m map[string]string) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// InterBrokerListener is the listener brokers use to reach each other:
// inter.broker.listener.name, else the listener named after
// security.inter.broker.protocol.
func (b *Broker) InterBrokerListener() Listener {
	name := b.interBrokerName()
	for _, l := range b.advertised {
		if l.Name == name {
			return l
		}
	}
	return Listener{Name: name}
}

func (b *Broker) interBrokerName() string {
	if v := b.mustValue(InterBrokerListenerName); !v.IsNull() {
		return strings.ToUpper(javaTrim(v.s))
	}
	return b.mustValue(SecurityInterBrokerProto).s
}

// ControllerListener is the listener the controller clients use: the
// first of controller.listener.names, else the inter-broker listener.
func (b *Broker) ControllerListener() Listener {
	if v := b.mustValue(ControllerListenerNames); !v.IsNull() && len(v.list) > 0 {
		name := strings.ToUpper(v.list[0])
		for _, l := range b.listeners {
			if l.Name == name {
				return l
			}
		}
	}
	return b.InterBrokerListener()
}

// checkSecurity holds the rules across listener and SASL keys that
// Kafka's KafkaConfig checks at start-up.
func (b *Broker) checkSecurity() []error {
	var errs []error
	add := func(key, msg string) { errs = append(errs, &KeyError{Key: key, Msg: msg}) }
	_, ibSet := b.static[InterBrokerListenerName]
	_, protoSet := b.static[SecurityInterBrokerProto]
	if ibSet && protoSet {
		add(InterBrokerListenerName, "Only one of inter.broker.listener.name and security.inter.broker.protocol should be set.")
	}
	var names []string
	for _, l := range b.advertised {
		names = append(names, l.Name)
	}
	ib := b.interBrokerName()
	if !slices.Contains(names, ib) {
		add(InterBrokerListenerName, fmt.Sprintf("%s must be a listener name defined in %s. The valid options based on currently configured listeners are %s",
			InterBrokerListenerName, AdvertisedListeners, strings.Join(names, ",")))
	}
	if v := b.mustValue(ControllerListenerNames); !v.IsNull() && len(v.list) > 0 {
		found := false
		for _, l := range b.listeners {
			found = found || l.Name == strings.ToUpper(v.list[0])
		}
		if !found {
			add(ControllerListenerNames, fmt.Sprintf("%s: %s is not one of the listeners; weir's controller answers on the broker's listeners", ControllerListenerNames, v.list[0]))
		}
	}
	if l := b.InterBrokerListener(); strings.HasPrefix(l.SecurityProtocol, "SASL_") {
		mech := b.mustValue(SaslMechanismInterBroker).s
		if !slices.Contains(b.ListenerValue(l.Name, SaslEnabledMechanisms).list, mech) {
			add(SaslMechanismInterBroker, fmt.Sprintf("%s must be included in %s when SASL is used for inter-broker communication", SaslMechanismInterBroker, SaslEnabledMechanisms))
		}
	}
	return errs
}
