package client

import (
	"context"
	"fmt"
	"math"
	"net"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"weir/internal/auth"
)

// ConfigError reports a bad property, naming the key as the Java client's
// ConfigException does.
type ConfigError struct {
	Key    string
	Value  string
	Reason string
}

func (e *ConfigError) Error() string {
	if e.Value == "" {
		return fmt.Sprintf("invalid configuration %s: %s", e.Key, e.Reason)
	}
	return fmt.Sprintf("invalid value %s for configuration %s: %s", e.Value, e.Key, e.Reason)
}

// propKind is a property's type.
type propKind uint8

const (
	kString propKind = iota
	kInt             // 32-bit
	kLong            // 64-bit
	kBool
	kList
)

// prop declares one property: its type, default and, for numbers, the
// accepted range; for strings, the accepted values (nil: any).
type prop struct {
	kind     propKind
	def      string
	min, max int64
	oneOf    []string
}

func intProp(def string, lo int64) prop {
	return prop{kind: kInt, def: def, min: lo, max: math.MaxInt32}
}
func longProp(def string, lo int64) prop {
	return prop{kind: kLong, def: def, min: lo, max: math.MaxInt64}
}
func boolProp(def string) prop { return prop{kind: kBool, def: def} }
func strProp(def string, oneOf ...string) prop {
	return prop{kind: kString, def: def, oneOf: oneOf}
}

// commonProps are understood by producer, consumer and admin alike.
var commonProps = map[string]prop{
	"bootstrap.servers":                      {kind: kList},
	"client.id":                              strProp(""),
	"client.rack":                            strProp(""),
	"request.timeout.ms":                     intProp("30000", 0),
	"retry.backoff.ms":                       longProp("100", 0),
	"retry.backoff.max.ms":                   longProp("1000", 0),
	"reconnect.backoff.ms":                   longProp("50", 0),
	"reconnect.backoff.max.ms":               longProp("1000", 0),
	"metadata.max.age.ms":                    longProp("300000", 0),
	"socket.connection.setup.timeout.ms":     longProp("10000", 0),
	"socket.connection.setup.timeout.max.ms": longProp("30000", 0),
	"connections.max.idle.ms":                longProp("540000", -1),
	"security.protocol":                      strProp("PLAINTEXT", "PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"),
	"sasl.mechanism":                         strProp("GSSAPI"),
	"sasl.jaas.config":                       strProp(""),
	"ssl.keystore.type":                      strProp("JKS", "JKS", "PKCS12", "PEM"),
	"ssl.keystore.location":                  strProp(""),
	"ssl.keystore.password":                  strProp(""),
	"ssl.key.password":                       strProp(""),
	"ssl.keystore.certificate.chain":         strProp(""),
	"ssl.keystore.key":                       strProp(""),
	"ssl.truststore.type":                    strProp("JKS", "JKS", "PKCS12", "PEM"),
	"ssl.truststore.location":                strProp(""),
	"ssl.truststore.password":                strProp(""),
	"ssl.truststore.certificates":            strProp(""),
	"ssl.enabled.protocols":                  {kind: kList, def: "TLSv1.2,TLSv1.3"},
	"ssl.protocol":                           strProp("TLSv1.3"),
	"ssl.cipher.suites":                      {kind: kList},
	"ssl.endpoint.identification.algorithm":  strProp("https"),
	"receive.buffer.bytes":                   intProp("65536", -1),
	"send.buffer.bytes":                      intProp("131072", -1),
}

// props is a parsed property map: every known key has a value (the default
// when unset), and set records which keys the user gave.
type props struct {
	v   map[string]string
	set map[string]bool
	sec *auth.ClientSecurity
}

// parseProps validates m against the common properties plus extra. Unknown
// keys, values of the wrong type and values out of range fail with a
// ConfigError naming the key.
func parseProps(m map[string]string, extra map[string]prop) (props, error) {
	defs := make(map[string]prop, len(commonProps)+len(extra))
	for k, d := range commonProps {
		defs[k] = d
	}
	for k, d := range extra {
		defs[k] = d
	}
	p := props{v: make(map[string]string, len(defs)), set: make(map[string]bool, len(m))}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys) // report the first bad key deterministically
	for _, k := range keys {
		d, ok := defs[k]
		if !ok {
			return props{}, &ConfigError{Key: k, Reason: "unknown configuration"}
		}
		v := strings.TrimSpace(m[k])
		if err := d.check(k, v); err != nil {
			return props{}, err
		}
		p.v[k], p.set[k] = v, true
	}
	for k, d := range defs {
		if !p.set[k] {
			p.v[k] = d.def
		}
	}
	if len(p.list("bootstrap.servers")) == 0 {
		return props{}, &ConfigError{Key: "bootstrap.servers", Reason: "missing required configuration which has no default value"}
	}
	for _, a := range p.list("bootstrap.servers") {
		if i := strings.LastIndexByte(a, ':'); i <= 0 || i == len(a)-1 {
			return props{}, &ConfigError{Key: "bootstrap.servers", Value: a, Reason: "expected host:port"}
		}
	}
	secProps := map[string]string{}
	for _, k := range auth.ClientProperties {
		if p.set[k] {
			secProps[k] = p.v[k]
		}
	}
	sec, err := auth.NewClientSecurity(secProps)
	if err != nil {
		return props{}, &ConfigError{Key: "security.protocol", Value: p.v["security.protocol"], Reason: err.Error()}
	}
	sec.ClientID = p.v["client.id"]
	p.sec = sec
	return p, nil
}

