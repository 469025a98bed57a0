package auth

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/auth/oauthbearer"
	"weir/internal/auth/sasl"
	"weir/internal/auth/scram"
	"weir/internal/config"
	"weir/internal/server"
)

// Deps are what a listener's security needs from the rest of the broker.
type Deps struct {
	// ScramCredential returns a user's SCRAM credential for a mechanism
	// (SCRAM-SHA-256, SCRAM-SHA-512): the credentials of the metadata
	// log, managed with AlterUserScramCredentials. Nil: no SCRAM user
	// exists.
	ScramCredential func(mechanism, user string) (scram.Credential, bool)
	// Now is the clock; nil means time.Now.
	Now    func() time.Time
	Logger *slog.Logger
}

// Listener is one listener's security: the server.Security of a
// PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL listener. Its TLS material
// and principal rules are swapped atomically by Reconfigure, so
// connections that open after a change use the new ones.
type Listener struct {
	name     string
	protocol string
	deps     Deps
	log      *slog.Logger

	tls   atomic.Pointer[tlsState] // SSL and SASL_SSL
	rules atomic.Pointer[PrincipalRules]
	sasl  atomic.Pointer[saslSetup] // SASL_PLAINTEXT and SASL_SSL
}

// tlsState is a loaded TLS configuration and what it was loaded from.
type tlsState struct {
	cfg      *tls.Config
	settings TLSSettings
	files    map[string]fileStamp
}

type fileStamp struct {
	size    int64
	modTime time.Time
}

// saslSetup is a SASL listener's mechanisms.
type saslSetup struct {
	mechanisms []string
	servers    map[string]func() (sasl.Server, error)
	reauth     map[string]time.Duration
	maxReceive int32
}

// NewListener builds a listener's security from the broker's settings.
// Everything a connection will need is loaded and checked here, so a bad
// keystore or JAAS entry fails the start, not the first client.
func NewListener(b *config.Broker, l config.Listener, deps Deps) (*Listener, error) {
	if deps.Now == nil {
		deps.Now = time.Now
	}
	if deps.Logger == nil {
		deps.Logger = slog.New(slog.DiscardHandler)
	}
	x := &Listener{name: l.Name, protocol: l.SecurityProtocol, deps: deps, log: deps.Logger.With("listener", l.Name)}
	switch x.protocol {
	case "PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL":
	default:
		return nil, fmt.Errorf("listener %s: unknown security protocol %q", l.Name, l.SecurityProtocol)
	}
	if err := x.load(b, true); err != nil {
		return nil, fmt.Errorf("listener %s: %w", l.Name, err)
	}
	return x, nil
}

// Name is the listener's name.
func (x *Listener) Name() string { return x.name }

// Protocol is the listener's security protocol.
func (x *Listener) Protocol() string { return x.protocol }

func (x *Listener) usesTLS() bool  { return x.protocol == "SSL" || x.protocol == "SASL_SSL" }
func (x *Listener) usesSASL() bool { return strings.HasPrefix(x.protocol, "SASL_") }

// Reconfigure applies changed settings (dynamic broker configs): the
// keystore and truststore are read again when their settings changed or
// a file they name changed on disk, as Kafka reloads them when an
// operator alters the listener's configs. On an error the listener keeps
// what it had. One goroutine at a time may call it (the broker's
// metadata loop, which applies dynamic configs in log order); Open may
// run concurrently.
func (x *Listener) Reconfigure(b *config.Broker) error {
	if err := x.load(b, false); err != nil {
		return fmt.Errorf("listener %s: %w", x.name, err)
	}
	return nil
}

func (x *Listener) load(b *config.Broker, first bool) error {
	rules, err := ParsePrincipalRules(b.ListenerValue(x.name, config.SslPrincipalRules).Str())
	if err != nil {
		return fmt.Errorf("%s: %w", config.SslPrincipalRules, err)
	}
	var ts *tlsState
	if x.usesTLS() {
		settings := listenerTLSSettings(b, x.name)
		if x.protocol == "SASL_SSL" {
			// KIP-684: SASL_SSL listeners ignore the broker-wide
			// ssl.client.auth; only the listener's own setting asks
			// SASL clients for a certificate.
			settings.ClientAuth = b.ListenerConfigs(x.name)[config.ListenerKey(x.name, config.SslClientAuth)]
		}
		old := x.tls.Load()
		if old == nil || !sameTLS(old, settings) {
			if ts, err = loadTLS(settings); err != nil {
				return err
			}
		}
	}
	var ss *saslSetup
	if x.usesSASL() && first {
		if ss, err = x.loadSASL(b); err != nil {
			return err
		}
	}
	x.rules.Store(rules)
	if ts != nil {
		x.tls.Store(ts)
		if !first {
			x.log.Info("listener certificates reloaded")
		}
	}
	if ss != nil {
		x.sasl.Store(ss)
	}
	return nil
}

