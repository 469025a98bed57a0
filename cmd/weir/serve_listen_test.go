package main

import (
	"crypto/tls"
	"crypto/x509/pkix"
	"flag"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"weir/internal/auth/authtest"
	"weir/internal/testport"
)

func TestParseListen(t *testing.T) {
	for _, tc := range []struct {
		in, proto, addr, err string
	}{
		{in: "127.0.0.1:9092", proto: "PLAINTEXT", addr: "127.0.0.1:9092"},
		{in: ":0", proto: "PLAINTEXT", addr: ":0"},
		{in: "[::1]:9092", proto: "PLAINTEXT", addr: "[::1]:9092"},
		{in: "PLAINTEXT://127.0.0.1:9092", proto: "PLAINTEXT", addr: "127.0.0.1:9092"},
		{in: "SSL://localhost:9093", proto: "SSL", addr: "localhost:9093"},
		{in: "SASL_PLAINTEXT://127.0.0.1:9094", proto: "SASL_PLAINTEXT", addr: "127.0.0.1:9094"},
		{in: "SASL_SSL://127.0.0.1:9095", proto: "SASL_SSL", addr: "127.0.0.1:9095"},
		{in: "sasl_ssl://127.0.0.1:9095", proto: "SASL_SSL", addr: "127.0.0.1:9095"},
		{in: "TLS://127.0.0.1:9092", err: `unknown security protocol "TLS"`},
		{in: "://127.0.0.1:9092", err: `unknown security protocol ""`},
		{in: "SASL_SSL://127.0.0.1", err: "want host:port or PROTOCOL://host:port"},
		{in: "nowhere", err: "want host:port or PROTOCOL://host:port"},
		{in: "127.0.0.1:", err: `port "" is not a number`},
		{in: "SSL://127.0.0.1:http", err: `port "http" is not a number`},
		{in: "127.0.0.1:70000", err: `port "70000" is not a number from 0 to 65535`},
		{in: "SSL://a:1://b:2", err: "want host:port"},
	} {
		proto, addr, err := parseListen(tc.in)
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("parseListen(%q) = %q %q, %v; want an error with %q", tc.in, proto, addr, err, tc.err)
		case tc.err == "" && (err != nil || proto != tc.proto || addr != tc.addr):
			t.Errorf("parseListen(%q) = %q %q, %v; want %q %q", tc.in, proto, addr, err, tc.proto, tc.addr)
		}
	}
}

// TestListenFlagReplacesListeners: --listen PROTOCOL://host:port is the
// node's one listener and its inter-broker listener, whatever listeners,
// protocol map and inter-broker settings the file names; the file's
// security settings stay.
func TestListenFlagReplacesListeners(t *testing.T) {
	path := filepath.Join(t.TempDir(), "server.properties")
	os.WriteFile(path, []byte(`listeners=INSIDE://127.0.0.1:9000,OUTSIDE://127.0.0.1:9001
advertised.listeners=INSIDE://inside:9000,OUTSIDE://outside:9001
listener.security.protocol.map=INSIDE:SSL,OUTSIDE:PLAINTEXT
inter.broker.listener.name=INSIDE
sasl.enabled.mechanisms=SCRAM-SHA-512
sasl.mechanism.inter.broker.protocol=SCRAM-SHA-512
`), 0o600)
	for _, tc := range []struct {
		listen, proto, addr string
	}{
		{"SASL_SSL://127.0.0.1:9100", "SASL_SSL", "127.0.0.1:9100"},
		{"127.0.0.1:9101", "PLAINTEXT", "127.0.0.1:9101"},
	} {
		fs := flag.NewFlagSet("serve", flag.ContinueOnError)
		fs.String("listen", "", "")
		if err := fs.Parse([]string{"--listen", tc.listen}); err != nil {
			t.Fatal(err)
		}
		proto, addr, err := parseListen(tc.listen)
		if err != nil {
			t.Fatal(err)
		}
		s, err := loadSettings(path, fs, 1, proto, addr, slog.New(slog.NewTextHandler(io.Discard, nil)))
		if err != nil {
			t.Fatalf("--listen %s: %v", tc.listen, err)
		}
		ls := s.Listeners()
		if len(ls) != 1 || ls[0].Name != tc.proto || ls[0].SecurityProtocol != tc.proto || ls[0].Addr() != tc.addr {
			t.Errorf("--listen %s: listeners %+v, want one %s listener on %s", tc.listen, ls, tc.proto, tc.addr)
		}
		if ib := s.InterBrokerListener(); ib.Name != tc.proto || ib.SecurityProtocol != tc.proto {
			t.Errorf("--listen %s: inter-broker listener %+v", tc.listen, ib)
		}
		if v, _ := s.Value("sasl.mechanism.inter.broker.protocol"); v.Str() != "SCRAM-SHA-512" {
			t.Errorf("--listen %s: the file's sasl.mechanism.inter.broker.protocol became %q", tc.listen, v.Str())
		}
	}
}

// TestServeListenSASLSSL: a broker given its listener as
// --listen SASL_SSL://host:port and its security settings in the file
// serves SCRAM-SHA-512 clients over TLS there and refuses plaintext ones.
func TestServeListenSASLSSL(t *testing.T) {
	pki := authtest.NewPKI(t)
	keystore := pki.PKCS12Keystore("broker.p12", pki.Issue(pkix.Name{CommonName: "broker"}, true), "ks-pw")
	addr := testport.Addr(t)
	bound := serveWithConfig(t, `
listeners=PLAINTEXT://127.0.0.1:0
sasl.enabled.mechanisms=SCRAM-SHA-512
sasl.mechanism.inter.broker.protocol=SCRAM-SHA-512
ssl.keystore.type=PKCS12
ssl.keystore.location=`+keystore+`
ssl.keystore.password=ks-pw
ssl.truststore.type=PEM
ssl.truststore.location=`+pki.Write("ca.pem", pki.CAPEM)+`
listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required \
    username="broker" password="broker-secret";
`, "--listen", "SASL_SSL://"+addr, "--add-scram", "SCRAM-SHA-512=[name=alice,password=alice-secret]")
	if bound != addr {
		t.Fatalf("listening on %s, want %s", bound, addr)
	}
	tlsCfg := &tls.Config{RootCAs: authtest.Pool(t, pki.CAPEM)}
	if err := roundTrip(t, kgo.SeedBrokers(addr), kgo.DialTLSConfig(tlsCfg),
		kgo.SASL(scram.Auth{User: "alice", Pass: "alice-secret"}.AsSha512Mechanism())); err != nil {
		t.Fatalf("SCRAM-SHA-512 client over TLS: %v", err)
	}
	if !refused(t, kgo.SeedBrokers(addr)) {
		t.Fatal("a plaintext client produced to --listen SASL_SSL://")
	}
}

// FuzzParseListen: any --listen value is refused with an error or read
// as a known protocol and an address that reads back the same.
func FuzzParseListen(f *testing.F) {
	for _, s := range []string{"127.0.0.1:9092", "SASL_SSL://127.0.0.1:9095", "ssl://[::1]:0", "x://", "::::", "SSL://:"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		proto, addr, err := parseListen(s)
		if err != nil {
			return
		}
		if _, known := securityProtocolIDs[proto]; !known {
			t.Fatalf("parseListen(%q): protocol %q", s, proto)
		}
		p2, a2, err := parseListen(proto + "://" + addr)
		if err != nil || p2 != proto || a2 != addr {
			t.Fatalf("parseListen(%q) = %q %q, but %q reads as %q %q, %v", s, proto, addr, proto+"://"+addr, p2, a2, err)
		}
	})
}
