package auth

import (
	"context"
	"crypto/tls"
	"crypto/x509/pkix"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/auth/authtest"
	"weir/internal/auth/scram"
	"weir/internal/config"
	"weir/internal/server"
	"weir/internal/testport"
)

// recorder is a dispatcher that answers ApiVersions and Metadata and
// remembers who asked.
type recorder struct {
	mu    sync.Mutex
	conns []server.ConnInfo
}

func (r *recorder) Versions() []server.APIVersionRange {
	return []server.APIVersionRange{{Key: 18, Min: 0, Max: 4}, {Key: 3, Min: 0, Max: 13}}
}

func (r *recorder) Serve(_ context.Context, req *server.Request) *server.Reply {
	r.mu.Lock()
	r.conns = append(r.conns, req.Conn)
	r.mu.Unlock()
	resp := req.Body.ResponseKind()
	if av, ok := resp.(*kmsg.ApiVersionsResponse); ok {
		for _, v := range r.Versions() {
			av.ApiKeys = append(av.ApiKeys, kmsg.ApiVersionsResponseApiKey{ApiKey: v.Key, MinVersion: v.Min, MaxVersion: v.Max})
		}
	}
	return server.Ready(resp)
}

func (r *recorder) last() server.ConnInfo {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.conns) == 0 {
		return server.ConnInfo{}
	}
	return r.conns[len(r.conns)-1]
}

func brokerConfig(t testing.TB, props map[string]string) *config.Broker {
	t.Helper()
	all := map[string]string{config.NodeID: "1"}
	for k, v := range props {
		all[k] = v
	}
	b, err := config.NewBroker(all)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// serveListener starts a server whose one listener is secured by the
// broker settings' first listener.
func serveListener(t *testing.T, props map[string]string, deps Deps) (*server.Server, *Listener, *recorder) {
	t.Helper()
	addr := testport.Addr(t)
	_, port, _ := net.SplitHostPort(addr)
	name := props["test.listener"]
	delete(props, "test.listener")
	props[config.Listeners] = name + "://127.0.0.1:" + port
	if _, ok := props[config.SecurityInterBrokerProto]; !ok {
		if _, ok := props[config.InterBrokerListenerName]; !ok {
			props[config.InterBrokerListenerName] = name
		}
	}
	b := brokerConfig(t, props)
	l, err := NewListener(b, b.Listeners()[0], deps)
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{}
	srv, err := server.New(server.Config{Listeners: []server.Listener{{Name: l.Name(), Addr: addr, Security: l}}, Dispatcher: rec})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(context.Background()) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
		<-done
	})
	return srv, l, rec
}

// metadata sends one Metadata request and reads its answer.
func metadata(nc net.Conn) error {
	nc.SetDeadline(time.Now().Add(5 * time.Second))
	defer nc.SetDeadline(time.Time{})
	req := kmsg.NewPtrMetadataRequest()
	req.Version = 1
	if err := writeRequest(nc, req, 99, "test"); err != nil {
		return err
	}
	resp := kmsg.NewPtrMetadataResponse()
	resp.Version = 1
	return readResponse(nc, resp, 99)
}

func dialWith(t *testing.T, srv *server.Server, props map[string]string) (net.Conn, error) {
	t.Helper()
	cs, err := NewClientSecurity(props)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	nc, err := cs.Dial(ctx, "tcp", srv.Addr().String())
	if err == nil {
		t.Cleanup(func() { nc.Close() })
	}
	return nc, err
}