func listenerTLSSettings(b *config.Broker, listener string) TLSSettings {
	v := func(name string) string { return b.ListenerValue(listener, name).Str() }
	return TLSSettings{
		KeystoreType:       v(config.SslKeystoreType),
		KeystoreLocation:   v(config.SslKeystoreLocation),
		KeystorePassword:   v(config.SslKeystorePassword),
		KeyPassword:        v(config.SslKeyPassword),
		KeystoreChain:      v(config.SslKeystoreChain),
		KeystoreKey:        v(config.SslKeystoreKey),
		TruststoreType:     v(config.SslTruststoreType),
		TruststoreLocation: v(config.SslTruststoreLocation),
		TruststorePassword: v(config.SslTruststorePassword),
		TruststoreCerts:    v(config.SslTruststoreCerts),
		ClientAuth:         v(config.SslClientAuth),
		EnabledProtocols:   b.ListenerValue(listener, config.SslEnabledProtocols).Strings(),
		CipherSuites:       b.ListenerValue(listener, config.SslCipherSuites).Strings(),
	}
}

func loadTLS(s TLSSettings) (*tlsState, error) {
	cfg, err := ServerTLS(s)
	if err != nil {
		return nil, err
	}
	return &tlsState{cfg: cfg, settings: s, files: stamps(s)}, nil
}

func stamps(s TLSSettings) map[string]fileStamp {
	out := map[string]fileStamp{}
	for _, p := range []string{s.KeystoreLocation, s.TruststoreLocation} {
		if p == "" {
			continue
		}
		if st, err := os.Stat(p); err == nil {
			out[p] = fileStamp{size: st.Size(), modTime: st.ModTime()}
		}
	}
	return out
}

// sameTLS reports whether s and the files it names are what st was
// loaded from.
func sameTLS(st *tlsState, s TLSSettings) bool {
	if !slices.Equal(st.settings.EnabledProtocols, s.EnabledProtocols) || !slices.Equal(st.settings.CipherSuites, s.CipherSuites) {
		return false
	}
	a, b := st.settings, s
	a.EnabledProtocols, a.CipherSuites, b.EnabledProtocols, b.CipherSuites = nil, nil, nil, nil
	if !equalSettings(a, b) {
		return false
	}
	now := stamps(s)
	if len(now) != len(st.files) {
		return false
	}
	for p, f := range now {
		if st.files[p] != f {
			return false
		}
	}
	return true
}

func equalSettings(a, b TLSSettings) bool {
	return a.KeystoreType == b.KeystoreType && a.KeystoreLocation == b.KeystoreLocation && a.KeystorePassword == b.KeystorePassword &&
		a.KeyPassword == b.KeyPassword && a.KeystoreChain == b.KeystoreChain && a.KeystoreKey == b.KeystoreKey &&
		a.TruststoreType == b.TruststoreType && a.TruststoreLocation == b.TruststoreLocation &&
		a.TruststorePassword == b.TruststorePassword && a.TruststoreCerts == b.TruststoreCerts && a.ClientAuth == b.ClientAuth
}

// The JAAS login modules Kafka's mechanisms use.
const (
	plainLoginModule = "org.apache.kafka.common.security.plain.PlainLoginModule"
	scramLoginModule = "org.apache.kafka.common.security.scram.ScramLoginModule"
	oauthLoginModule = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule"
)

