package auth

import (
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/auth/oauthbearer"
	"weir/internal/auth/sasl"
	"weir/internal/auth/scram"
	"weir/internal/config"
)

// ClientProperties are the Java client's security property names that
// ClientSecurity reads; other keys are the caller's.
var ClientProperties = []string{
	"security.protocol", "sasl.mechanism", "sasl.jaas.config",
	"ssl.keystore.type", "ssl.keystore.location", "ssl.keystore.password", "ssl.key.password",
	"ssl.keystore.certificate.chain", "ssl.keystore.key",
	"ssl.truststore.type", "ssl.truststore.location", "ssl.truststore.password", "ssl.truststore.certificates",
	"ssl.enabled.protocols", "ssl.protocol", "ssl.cipher.suites", "ssl.endpoint.identification.algorithm",
}

// ClientSecurity is how a client connects to a listener: its
// security.protocol, the TLS it asks for and the SASL exchange it runs
// before any other request. Dial gives the connection back authenticated,
// so that the client's own ApiVersions and everything after it run as on
// a plaintext connection.
type ClientSecurity struct {
	Protocol string
	TLS      TLSSettings
	// NewSASL starts a SASL exchange; nil unless Protocol is SASL_*.
	NewSASL func() (sasl.Client, error)
	// ClientID goes in the SASL requests' headers.
	ClientID string
}

// NewClientSecurity reads Java client properties (security.protocol,
// sasl.mechanism, sasl.jaas.config, ssl.*). Missing keys take the Java
// client's defaults; a SASL protocol needs sasl.mechanism (GSSAPI, the
// Java default, is refused) and a sasl.jaas.config with the credentials.
func NewClientSecurity(props map[string]string) (*ClientSecurity, error) {
	get := func(k, def string) string {
		if v, ok := props[k]; ok {
			return strings.TrimSpace(v)
		}
		return def
	}
	list := func(k, def string) []string {
		var out []string
		for _, s := range strings.Split(get(k, def), ",") {
			if s = strings.TrimSpace(s); s != "" {
				out = append(out, s)
			}
		}
		return out
	}
	c := &ClientSecurity{Protocol: strings.ToUpper(get("security.protocol", "PLAINTEXT"))}
	switch c.Protocol {
	case "PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL":
	default:
		return nil, fmt.Errorf("security.protocol %s: want PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL", c.Protocol)
	}
	c.TLS = TLSSettings{
		KeystoreType:           get("ssl.keystore.type", "JKS"),
		KeystoreLocation:       get("ssl.keystore.location", ""),
		KeystorePassword:       get("ssl.keystore.password", ""),
		KeyPassword:            get("ssl.key.password", ""),
		KeystoreChain:          get("ssl.keystore.certificate.chain", ""),
		KeystoreKey:            get("ssl.keystore.key", ""),
		TruststoreType:         get("ssl.truststore.type", "JKS"),
		TruststoreLocation:     get("ssl.truststore.location", ""),
		TruststorePassword:     get("ssl.truststore.password", ""),
		TruststoreCerts:        get("ssl.truststore.certificates", ""),
		EnabledProtocols:       list("ssl.enabled.protocols", "TLSv1.2,TLSv1.3"),
		CipherSuites:           list("ssl.cipher.suites", ""),
		EndpointIdentification: get("ssl.endpoint.identification.algorithm", "https"),
	}
	if c.usesTLS() {
		if _, err := ClientTLS(c.TLS, "check"); err != nil {
			return nil, err
		}
	}
	if strings.HasPrefix(c.Protocol, "SASL_") {
		mech := get("sasl.mechanism", "GSSAPI")
		newSASL, err := ClientMechanism(mech, get("sasl.jaas.config", ""))
		if err != nil {
			return nil, err
		}
		c.NewSASL = newSASL
	}
	return c, nil
}

