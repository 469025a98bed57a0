package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"

	"weir/internal/auth"
	"weir/internal/auth/scram"
	"weir/internal/broker"
	"weir/internal/config"
	"weir/internal/server"
)

// buildListeners turns the listeners of the broker's settings into the
// server's, each with its security (internal/auth).
func buildListeners(settings *config.Broker, deps auth.Deps) ([]server.Listener, []*auth.Listener, error) {
	var out []server.Listener
	var secs []*auth.Listener
	for _, l := range settings.Listeners() {
		sec, err := auth.NewListener(settings, l, deps)
		if err != nil {
			return nil, nil, err
		}
		out = append(out, server.Listener{Name: l.Name, Addr: l.Addr(), Security: sec})
		secs = append(secs, sec)
	}
	return out, secs, nil
}

// securityProtocolIDs are Kafka's ids of the security protocols, as
// broker registrations carry them.
var securityProtocolIDs = map[string]int16{"PLAINTEXT": 0, "SSL": 1, "SASL_PLAINTEXT": 2, "SASL_SSL": 3}

// parseListen reads --listen: host:port, a PLAINTEXT listener, or
// PROTOCOL://host:port with one of Kafka's security protocols (any case).
// It returns the protocol in upper case and the address.
func parseListen(s string) (proto, addr string, err error) {
	proto, addr = "PLAINTEXT", s
	if p, a, ok := strings.Cut(s, "://"); ok {
		proto, addr = strings.ToUpper(p), a
		if _, known := securityProtocolIDs[proto]; !known {
			return "", "", fmt.Errorf("unknown security protocol %q: want PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL", p)
		}
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", "", fmt.Errorf("want host:port or PROTOCOL://host:port: %v", err)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return "", "", fmt.Errorf("port %q is not a number from 0 to 65535", port)
	}
	return proto, net.JoinHostPort(host, port), nil
}

// brokerListeners are the endpoints the broker registers, and the name of
// the one other brokers reach it on: every advertised listener at its
// advertised host and port (a host name is kept as it is written), the
// bound ones where it names none. --advertise (override) is what clients
// are told: the inter-broker listener is registered at it, and, when
// the listener is bound to a definite address, that address is
// registered too, under the name ib+"_BOUND", for the other brokers, so
// that they reach this one directly rather than through whatever the
// advertised address fronts (a proxy, a load balancer).
func brokerListeners(settings *config.Broker, srv *server.Server, ib string, override net.Addr) ([]broker.Listener, string) {
	var out []broker.Listener
	interBroker := ib
	for _, a := range settings.AdvertisedListeners() {
		bound, _ := srv.ListenerAddr(a.Name).(*net.TCPAddr)
		if bound == nil {
			continue
		}
		host, port := bound.IP.String(), bound.Port
		if a.Host != "" {
			host = a.Host
		}
		if a.Port != 0 {
			port = a.Port
		}
		proto := securityProtocolIDs[a.SecurityProtocol]
		if o, ok := override.(*net.TCPAddr); ok && a.Name == ib {
			if !bound.IP.IsUnspecified() && (o.IP.String() != bound.IP.String() || o.Port != bound.Port) {
				interBroker = ib + boundSuffix
				out = append(out, broker.Listener{Name: interBroker, Host: bound.IP.String(), Port: int32(bound.Port), SecurityProtocol: proto})
			}
			host, port = o.IP.String(), o.Port
		}
		out = append(out, broker.Listener{Name: a.Name, Host: host, Port: int32(port), SecurityProtocol: proto})
	}
	return out, interBroker
}

// boundSuffix names the endpoint of the inter-broker listener's bound
// address, registered beside the one --advertise gives clients.
const boundSuffix = "_BOUND"

// interBrokerDial is how this broker dials the others' inter-broker
// listener: with that listener's TLS and sasl.mechanism.inter.broker.
// protocol, or nil (plain TCP) for a PLAINTEXT listener.
func interBrokerDial(settings *config.Broker) (func(ctx context.Context, network, addr string) (net.Conn, error), error) {
	ib := settings.InterBrokerListener()
	if ib.SecurityProtocol == "" || ib.SecurityProtocol == "PLAINTEXT" {
		return nil, nil
	}
	mech, _ := settings.Value(config.SaslMechanismInterBroker)
	c, err := auth.InterBrokerClient(settings, ib, mech.Str())
	if err != nil {
		return nil, err
	}
	return c.Dial, nil
}