// loadSASL reads the listener's enabled mechanisms and what each needs.
func (x *Listener) loadSASL(b *config.Broker) (*saslSetup, error) {
	ss := &saslSetup{
		mechanisms: b.ListenerValue(x.name, config.SaslEnabledMechanisms).Strings(),
		servers:    map[string]func() (sasl.Server, error){},
		reauth:     map[string]time.Duration{},
		maxReceive: int32(b.ListenerValue(x.name, config.SaslServerMaxReceiveSize).Int64()),
	}
	if len(ss.mechanisms) == 0 {
		return nil, fmt.Errorf("%s is empty: a SASL listener needs at least one mechanism", config.SaslEnabledMechanisms)
	}
	for _, mech := range ss.mechanisms {
		ss.reauth[mech] = time.Duration(b.ListenerMechanismValue(x.name, mech, config.ConnectionsMaxReauthMs).Int64()) * time.Millisecond
		jaas := b.ListenerMechanismValue(x.name, mech, config.SaslJaasConfig)
		switch mech {
		case sasl.Plain:
			mod, err := x.jaasModule(jaas, mech, plainLoginModule)
			if err != nil {
				return nil, err
			}
			users := map[string]string{}
			for k, v := range mod.Options {
				if u, ok := strings.CutPrefix(k, "user_"); ok {
					users[u] = v
				}
			}
			if len(users) == 0 {
				x.log.Warn("PLAIN is enabled but its JAAS config names no user_NAME entry: every PLAIN client will fail")
			}
			check := sasl.StaticPlainUsers(users)
			ss.servers[mech] = func() (sasl.Server, error) { return sasl.NewPlainServer(check), nil }
		case sasl.ScramSHA256, sasl.ScramSHA512:
			m, _ := scram.ByName(mech)
			lookup := x.deps.ScramCredential
			if lookup == nil {
				x.log.Warn("SCRAM is enabled but no credential store is wired: every SCRAM client will fail", "mechanism", mech)
				lookup = func(string, string) (scram.Credential, bool) { return scram.Credential{}, false }
			}
			ss.servers[mech] = func() (sasl.Server, error) {
				return m.NewServer(func(user string) (scram.Credential, bool) { return lookup(mech, user) }, nil), nil
			}
		case sasl.OAuthBearer:
			newServer, err := x.oauthServer(b, jaas)
			if err != nil {
				return nil, err
			}
			ss.servers[mech] = newServer
		case sasl.GSSAPI:
			return nil, fmt.Errorf("%s: GSSAPI (Kerberos) is not supported by weir; enable PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 or OAUTHBEARER", config.SaslEnabledMechanisms)
		default:
			return nil, fmt.Errorf("%s: unknown SASL mechanism %s", config.SaslEnabledMechanisms, mech)
		}
	}
	return ss, nil
}

// jaasModule reads the mechanism's JAAS config, which must use want.
func (x *Listener) jaasModule(v config.Value, mech, want string) (JAASModule, error) {
	key := config.ListenerMechanismKey(x.name, mech, config.SaslJaasConfig)
	if v.IsNull() {
		return JAASModule{}, fmt.Errorf("%s is enabled but has no JAAS configuration: set %s", mech, key)
	}
	mod, err := ParseJAASOne(v.Str())
	if err != nil {
		return JAASModule{}, fmt.Errorf("%s: %w", key, err)
	}
	if mod.Class != want {
		return JAASModule{}, fmt.Errorf("%s: login module %s is not %s's (%s)", key, mod.Class, mech, want)
	}
	return mod, nil
}

// apiVersions are the keys a listener's edge serves itself, on every
// listener as Kafka lists them: SaslHandshake v1 (v0, raw tokens without
// SaslAuthenticate, is not served) and SaslAuthenticate v0-2.
var apiVersions = []server.APIVersionRange{{Key: keySaslHandshake, Min: 1, Max: 1}, {Key: keySaslAuthenticate, Min: 0, Max: 2}}

// Versions implements server.Security.
func (x *Listener) Versions() []server.APIVersionRange { return slices.Clone(apiVersions) }

// Open implements server.Security: the TLS handshake on SSL listeners,
// then the connection's gate.
func (x *Listener) Open(ctx context.Context, nc net.Conn) (net.Conn, server.Gate, error) {
	principal := Anonymous
	if x.usesTLS() {
		tc := tls.Server(nc, x.tls.Load().cfg)
		if err := tc.HandshakeContext(ctx); err != nil {
			return nil, nil, fmt.Errorf("TLS handshake: %w", err)
		}
		if certs := tc.ConnectionState().PeerCertificates; len(certs) > 0 && !x.usesSASL() {
			dn, err := CertificateDN(certs[0])
			if err != nil {
				return nil, nil, err
			}
			name, err := x.rules.Load().Map(dn)
			if err != nil {
				return nil, nil, err
			}
			principal = UserPrincipal(name)
		}
		nc = tc
	}
	if !x.usesSASL() {
		return nc, &openGate{principal: principal}, nil
	}
	ss := x.sasl.Load()
	s := NewSession(SessionConfig{
		Mechanisms: ss.mechanisms,
		NewServer: func(mech string) (sasl.Server, error) {
			f, ok := ss.servers[mech]
			if !ok {
				return nil, errors.New("not enabled")
			}
			return f()
		},
		MaxReauth: func(mech string) time.Duration { return ss.reauth[mech] },
		Now:       x.deps.Now,
	})
	return nc, &saslGate{s: s, maxFrame: ss.maxReceive}, nil
}

// openGate is a PLAINTEXT or SSL connection: its principal is fixed when
// it opens, and SaslHandshake and SaslAuthenticate are refused as
// Kafka's request handlers refuse them.
type openGate struct {
	principal string
	told      bool
}