func TestSSLListener(t *testing.T) {
	pki := authtest.NewPKI(t)
	srvCert := pki.Issue(pkix.Name{CommonName: "broker"}, true)
	alice := pki.Issue(pkix.Name{CommonName: "alice", OrganizationalUnit: []string{"eng"}, Organization: []string{"Acme"}}, false)
	p12 := pki.PKCS12Keystore("broker.p12", srvCert, "store-pw")
	trust := pki.PKCS12Truststore("trust.p12", "trust-pw")
	clientTrust := map[string]string{"security.protocol": "SSL", "ssl.truststore.type": "PEM", "ssl.truststore.certificates": string(pki.CAPEM)}

	t.Run("PEM keystore, no client certificate", func(t *testing.T) {
		srv, _, rec := serveListener(t, map[string]string{"test.listener": "SSL",
			config.SslKeystoreType: "PEM", config.SslKeystoreChain: string(srvCert.CertPEM), config.SslKeystoreKey: string(srvCert.KeyPEM)}, Deps{})
		nc, err := dialWith(t, srv, clientTrust)
		if err != nil {
			t.Fatal(err)
		}
		if err := metadata(nc); err != nil {
			t.Fatal(err)
		}
		if got := rec.last(); got.Principal != Anonymous || got.Listener != "SSL" {
			t.Fatalf("conn %+v", got)
		}
	})

	required := map[string]string{"test.listener": "SSL",
		config.SslKeystoreType: "PKCS12", config.SslKeystoreLocation: p12, config.SslKeystorePassword: "store-pw",
		config.SslTruststoreType: "PKCS12", config.SslTruststoreLocation: trust, config.SslTruststorePassword: "trust-pw",
		config.SslClientAuth: "required", config.SslPrincipalRules: "RULE:^CN=(.*?),OU=(.*?),.*$/$1@$2/U, DEFAULT"}

	t.Run("PKCS12, client certificate required, mapped principal", func(t *testing.T) {
		srv, _, rec := serveListener(t, cloneMap(required), Deps{})
		props := cloneMap(clientTrust)
		props["ssl.keystore.type"] = "PEM"
		props["ssl.keystore.certificate.chain"] = string(alice.CertPEM)
		props["ssl.keystore.key"] = string(alice.KeyPEM)
		nc, err := dialWith(t, srv, props)
		if err != nil {
			t.Fatal(err)
		}
		if err := metadata(nc); err != nil {
			t.Fatal(err)
		}
		if got := rec.last().Principal; got != "User:ALICE@ENG" {
			t.Fatalf("principal %q", got)
		}

		// Without a certificate the handshake fails (TLS 1.3 reports it
		// on the first read).
		nc2, err := dialWith(t, srv, clientTrust)
		if err == nil {
			err = metadata(nc2)
		}
		if err == nil {
			t.Fatal("a client without a certificate was served")
		}
		waitFor(t, func() bool { return srv.Stats().AuthFailures >= 1 })
	})

	t.Run("client certificate requested, not given", func(t *testing.T) {
		props := cloneMap(required)
		props[config.SslClientAuth] = "requested"
		srv, _, rec := serveListener(t, props, Deps{})
		nc, err := dialWith(t, srv, clientTrust)
		if err != nil {
			t.Fatal(err)
		}
		if err := metadata(nc); err != nil {
			t.Fatal(err)
		}
		if got := rec.last().Principal; got != Anonymous {
			t.Fatalf("principal %q", got)
		}
	})

	t.Run("no rule maps the subject", func(t *testing.T) {
		props := cloneMap(required)
		props[config.SslPrincipalRules] = "RULE:^CN=bob,.*$/bob/"
		srv, _, _ := serveListener(t, props, Deps{})
		cp := cloneMap(clientTrust)
		cp["ssl.keystore.type"], cp["ssl.keystore.certificate.chain"], cp["ssl.keystore.key"] = "PEM", string(alice.CertPEM), string(alice.KeyPEM)
		nc, err := dialWith(t, srv, cp)
		if err == nil {
			err = metadata(nc)
		}
		if err == nil {
			t.Fatal("served a client no principal rule maps")
		}
	})

	t.Run("garbage instead of a TLS handshake", func(t *testing.T) {
		srv, _, rec := serveListener(t, cloneMap(required), Deps{})
		nc, err := net.Dial("tcp", srv.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		nc.Write([]byte("\x00\x00\x00\x0aGET / HTTP/1.1\r\n\r\n"))
		nc.SetReadDeadline(time.Now().Add(5 * time.Second))
		buf := make([]byte, 512)
		for {
			if _, err := nc.Read(buf); err != nil {
				if errors.Is(err, os.ErrDeadlineExceeded) {
					t.Fatal("connection left open")
				}
				break
			}
		}
		if rec.last().Listener != "" {
			t.Fatal("dispatcher saw a request")
		}
	})

	t.Run("server name checked", func(t *testing.T) {
		other := pki.IssueServer(pkix.Name{CommonName: "elsewhere"}, []string{"other.example"}, nil)
		srv, _, _ := serveListener(t, map[string]string{"test.listener": "SSL",
			config.SslKeystoreType: "PEM", config.SslKeystoreChain: string(other.CertPEM), config.SslKeystoreKey: string(other.KeyPEM)}, Deps{})
		if _, err := dialWith(t, srv, clientTrust); err == nil {
			t.Fatal("a certificate without 127.0.0.1 passed host name verification")
		}
		off := cloneMap(clientTrust)
		off["ssl.endpoint.identification.algorithm"] = ""
		nc, err := dialWith(t, srv, off)
		if err != nil {
			t.Fatalf("with identification off: %v", err)
		}
		if err := metadata(nc); err != nil {
			t.Fatal(err)
		}
	})
}

func TestSSLReloadOnReconfigure(t *testing.T) {
	pki := authtest.NewPKI(t)
	first := pki.Issue(pkix.Name{CommonName: "first"}, true)
	second := pki.Issue(pkix.Name{CommonName: "second"}, true)
	path := pki.Write("broker.pem", append(append([]byte{}, first.KeyPEM...), first.CertPEM...))
	props := map[string]string{"test.listener": "SSL", config.SslKeystoreType: "PEM", config.SslKeystoreLocation: path}
	srv, l, _ := serveListener(t, props, Deps{})
	peer := func() string {
		t.Helper()
		pool := authtest.Pool(t, pki.CAPEM)
		c, err := tls.Dial("tcp", srv.Addr().String(), &tls.Config{RootCAs: pool, ServerName: "127.0.0.1"})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		return c.ConnectionState().PeerCertificates[0].Subject.CommonName
	}
	if got := peer(); got != "first" {
		t.Fatalf("serving %q", got)
	}
	// The operator replaces the file and alters the listener's configs
	// (same values): the new certificate is served without a restart.
	pki.Write("broker.pem", append(append([]byte{}, second.KeyPEM...), second.CertPEM...))
	future := time.Now().Add(2 * time.Second)
	os.Chtimes(path, future, future)
	b := brokerConfig(t, map[string]string{config.Listeners: "SSL://127.0.0.1:1", config.InterBrokerListenerName: "SSL",
		config.SslKeystoreType: "PEM", config.SslKeystoreLocation: path})
	if err := l.Reconfigure(b); err != nil {
		t.Fatal(err)
	}
	if got := peer(); got != "second" {
		t.Fatalf("after reload serving %q", got)
	}
	// A broken keystore is refused and the old one kept.
	pki.Write("broker.pem", []byte("not pem"))
	future = future.Add(2 * time.Second)
	os.Chtimes(path, future, future)
	if err := l.Reconfigure(b); err == nil {
		t.Fatal("broken keystore accepted")
	}
	if got := peer(); got != "second" {
		t.Fatalf("after a failed reload serving %q", got)
	}
}

func TestListenerConfigRefusals(t *testing.T) {
	pki := authtest.NewPKI(t)
	cert := pki.Issue(pkix.Name{CommonName: "broker"}, true)
	jks := pki.Write("broker.jks", []byte{0xfe, 0xed, 0xfe, 0xed, 0, 0, 0, 2})
	for _, tc := range []struct {
		name  string
		props map[string]string
		want  string
	}{
		{"JKS", map[string]string{"test.listener": "SSL", config.SslKeystoreLocation: jks, config.SslKeystorePassword: "x"}, "JKS keystores are not supported"},
		{"no keystore", map[string]string{"test.listener": "SSL"}, "an SSL listener needs a keystore"},
		{"client auth without truststore", map[string]string{"test.listener": "SSL", config.SslKeystoreType: "PEM",
			config.SslKeystoreChain: string(cert.CertPEM), config.SslKeystoreKey: string(cert.KeyPEM), config.SslClientAuth: "required"}, "needs a truststore"},
		{"wrong PKCS12 password", map[string]string{"test.listener": "SSL", config.SslKeystoreType: "PKCS12",
			config.SslKeystoreLocation: pki.PKCS12Keystore("k.p12", cert, "right"), config.SslKeystorePassword: "wrong"}, "ssl.keystore.location"},
		{"key of another certificate", map[string]string{"test.listener": "SSL", config.SslKeystoreType: "PEM",
			config.SslKeystoreChain: string(cert.CertPEM), config.SslKeystoreKey: string(pki.Issue(pkix.Name{CommonName: "x"}, true).KeyPEM)}, "does not match"},
		{"gap in protocols", map[string]string{"test.listener": "SSL", config.SslKeystoreType: "PEM",
			config.SslKeystoreChain: string(cert.CertPEM), config.SslKeystoreKey: string(cert.KeyPEM), config.SslEnabledProtocols: "TLSv1.1,TLSv1.3"}, "contiguous"},
		{"unknown cipher", map[string]string{"test.listener": "SSL", config.SslKeystoreType: "PEM",
			config.SslKeystoreChain: string(cert.CertPEM), config.SslKeystoreKey: string(cert.KeyPEM), config.SslCipherSuites: "TLS_RSA_WITH_NULL_MD5"}, "not a cipher suite"},
		{"GSSAPI", map[string]string{"test.listener": "SASL_PLAINTEXT", config.SaslEnabledMechanisms: "GSSAPI"}, "GSSAPI (Kerberos) is not supported"},
		{"PLAIN without JAAS", map[string]string{"test.listener": "SASL_PLAINTEXT", config.SaslEnabledMechanisms: "PLAIN"}, "listener.name.sasl_plaintext.plain.sasl.jaas.config"},
		{"PLAIN with SCRAM's module", map[string]string{"test.listener": "SASL_PLAINTEXT", config.SaslEnabledMechanisms: "PLAIN",
			config.SaslJaasConfig: scramLoginModule + " required;"}, "is not PLAIN's"},
		{"OAUTHBEARER remote JWKS", map[string]string{"test.listener": "SASL_PLAINTEXT", config.SaslEnabledMechanisms: "OAUTHBEARER",
			config.SaslJaasConfig: oauthLoginModule + " required;", config.SaslServerCallbackHandler: jwksHandler,
			config.SaslOAuthJwksURL: "https://issuer.example/jwks"}, "only file: URLs"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			props := cloneMap(tc.props)
			name := props["test.listener"]
			delete(props, "test.listener")
			props[config.Listeners] = name + "://127.0.0.1:1"
			props[config.InterBrokerListenerName] = name
			if strings.HasPrefix(name, "SASL") {
				props[config.SaslMechanismInterBroker] = strings.Split(props[config.SaslEnabledMechanisms], ",")[0]
			}
			b := brokerConfig(t, props)
			_, err := NewListener(b, b.Listeners()[0], Deps{})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want %q", err, tc.want)
			}
		})
	}
}