func (d prop) check(k, v string) error {
	switch d.kind {
	case kInt, kLong:
		bits := 64
		if d.kind == kInt {
			bits = 32
		}
		n, err := strconv.ParseInt(v, 10, bits)
		if err != nil {
			typ := "long"
			if d.kind == kInt {
				typ = "int"
			}
			return &ConfigError{Key: k, Value: v, Reason: "expected a value of type " + typ}
		}
		if n < d.min || n > d.max {
			if d.max == math.MaxInt32 || d.max == math.MaxInt64 {
				return &ConfigError{Key: k, Value: v, Reason: fmt.Sprintf("value must be at least %d", d.min)}
			}
			return &ConfigError{Key: k, Value: v, Reason: fmt.Sprintf("value must be in [%d,...,%d]", d.min, d.max)}
		}
	case kBool:
		if !strings.EqualFold(v, "true") && !strings.EqualFold(v, "false") {
			return &ConfigError{Key: k, Value: v, Reason: "expected value to be either true or false"}
		}
	case kString:
		if d.oneOf != nil && !slices.Contains(d.oneOf, v) && !slices.Contains(d.oneOf, strings.ToLower(v)) {
			return &ConfigError{Key: k, Value: v, Reason: "string must be one of: " + strings.Join(d.oneOf, ", ")}
		}
	}
	return nil
}

func (p props) str(k string) string { return p.v[k] }

func (p props) int(k string) int {
	n, _ := strconv.ParseInt(p.v[k], 10, 64)
	return int(n)
}

func (p props) long(k string) int64 {
	n, _ := strconv.ParseInt(p.v[k], 10, 64)
	return n
}

func (p props) ms(k string) time.Duration { return time.Duration(p.long(k)) * time.Millisecond }

func (p props) bool(k string) bool { return strings.EqualFold(p.v[k], "true") }

func (p props) list(k string) []string {
	var out []string
	for _, s := range strings.Split(p.v[k], ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// commonConfig is what the core (core.go) needs.
type commonConfig struct {
	bootstrap        []string
	clientID         string
	rack             string
	requestTimeout   time.Duration
	retryBackoff     time.Duration
	retryBackoffMax  time.Duration
	reconnectBackoff time.Duration
	reconnectMax     time.Duration
	metadataMaxAge   time.Duration
	dialTimeout      time.Duration
	maxIdle          time.Duration // connections.max.idle.ms; 0 or less: never
	// dialer connects and runs the TLS handshake and SASL exchange
	// security.protocol asks for; nil for PLAINTEXT.
	dialer func(ctx context.Context, network, addr string) (net.Conn, error)
}

func (p props) common() commonConfig {
	return commonConfig{
		bootstrap:        p.list("bootstrap.servers"),
		clientID:         p.str("client.id"),
		rack:             p.str("client.rack"),
		requestTimeout:   p.ms("request.timeout.ms"),
		retryBackoff:     p.ms("retry.backoff.ms"),
		retryBackoffMax:  max(p.ms("retry.backoff.max.ms"), p.ms("retry.backoff.ms")),
		reconnectBackoff: p.ms("reconnect.backoff.ms"),
		reconnectMax:     max(p.ms("reconnect.backoff.max.ms"), p.ms("reconnect.backoff.ms")),
		metadataMaxAge:   p.ms("metadata.max.age.ms"),
		dialTimeout:      p.ms("socket.connection.setup.timeout.ms"),
		maxIdle:          p.ms("connections.max.idle.ms"),
		dialer:           p.dialer(),
	}
}

func (p props) dialer() func(ctx context.Context, network, addr string) (net.Conn, error) {
	if p.sec == nil || p.sec.Protocol == "PLAINTEXT" {
		return nil
	}
	return p.sec.Dial
}