func (g *openGate) Admit(int16) bool { return true }
func (g *openGate) MaxFrame() int32  { return 0 }

func (g *openGate) Check(req *server.Request) server.Verdict {
	var v server.Verdict
	if !g.told {
		v.Principal, g.told = g.principal, true
	}
	switch req.Key {
	case keySaslHandshake:
		resp := kmsg.NewPtrSASLHandshakeResponse()
		resp.ErrorCode = kerr.IllegalSaslState.Code
		v.Response = resp
	case keySaslAuthenticate:
		resp := kmsg.NewPtrSASLAuthenticateResponse()
		resp.ErrorCode = kerr.IllegalSaslState.Code
		msg := "Unexpected SaslAuthenticate request on a listener that does not use SASL"
		resp.ErrorMessage = &msg
		v.Response = resp
	}
	return v
}

// saslGate puts a Session in front of a connection.
type saslGate struct {
	s        *Session
	maxFrame int32
}

func (g *saslGate) Admit(key int16) bool { return g.s.Admit(key) }

func (g *saslGate) MaxFrame() int32 {
	if g.s.Authenticated() {
		return 0
	}
	return g.maxFrame
}

func (g *saslGate) Check(req *server.Request) server.Verdict {
	o := g.s.Handle(req.Key, req.Body)
	return server.Verdict{Response: o.Response, Close: o.Close, Principal: o.Principal, Reason: o.Reason}
}

// jwksHandler is Kafka's validating callback handler class for
// OAUTHBEARER, which checks tokens against the issuer's keys.
const jwksHandler = "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler"

// oauthServer reads OAUTHBEARER's settings: the JWKS validator when the
// listener's server callback handler is Kafka's validating one, else
// Kafka's unsecured validator with its JAAS options.
func (x *Listener) oauthServer(b *config.Broker, jaas config.Value) (func() (sasl.Server, error), error) {
	mod, err := x.jaasModule(jaas, sasl.OAuthBearer, oauthLoginModule)
	if err != nil {
		return nil, err
	}
	var v oauthbearer.Validator
	handler := b.ListenerMechanismValue(x.name, sasl.OAuthBearer, config.SaslServerCallbackHandler)
	switch {
	case handler.IsNull():
		u := oauthbearer.Unsecured{
			PrincipalClaim: mod.Options["unsecuredValidatorPrincipalClaimName"],
			ScopeClaim:     mod.Options["unsecuredValidatorScopeClaimName"],
			RequiredScope:  strings.FieldsFunc(mod.Options["unsecuredValidatorRequiredScope"], func(r rune) bool { return r == ',' || r == ' ' }),
		}
		if skew := mod.Options["unsecuredValidatorAllowableClockSkewMs"]; skew != "" {
			ms, err := time.ParseDuration(skew + "ms")
			if err != nil || ms < 0 {
				return nil, fmt.Errorf("OAUTHBEARER JAAS option unsecuredValidatorAllowableClockSkewMs=%s is not a number of milliseconds", skew)
			}
			u.Skew = ms
		}
		x.log.Warn("OAUTHBEARER uses Kafka's unsecured validator: unsigned tokens are trusted (for tests only)")
		v = u
	case handler.Str() == jwksHandler:
		url := b.ListenerMechanismValue(x.name, sasl.OAuthBearer, config.SaslOAuthJwksURL)
		if url.IsNull() {
			return nil, fmt.Errorf("%s needs %s", jwksHandler, config.SaslOAuthJwksURL)
		}
		j, err := oauthbearer.LoadJWKSFile(url.Str())
		if err != nil {
			return nil, err
		}
		j.Audience = b.ListenerMechanismValue(x.name, sasl.OAuthBearer, config.SaslOAuthAudience).Strings()
		j.Issuer = b.ListenerMechanismValue(x.name, sasl.OAuthBearer, config.SaslOAuthIssuer).Str()
		j.PrincipalClaim = b.ListenerMechanismValue(x.name, sasl.OAuthBearer, config.SaslOAuthSubClaim).Str()
		j.ScopeClaim = b.ListenerMechanismValue(x.name, sasl.OAuthBearer, config.SaslOAuthScopeClaim).Str()
		j.Skew = time.Duration(b.ListenerMechanismValue(x.name, sasl.OAuthBearer, config.SaslOAuthClockSkew).Int64()) * time.Second
		v = j
	default:
		return nil, fmt.Errorf("%s %s is not supported: leave it unset (unsecured tokens) or use %s", config.SaslServerCallbackHandler, handler.Str(), jwksHandler)
	}
	now := x.deps.Now
	return func() (sasl.Server, error) { return oauthbearer.NewServer(v, now), nil }, nil
}