// ClientMechanism builds the client side of a mechanism from a JAAS
// config: PLAIN and SCRAM read username and password, OAUTHBEARER makes
// an unsecured token from unsecuredLoginStringClaim_sub (Kafka's default
// login for tests).
func ClientMechanism(mech, jaas string) (func() (sasl.Client, error), error) {
	if mech == sasl.GSSAPI {
		return nil, errors.New("sasl.mechanism GSSAPI (Kerberos) is not supported; use PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 or OAUTHBEARER")
	}
	if jaas == "" {
		return nil, fmt.Errorf("sasl.mechanism %s needs sasl.jaas.config", mech)
	}
	mod, err := ParseJAASOne(jaas)
	if err != nil {
		return nil, fmt.Errorf("sasl.jaas.config: %w", err)
	}
	user, password := mod.Options["username"], mod.Options["password"]
	switch mech {
	case sasl.Plain:
		if mod.Class != plainLoginModule {
			return nil, fmt.Errorf("sasl.jaas.config: PLAIN needs %s, not %s", plainLoginModule, mod.Class)
		}
		return func() (sasl.Client, error) { return sasl.NewPlainClient(user, password), nil }, nil
	case sasl.ScramSHA256, sasl.ScramSHA512:
		if mod.Class != scramLoginModule {
			return nil, fmt.Errorf("sasl.jaas.config: %s needs %s, not %s", mech, scramLoginModule, mod.Class)
		}
		m, _ := scram.ByName(mech)
		return func() (sasl.Client, error) { return m.NewClient(user, password, nil), nil }, nil
	case sasl.OAuthBearer:
		if mod.Class != oauthLoginModule {
			return nil, fmt.Errorf("sasl.jaas.config: OAUTHBEARER needs %s, not %s", oauthLoginModule, mod.Class)
		}
		sub := mod.Options["unsecuredLoginStringClaim_sub"]
		if sub == "" {
			return nil, errors.New("sasl.jaas.config: OAUTHBEARER: weir's client makes only unsecured tokens; set unsecuredLoginStringClaim_sub")
		}
		lifetime := time.Hour
		if s := mod.Options["unsecuredLoginLifetimeSeconds"]; s != "" {
			n, err := strconv.Atoi(s)
			if err != nil || n <= 0 {
				return nil, fmt.Errorf("sasl.jaas.config: unsecuredLoginLifetimeSeconds=%s is not a positive number", s)
			}
			lifetime = time.Duration(n) * time.Second
		}
		return func() (sasl.Client, error) {
			return oauthbearer.NewClient(func() (string, error) {
				return oauthbearer.UnsecuredToken(sub, lifetime, time.Now()), nil
			}), nil
		}, nil
	}
	return nil, fmt.Errorf("sasl.mechanism %s is not supported", mech)
}

func (c *ClientSecurity) usesTLS() bool { return c.Protocol == "SSL" || c.Protocol == "SASL_SSL" }

// Dial connects to addr, runs the TLS handshake and the SASL exchange the
// protocol asks for, and returns the connection ready for requests.
func (c *ClientSecurity) Dial(ctx context.Context, network, addr string) (net.Conn, error) {
	var d net.Dialer
	nc, err := d.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	conn, err := c.Secure(ctx, nc, addr)
	if err != nil {
		nc.Close()
		return nil, err
	}
	return conn, nil
}

// Secure runs the TLS handshake and the SASL exchange on a connection to
// addr.
func (c *ClientSecurity) Secure(ctx context.Context, nc net.Conn, addr string) (net.Conn, error) {
	if c.usesTLS() {
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			host = addr
		}
		cfg, err := ClientTLS(c.TLS, host)
		if err != nil {
			return nil, err
		}
		tc := tls.Client(nc, cfg)
		if err := tc.HandshakeContext(ctx); err != nil {
			return nil, fmt.Errorf("TLS handshake with %s: %w", addr, err)
		}
		nc = tc
	}
	if c.NewSASL == nil {
		return nc, nil
	}
	if dl, ok := ctx.Deadline(); ok {
		nc.SetDeadline(dl)
		defer nc.SetDeadline(time.Time{})
	}
	conv, err := c.NewSASL()
	if err != nil {
		return nil, err
	}
	if err := c.authenticate(nc, conv); err != nil {
		return nil, fmt.Errorf("SASL %s with %s: %w", conv.Mechanism(), addr, err)
	}
	return nc, nil
}

// ErrAuthentication is a broker's refusal of the client's credentials.
var ErrAuthentication = errors.New("authentication failed")

// authenticate runs SaslHandshake v1 and SaslAuthenticate v1 rounds.
func (c *ClientSecurity) authenticate(nc net.Conn, conv sasl.Client) error {
	// Unbuffered reads: nothing past the last answer may be consumed.
	corr := int32(0)
	roundTrip := func(req kmsg.Request, resp kmsg.Response) error {
		corr++
		if err := writeRequest(nc, req, corr, c.ClientID); err != nil {
			return err
		}
		return readResponse(nc, resp, corr)
	}
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Version, hs.Mechanism = 1, conv.Mechanism()
	hsResp := kmsg.NewPtrSASLHandshakeResponse()
	hsResp.Version = 1
	if err := roundTrip(hs, hsResp); err != nil {
		return err
	}
	if hsResp.ErrorCode != 0 {
		return fmt.Errorf("%w: SaslHandshake: %v (broker offers %v)", ErrAuthentication, kerr.ErrorForCode(hsResp.ErrorCode), hsResp.SupportedMechanisms)
	}
	var challenge []byte
	for round := 0; round < 8; round++ {
		tok, done, err := conv.Step(challenge)
		if err != nil {
			return err
		}
		if done {
			return nil
		}
		req := kmsg.NewPtrSASLAuthenticateRequest()
		req.Version, req.SASLAuthBytes = 1, tok
		resp := kmsg.NewPtrSASLAuthenticateResponse()
		resp.Version = 1
		if err := roundTrip(req, resp); err != nil {
			return err
		}
		if resp.ErrorCode != 0 {
			msg := ""
			if resp.ErrorMessage != nil {
				msg = ": " + *resp.ErrorMessage
			}
			return fmt.Errorf("%w: %v%s", ErrAuthentication, kerr.ErrorForCode(resp.ErrorCode), msg)
		}
		challenge = resp.SASLAuthBytes
	}
	return errors.New("SASL exchange did not finish")
}

