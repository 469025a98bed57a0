// Package security runs franz-go against brokers whose listeners ask for
// TLS and SASL (see brokers in this directory): SASL_SSL with SCRAM and
// PLAIN, SSL with client certificates, and the refusals of wrong
// credentials.
package security

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"weir/test/compat/internal/compattest"
)

const (
	saslEnv = "WEIR_SASL_SSL_BOOTSTRAP"
	sslEnv  = "WEIR_SSL_BOOTSTRAP"
	dirEnv  = "WEIR_SECURITY_DIR"
)

func TestMain(m *testing.M) { compattest.Main(m, saslEnv, sslEnv, dirEnv) }

func pki(name string) string { return filepath.Join(os.Getenv(dirEnv), name) }

// tlsConfig trusts the suite's CA and, when cert is not "", presents that
// client certificate.
func tlsConfig(t *testing.T, cert string) *tls.Config {
	t.Helper()
	ca, err := os.ReadFile(pki("ca.pem"))
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		t.Fatal("no CA certificate")
	}
	cfg := &tls.Config{RootCAs: pool}
	if cert != "" {
		kp, err := tls.LoadX509KeyPair(pki(cert+".crt"), pki(cert+".key"))
		if err != nil {
			t.Fatal(err)
		}
		cfg.Certificates = []tls.Certificate{kp}
	}
	return cfg
}

func client(t *testing.T, seeds string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(strings.Split(seeds, ",")...)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// roundTrip creates a topic, produces n records of the suite's data set
// with an idempotent producer and reads each back exactly once.
func roundTrip(t *testing.T, seeds string, opts ...kgo.Opt) {
	t.Helper()
	const n = 500
	adm := kadm.NewClient(client(t, seeds, opts...))
	topic := compattest.Topic(t, adm, "security", 3, nil)
	want := compattest.Produce(t, client(t, seeds, opts...), topic, 0, n)
	cl := client(t, seeds, append(opts, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))...)
	ctx := compattest.Ctx(t, 30*time.Second)
	var recs []*kgo.Record
	for len(recs) < n {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %d of %d records", len(recs), n)
		}
		fs.EachError(func(topic string, p int32, err error) { t.Fatalf("fetch %s/%d: %v", topic, p, err) })
		recs = append(recs, fs.Records()...)
	}
	if err := compattest.VerifyExactlyOnce(recs, 0, n, want); err != nil {
		t.Fatal(err)
	}
}

// refused checks that a client with these options cannot list topics.
func refused(t *testing.T, seeds string, opts ...kgo.Opt) error {
	t.Helper()
	cl := client(t, seeds, append(opts, kgo.RetryTimeout(3*time.Second), kgo.RequestRetries(1))...)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := kadm.NewClient(cl).ListTopics(ctx)
	if err == nil {
		t.Fatal("the broker served a client it should have refused")
	}
	return err
}

func TestSASLSSL(t *testing.T) {
	seeds := os.Getenv(saslEnv)
	for _, tc := range []struct {
		name string
		mech sasl.Mechanism
	}{
		{"SCRAM-SHA-512", scram.Auth{User: "alice", Pass: "alice-secret"}.AsSha512Mechanism()},
		{"SCRAM-SHA-256", scram.Auth{User: "alice", Pass: "alice-secret"}.AsSha256Mechanism()},
		{"PLAIN", plain.Auth{User: "bob", Pass: "bob-secret"}.AsMechanism()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			roundTrip(t, seeds, kgo.DialTLSConfig(tlsConfig(t, "")), kgo.SASL(tc.mech))
		})
	}
	t.Run("wrong SCRAM password", func(t *testing.T) {
		err := refused(t, seeds, kgo.DialTLSConfig(tlsConfig(t, "")),
			kgo.SASL(scram.Auth{User: "alice", Pass: "nope"}.AsSha512Mechanism()))
		if !strings.Contains(err.Error(), "SASL_AUTHENTICATION_FAILED") {
			t.Fatalf("refused with %v, want SASL_AUTHENTICATION_FAILED", err)
		}
	})
	t.Run("wrong PLAIN password", func(t *testing.T) {
		err := refused(t, seeds, kgo.DialTLSConfig(tlsConfig(t, "")), kgo.SASL(plain.Auth{User: "bob", Pass: "nope"}.AsMechanism()))
		if !strings.Contains(err.Error(), "Invalid username or password") {
			t.Fatalf("refused with %v, want PLAIN's message", err)
		}
	})
	t.Run("no SASL", func(t *testing.T) {
		refused(t, seeds, kgo.DialTLSConfig(tlsConfig(t, "")))
	})
}

func TestSSLClientCertificate(t *testing.T) {
	seeds := os.Getenv(sslEnv)
	t.Run("with a certificate", func(t *testing.T) {
		roundTrip(t, seeds, kgo.DialTLSConfig(tlsConfig(t, "alice")))
	})
	t.Run("without a certificate", func(t *testing.T) {
		refused(t, seeds, kgo.DialTLSConfig(tlsConfig(t, "")))
	})
	t.Run("plaintext", func(t *testing.T) {
		refused(t, seeds)
	})
}