// advertisedAddr is the address the broker registers for a listener: its
// advertised.listeners entry, with the bound port when that says 0 and
// the bound host when it names none.
func advertisedAddr(settings *config.Broker, name string, bound net.Addr) net.Addr {
	tcp, _ := bound.(*net.TCPAddr)
	for _, a := range settings.AdvertisedListeners() {
		if a.Name != name || tcp == nil {
			continue
		}
		out := &net.TCPAddr{IP: tcp.IP, Port: tcp.Port}
		if a.Host != "" {
			if ip := net.ParseIP(a.Host); ip != nil {
				out.IP = ip
			}
		}
		if a.Port != 0 {
			out.Port = a.Port
		}
		return out
	}
	return bound
}

// scramFlags collects --add-scram values, in kafka-storage's syntax:
// 'SCRAM-SHA-256=[name=alice,password=alice-secret]', optionally with
// iterations=N and salt=BASE64.
type scramFlags struct {
	mu    sync.Mutex
	creds map[string]scram.Credential // "mechanism/user"
}

func (f *scramFlags) String() string { return "" }

func (f *scramFlags) Set(s string) error {
	mech, rest, ok := strings.Cut(s, "=")
	m, known := scram.ByName(strings.TrimSpace(mech))
	if !ok || !known {
		return fmt.Errorf("want SCRAM-SHA-256=[name=...,password=...] or SCRAM-SHA-512=[...], got %q", s)
	}
	rest = strings.TrimSpace(rest)
	if !strings.HasPrefix(rest, "[") || !strings.HasSuffix(rest, "]") {
		return fmt.Errorf("%q: the credential goes in [ ]", s)
	}
	kv := map[string]string{}
	for _, part := range strings.Split(rest[1:len(rest)-1], ",") {
		k, v, ok := strings.Cut(part, "=")
		if !ok {
			return fmt.Errorf("%q: %q is not key=value", s, part)
		}
		kv[strings.TrimSpace(k)] = strings.Trim(strings.TrimSpace(v), `"`)
	}
	name, password := kv["name"], kv["password"]
	if name == "" || password == "" {
		return fmt.Errorf("%q: name and password are required", s)
	}
	iterations := scram.MinIterations
	if v, ok := kv["iterations"]; ok {
		n, err := strconv.Atoi(v)
		if err != nil {
			return fmt.Errorf("%q: iterations %q is not a number", s, v)
		}
		iterations = n
	}
	salt := make([]byte, 32)
	if v, ok := kv["salt"]; ok {
		var err error
		if salt, err = base64.StdEncoding.DecodeString(v); err != nil || len(salt) == 0 {
			return fmt.Errorf("%q: salt is not base64", s)
		}
	} else {
		rand.Read(salt)
	}
	cred, err := m.NewCredential(password, salt, iterations)
	if err != nil {
		return fmt.Errorf("%q: %w", s, err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.creds == nil {
		f.creds = map[string]scram.Credential{}
	}
	f.creds[m.Name()+"/"+name] = cred
	return nil
}

// lookup serves the credentials given on the command line.
func (f *scramFlags) lookup(mechanism, user string) (scram.Credential, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, ok := f.creds[mechanism+"/"+user]
	return c, ok
}

// logListeners says what each listener serves.
func logListeners(logger *slog.Logger, srv *server.Server, secs []*auth.Listener) {
	for _, s := range secs {
		logger.Info("listener", "name", s.Name(), "security_protocol", s.Protocol(), "addr", srv.ListenerAddr(s.Name()).String())
	}
}

// boundPorts are the ports weir serve binds before the broker starts.
type boundPorts struct {
	kafka          []net.Listener // one per server listener, in order
	metrics, pprof net.Listener   // nil when not asked for
}

// bindPorts binds the Kafka listeners and the metrics and pprof ports;
// on a failure it closes what it bound and names the port that failed.
func bindPorts(listeners []server.Listener, metricsAddr, pprofAddr string) (*boundPorts, error) {
	b := &boundPorts{}
	bind := func(what, addr string) (net.Listener, error) {
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			b.close()
			return nil, fmt.Errorf("%s: cannot listen on %s: %w", what, addr, err)
		}
		return ln, nil
	}
	for _, l := range listeners {
		ln, err := bind("listener "+l.Name, l.Addr)
		if err != nil {
			return nil, err
		}
		b.kafka = append(b.kafka, ln)
	}
	var err error
	if metricsAddr != "" {
		if b.metrics, err = bind("metrics listener", metricsAddr); err != nil {
			return nil, err
		}
	}
	if pprofAddr != "" {
		if b.pprof, err = bind("pprof listener", pprofAddr); err != nil {
			return nil, err
		}
	}
	return b, nil
}

// close closes every port still bound here.
func (b *boundPorts) close() {
	for _, ln := range append(b.kafka, b.metrics, b.pprof) {
		if ln != nil {
			ln.Close()
		}
	}
}