// writeRequest writes a non-flexible request with header v1.
func writeRequest(w io.Writer, req kmsg.Request, corr int32, clientID string) error {
	b := make([]byte, 4, 64)
	b = binary.BigEndian.AppendUint16(b, uint16(req.Key()))
	b = binary.BigEndian.AppendUint16(b, uint16(req.GetVersion()))
	b = binary.BigEndian.AppendUint32(b, uint32(corr))
	b = binary.BigEndian.AppendUint16(b, uint16(len(clientID)))
	b = append(b, clientID...)
	b = req.AppendTo(b)
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	_, err := w.Write(b)
	return err
}

// maxSASLResponse bounds a SASL response frame.
const maxSASLResponse = 1 << 20

func readResponse(r io.Reader, resp kmsg.Response, corr int32) error {
	var head [8]byte
	if _, err := io.ReadFull(r, head[:]); err != nil {
		return fmt.Errorf("reading %s response: %w", kmsg.NameForKey(resp.Key()), err)
	}
	size := int32(binary.BigEndian.Uint32(head[:4]))
	if size < 4 || size > maxSASLResponse {
		return fmt.Errorf("%s response of %d bytes", kmsg.NameForKey(resp.Key()), size)
	}
	if got := int32(binary.BigEndian.Uint32(head[4:])); got != corr {
		return fmt.Errorf("%s response for correlation id %d, want %d", kmsg.NameForKey(resp.Key()), got, corr)
	}
	body := make([]byte, size-4)
	if _, err := io.ReadFull(r, body); err != nil {
		return err
	}
	return resp.ReadFrom(body)
}

// InterBrokerClient is how this broker connects to another broker's
// listener: the listener's security protocol, its ssl.* settings (the
// keystore as this broker's client certificate, the truststore for the
// peer's) and, on SASL listeners, mechanism with the username and
// password of the listener's JAAS entry for it, as Kafka's inter-broker
// clients use them. Pass the inter-broker listener with
// sasl.mechanism.inter.broker.protocol, or the controller listener with
// sasl.mechanism.controller.protocol.
func InterBrokerClient(b *config.Broker, l config.Listener, mechanism string) (*ClientSecurity, error) {
	c := &ClientSecurity{Protocol: l.SecurityProtocol}
	switch c.Protocol {
	case "PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL":
	default:
		return nil, fmt.Errorf("listener %s: unknown security protocol %q", l.Name, l.SecurityProtocol)
	}
	if c.usesTLS() {
		c.TLS = listenerTLSSettings(b, l.Name)
		c.TLS.ClientAuth = ""
		c.TLS.EndpointIdentification = b.ListenerValue(l.Name, config.SslEndpointIdentAlg).Str()
		if _, err := ClientTLS(c.TLS, "check"); err != nil {
			return nil, fmt.Errorf("listener %s: inter-broker TLS: %w", l.Name, err)
		}
	}
	if strings.HasPrefix(c.Protocol, "SASL_") {
		jaas := b.ListenerMechanismValue(l.Name, mechanism, config.SaslJaasConfig)
		newSASL, err := ClientMechanism(mechanism, jaas.Str())
		if err != nil {
			return nil, fmt.Errorf("listener %s: inter-broker SASL: %w", l.Name, err)
		}
		c.NewSASL = newSASL
	}
	return c, nil
}

// InterBrokerTLS is the TLS of a node's links to the other nodes outside
// Kafka's protocol (the metadata quorum's raft transport) when the
// inter-broker listener uses SSL or SASL_SSL: that listener's keystore
// certificate, presented on both sides, and its truststore, with the
// inter-broker client's endpoint identification. ok is false when the
// inter-broker listener has no TLS. The certificates are read once:
// altering the listener's configs does not reload them here.
func InterBrokerTLS(b *config.Broker) (server *tls.Config, client func(host string) (*tls.Config, error), ok bool, err error) {
	l := b.InterBrokerListener()
	if l.SecurityProtocol != "SSL" && l.SecurityProtocol != "SASL_SSL" {
		return nil, nil, false, nil
	}
	s := listenerTLSSettings(b, l.Name)
	if server, err = ServerTLS(s); err != nil {
		return nil, nil, false, fmt.Errorf("listener %s: %w", l.Name, err)
	}
	s.ClientAuth = ""
	s.EndpointIdentification = b.ListenerValue(l.Name, config.SslEndpointIdentAlg).Str()
	if _, err := ClientTLS(s, "check"); err != nil {
		return nil, nil, false, fmt.Errorf("listener %s: %w", l.Name, err)
	}
	return server, func(host string) (*tls.Config, error) { return ClientTLS(s, host) }, true, nil
}
