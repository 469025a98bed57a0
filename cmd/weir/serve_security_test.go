package main

import (
	"context"
	"crypto/tls"
	"crypto/x509/pkix"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"weir/internal/auth/authtest"
	"weir/internal/testport"
)

// serveWithConfig runs weir serve with a server.properties and returns
// the address it says it listens on.
func serveWithConfig(t *testing.T, props string, extra ...string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "server.properties")
	if err := os.WriteFile(path, []byte(props), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var out syncBuffer
	done := make(chan int, 1)
	args := append([]string{"serve", "--config", path, "--data-dir", t.TempDir(), "--log-level", "warn"}, extra...)
	go func() { done <- run(ctx, args, &out, &out) }()
	t.Cleanup(func() { cancel(); <-done })
	re := regexp.MustCompile(`weir listening on (127\.0\.0\.1:\d+)`)
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if m := re.FindStringSubmatch(out.String()); m != nil {
			return m[1]
		}
		select {
		case code := <-done:
			done <- code
			t.Fatalf("serve exited with %d:\n%s", code, out.String())
		default:
		}
		waitABit()
	}
	t.Fatalf("serve did not start:\n%s", out.String())
	return ""
}

// roundTrip produces a record and reads it back.
func roundTrip(t *testing.T, opts ...kgo.Opt) error {
	return roundTripWithin(t, 15*time.Second, opts...)
}

// refused checks that a client cannot produce.
func refused(t *testing.T, opts ...kgo.Opt) bool {
	return roundTripWithin(t, 3*time.Second, opts...) != nil
}

func roundTripWithin(t *testing.T, d time.Duration, opts ...kgo.Opt) error {
	t.Helper()
	topic := "secure-" + strings.ReplaceAll(t.Name(), "/", "-")
	cl, err := kgo.NewClient(append(opts, kgo.DefaultProduceTopic(topic), kgo.ConsumeTopics(topic),
		kgo.AllowAutoTopicCreation(), kgo.RetryTimeout(d))...)
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	if err := cl.ProduceSync(ctx, kgo.StringRecord("hello")).FirstErr(); err != nil {
		return err
	}
	fs := cl.PollFetches(ctx)
	if err := fs.Err(); err != nil {
		return err
	}
	if fs.NumRecords() != 1 || string(fs.Records()[0].Value) != "hello" {
		return fmt.Errorf("fetched %d records", fs.NumRecords())
	}
	return nil
}

func TestServeSASLSSL(t *testing.T) {
	pki := authtest.NewPKI(t)
	cert := pki.Issue(pkix.Name{CommonName: "broker"}, true)
	keystore := pki.PKCS12Keystore("broker.p12", cert, "ks-pw")
	addr := testport.Addr(t)
	bound := serveWithConfig(t, `
listeners=SASL_SSL://`+addr+`
security.inter.broker.protocol=SASL_SSL
sasl.enabled.mechanisms=SCRAM-SHA-512,PLAIN
sasl.mechanism.inter.broker.protocol=SCRAM-SHA-512
ssl.keystore.type=PKCS12
ssl.keystore.location=`+keystore+`
ssl.keystore.password=ks-pw
listener.name.sasl_ssl.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required \
    user_bob="bob-secret";
`, "--add-scram", "SCRAM-SHA-512=[name=alice,password=alice-secret]")
	if bound != addr {
		t.Fatalf("listening on %s, configured %s", bound, addr)
	}
	tlsCfg := &tls.Config{RootCAs: authtest.Pool(t, pki.CAPEM)}
	if err := roundTrip(t, kgo.SeedBrokers(addr), kgo.DialTLSConfig(tlsCfg),
		kgo.SASL(scram.Auth{User: "alice", Pass: "alice-secret"}.AsSha512Mechanism())); err != nil {
		t.Fatalf("SCRAM-SHA-512 client: %v", err)
	}
	if !refused(t, kgo.SeedBrokers(addr), kgo.DialTLSConfig(tlsCfg),
		kgo.SASL(scram.Auth{User: "alice", Pass: "wrong"}.AsSha512Mechanism())) {
		t.Fatal("a wrong SCRAM password produced")
	}
	if !refused(t, kgo.SeedBrokers(addr)) {
		t.Fatal("a plaintext client produced to a SASL_SSL listener")
	}

	// weir's tools take Kafka's --command-config.
	clientProps := filepath.Join(t.TempDir(), "client.properties")
	os.WriteFile(clientProps, []byte(`security.protocol=SASL_SSL
sasl.mechanism=PLAIN
sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username="bob" password="bob-secret";
ssl.truststore.type=PEM
ssl.truststore.location=`+pki.Write("ca.pem", pki.CAPEM)+"\n"), 0o600)
	mustWeir(t, "", "topic", "create", "--bootstrap-server", addr, "--command-config", clientProps, "--topic", "via-tools", "--partitions", "2")
	if out := mustWeir(t, "", "topic", "list", "--bootstrap-server", addr, "--command-config", clientProps); !strings.Contains(out, "via-tools") {
		t.Fatalf("topic list:\n%s", out)
	}
	if code, out := weir(t, "", "topic", "list", "--bootstrap-server", addr, "--command-config", clientProps,
		"--property", "sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username=\"bob\" password=\"x\";", "--timeout", "3s"); code == 0 {
		t.Fatalf("a wrong password (--property wins over the file) listed topics:\n%s", out)
	}
}

func TestServeBadSecurityConfig(t *testing.T) {
	path := filepath.Join(t.TempDir(), "server.properties")
	os.WriteFile(path, []byte("listeners=SASL_PLAINTEXT://127.0.0.1:0\nsecurity.inter.broker.protocol=SASL_PLAINTEXT\nsasl.enabled.mechanisms=PLAIN\nsasl.mechanism.inter.broker.protocol=PLAIN\n"), 0o600)
	code, out := weir(t, "", "serve", "--config", path, "--data-dir", t.TempDir())
	if code == 0 || !strings.Contains(out, "listener.name.sasl_plaintext.plain.sasl.jaas.config") {
		t.Fatalf("exit %d:\n%s", code, out)
	}
}