const plainJAAS = plainLoginModule + ` required username="admin" password="admin-pw" user_admin="admin-pw" user_alice="alice-pw";`

func TestSASLListeners(t *testing.T) {
	pki := authtest.NewPKI(t)
	srvCert := pki.Issue(pkix.Name{CommonName: "broker"}, true)
	creds := map[string]scram.Credential{}
	for _, m := range []scram.Mechanism{scram.SHA256, scram.SHA512} {
		c, err := m.NewCredential("alice-scram", []byte("salt"), 4096)
		if err != nil {
			t.Fatal(err)
		}
		creds[m.Name()+"/alice"] = c
	}
	deps := Deps{ScramCredential: func(mech, user string) (scram.Credential, bool) { c, ok := creds[mech+"/"+user]; return c, ok }}
	srv, _, rec := serveListener(t, map[string]string{"test.listener": "SASL_SSL",
		config.SslKeystoreType: "PEM", config.SslKeystoreChain: string(srvCert.CertPEM), config.SslKeystoreKey: string(srvCert.KeyPEM),
		config.SaslEnabledMechanisms: "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512,OAUTHBEARER", config.SaslMechanismInterBroker: "PLAIN",
		"listener.name.sasl_ssl.plain.sasl.jaas.config":       plainJAAS,
		"listener.name.sasl_ssl.oauthbearer.sasl.jaas.config": oauthLoginModule + " required;",
		"listener.name.sasl_ssl.connections.max.reauth.ms":    "60000",
	}, deps)
	base := map[string]string{"security.protocol": "SASL_SSL", "ssl.truststore.type": "PEM", "ssl.truststore.certificates": string(pki.CAPEM)}
	for _, tc := range []struct {
		name, mech, jaas, principal string
	}{
		{"PLAIN", "PLAIN", plainLoginModule + ` required username="alice" password="alice-pw";`, "User:alice"},
		{"PLAIN wrong password", "PLAIN", plainLoginModule + ` required username="alice" password="nope";`, ""},
		{"SCRAM-SHA-256", "SCRAM-SHA-256", scramLoginModule + ` required username="alice" password="alice-scram";`, "User:alice"},
		{"SCRAM-SHA-512", "SCRAM-SHA-512", scramLoginModule + ` required username="alice" password="alice-scram";`, "User:alice"},
		{"SCRAM unknown user", "SCRAM-SHA-512", scramLoginModule + ` required username="bob" password="alice-scram";`, ""},
		{"OAUTHBEARER unsecured", "OAUTHBEARER", oauthLoginModule + ` required unsecuredLoginStringClaim_sub="carol";`, "User:carol"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			props := cloneMap(base)
			props["sasl.mechanism"], props["sasl.jaas.config"] = tc.mech, tc.jaas
			nc, err := dialWith(t, srv, props)
			if tc.principal == "" {
				if !errors.Is(err, ErrAuthentication) {
					t.Fatalf("err %v, want an authentication failure", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if err := metadata(nc); err != nil {
				t.Fatal(err)
			}
			if got := rec.last(); got.Principal != tc.principal || got.Listener != "SASL_SSL" {
				t.Fatalf("conn %+v", got)
			}
		})
	}

	t.Run("request before authentication closes", func(t *testing.T) {
		cs, _ := NewClientSecurity(map[string]string{"security.protocol": "SSL", "ssl.truststore.type": "PEM", "ssl.truststore.certificates": string(pki.CAPEM)})
		nc, err := cs.Dial(context.Background(), "tcp", srv.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		if err := metadata(nc); err == nil {
			t.Fatal("Metadata answered before authentication")
		}
	})

	t.Run("oversized token closes", func(t *testing.T) {
		cs, _ := NewClientSecurity(map[string]string{"security.protocol": "SSL", "ssl.truststore.type": "PEM", "ssl.truststore.certificates": string(pki.CAPEM)})
		nc, err := cs.Dial(context.Background(), "tcp", srv.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		var prefix [4]byte
		binary.BigEndian.PutUint32(prefix[:], 600<<10)
		nc.Write(prefix[:])
		nc.Write(make([]byte, 1024))
		nc.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := io.ReadFull(nc, prefix[:]); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("read %v: want the connection closed", err)
		}
	})
}

func TestPlaintextListenerRefusesSASL(t *testing.T) {
	srv, _, rec := serveListener(t, map[string]string{"test.listener": "PLAINTEXT"}, Deps{})
	nc, err := net.Dial("tcp", srv.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Version, hs.Mechanism = 1, "PLAIN"
	if err := writeRequest(nc, hs, 1, ""); err != nil {
		t.Fatal(err)
	}
	resp := kmsg.NewPtrSASLHandshakeResponse()
	resp.Version = 1
	if err := readResponse(nc, resp, 1); err != nil || resp.ErrorCode != kerr.IllegalSaslState.Code {
		t.Fatalf("resp %+v err %v", resp, err)
	}
	if err := metadata(nc); err != nil {
		t.Fatal(err)
	}
	if got := rec.last(); got.Principal != Anonymous || got.Listener != "PLAINTEXT" {
		t.Fatalf("conn %+v", got)
	}
}

func cloneMap(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func waitFor(t *testing.T, fn func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !fn() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 5s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// A broker reaches another broker's SASL_SSL listener with the
// credentials of the listener's own JAAS entry and its truststore.
func TestInterBrokerClient(t *testing.T) {
	pki := authtest.NewPKI(t)
	srvCert := pki.Issue(pkix.Name{CommonName: "broker"}, true)
	props := map[string]string{"test.listener": "SASL_SSL",
		config.SslKeystoreType: "PEM", config.SslKeystoreChain: string(srvCert.CertPEM), config.SslKeystoreKey: string(srvCert.KeyPEM),
		config.SslTruststoreType: "PEM", config.SslTruststoreCerts: string(pki.CAPEM),
		config.SaslEnabledMechanisms: "PLAIN", config.SaslMechanismInterBroker: "PLAIN",
		"listener.name.sasl_ssl.plain.sasl.jaas.config": plainJAAS,
	}
	srv, _, rec := serveListener(t, cloneMap(props), Deps{})
	delete(props, "test.listener")
	props[config.Listeners] = "SASL_SSL://" + srv.Addr().String()
	props[config.InterBrokerListenerName] = "SASL_SSL"
	b := brokerConfig(t, props)
	mech, _ := b.Value(config.SaslMechanismInterBroker)
	cs, err := InterBrokerClient(b, b.InterBrokerListener(), mech.Str())
	if err != nil {
		t.Fatal(err)
	}
	nc, err := cs.Dial(context.Background(), "tcp", srv.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if err := metadata(nc); err != nil {
		t.Fatal(err)
	}
	if got := rec.last().Principal; got != "User:admin" {
		t.Fatalf("inter-broker principal %q, want the JAAS username", got)
	}
}

// KIP-684: a broker-wide ssl.client.auth=required does not make SASL_SSL
// clients present certificates; the listener's own setting does.
func TestSASLSSLClientAuthIsPerListener(t *testing.T) {
	pki := authtest.NewPKI(t)
	cert := pki.Issue(pkix.Name{CommonName: "broker"}, true)
	props := map[string]string{"test.listener": "SASL_SSL",
		config.SslKeystoreType: "PEM", config.SslKeystoreChain: string(cert.CertPEM), config.SslKeystoreKey: string(cert.KeyPEM),
		config.SslTruststoreType: "PEM", config.SslTruststoreCerts: string(pki.CAPEM), config.SslClientAuth: "required",
		config.SaslEnabledMechanisms: "PLAIN", config.SaslMechanismInterBroker: "PLAIN",
		"listener.name.sasl_ssl.plain.sasl.jaas.config": plainJAAS,
	}
	client := map[string]string{"security.protocol": "SASL_SSL", "ssl.truststore.type": "PEM", "ssl.truststore.certificates": string(pki.CAPEM),
		"sasl.mechanism": "PLAIN", "sasl.jaas.config": plainLoginModule + ` required username="alice" password="alice-pw";`}
	srv, _, _ := serveListener(t, cloneMap(props), Deps{})
	if _, err := dialWith(t, srv, client); err != nil {
		t.Fatalf("broker-wide ssl.client.auth applied to SASL_SSL: %v", err)
	}
	props["listener.name.sasl_ssl.ssl.client.auth"] = "required"
	srv, _, _ = serveListener(t, cloneMap(props), Deps{})
	if nc, err := dialWith(t, srv, client); err == nil && metadata(nc) == nil {
		t.Fatal("the listener's ssl.client.auth=required let a client without a certificate in")
	}
}

// TestInterBrokerTLS: an inter-broker listener with TLS gives the raft
// transport the listener's certificate on both sides and its truststore;
// one without TLS gives nothing; a TLS listener without a keystore is an
// error.
func TestInterBrokerTLS(t *testing.T) {
	pki := authtest.NewPKI(t)
	c := pki.Issue(pkix.Name{CommonName: "broker"}, true)
	tlsProps := map[string]string{config.Listeners: "SSL://127.0.0.1:9093", config.InterBrokerListenerName: "SSL",
		config.SslKeystoreType: "PEM", config.SslKeystoreChain: string(c.CertPEM), config.SslKeystoreKey: string(c.KeyPEM),
		config.SslTruststoreType: "PEM", config.SslTruststoreCerts: string(pki.CAPEM)}
	server, client, ok, err := InterBrokerTLS(brokerConfig(t, tlsProps))
	if err != nil || !ok {
		t.Fatalf("SSL listener: ok %v, err %v", ok, err)
	}
	if len(server.Certificates) != 1 || server.ClientCAs == nil {
		t.Fatalf("server side: %d certificates, truststore %v", len(server.Certificates), server.ClientCAs != nil)
	}
	cc, err := client("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	if len(cc.Certificates) != 1 || cc.RootCAs == nil || cc.ServerName != "127.0.0.1" {
		t.Fatalf("client side: %d certificates, roots %v, server name %q", len(cc.Certificates), cc.RootCAs != nil, cc.ServerName)
	}

	if _, _, ok, err := InterBrokerTLS(brokerConfig(t, map[string]string{config.Listeners: "PLAINTEXT://127.0.0.1:9092"})); ok || err != nil {
		t.Fatalf("PLAINTEXT listener: ok %v, err %v; want neither", ok, err)
	}
	noKeystore := cloneMap(tlsProps)
	delete(noKeystore, config.SslKeystoreChain)
	delete(noKeystore, config.SslKeystoreKey)
	delete(noKeystore, config.SslKeystoreType)
	if _, _, _, err := InterBrokerTLS(brokerConfig(t, noKeystore)); err == nil {
		t.Fatal("an SSL inter-broker listener without a keystore gave raft TLS")
	}
}
