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
	"github.com/twmb/franz-go/pkg/kmsg"
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

// TestMetadataPerListener: a broker with two listeners registers both,
// and a client is told the endpoints of the listener it connected to (as
// Kafka answers), so clients on different networks each get an address
// they can reach. Both work end to end.
func TestMetadataPerListener(t *testing.T) {
	first := testport.Run(t, 2)
	outside, inside := first, first+1
	props := fmt.Sprintf(`listeners=OUTSIDE://127.0.0.1:%d,INSIDE://127.0.0.1:%d
advertised.listeners=OUTSIDE://localhost:%d,INSIDE://127.0.0.1:%d
listener.security.protocol.map=OUTSIDE:PLAINTEXT,INSIDE:PLAINTEXT
inter.broker.listener.name=INSIDE
`, outside, inside, outside, inside)
	serveWithConfig(t, props)
	for _, tc := range []struct {
		dial, want string
	}{
		{fmt.Sprintf("127.0.0.1:%d", outside), fmt.Sprintf("localhost:%d", outside)},
		{fmt.Sprintf("127.0.0.1:%d", inside), fmt.Sprintf("127.0.0.1:%d", inside)},
	} {
		cl, err := kgo.NewClient(kgo.SeedBrokers(tc.dial))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		var got []string
		resp, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
		if err != nil {
			cancel()
			cl.Close()
			t.Fatalf("metadata through %s: %v", tc.dial, err)
		}
		for _, b := range resp.Brokers {
			got = append(got, fmt.Sprintf("%s:%d", b.Host, b.Port))
		}
		cancel()
		cl.Close()
		if len(got) != 1 || got[0] != tc.want {
			t.Errorf("metadata through %s lists %v, want [%s]", tc.dial, got, tc.want)
		}
		if err := roundTrip(t, kgo.SeedBrokers(tc.dial)); err != nil {
			t.Errorf("produce and consume through %s: %v", tc.dial, err)
		}
	}
}

// TestCertificateReloadedOnAlter: altering an SSL listener's keystore
// with IncrementalAlterConfigs (as kafka-configs.sh does, per broker)
// makes new connections get the new certificate, without a restart.
func TestCertificateReloadedOnAlter(t *testing.T) {
	pki := authtest.NewPKI(t)
	first := pki.PKCS12Keystore("first.p12", pki.Issue(pkix.Name{CommonName: "first"}, true), "pw")
	second := pki.PKCS12Keystore("second.p12", pki.Issue(pkix.Name{CommonName: "second"}, true), "pw")
	addr := testport.Addr(t)
	serveWithConfig(t, `
listeners=SSL://`+addr+`
security.inter.broker.protocol=SSL
ssl.keystore.type=PKCS12
ssl.keystore.location=`+first+`
ssl.keystore.password=pw
`)
	served := func() string {
		conn, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: authtest.Pool(t, pki.CAPEM), ServerName: "localhost", InsecureSkipVerify: true})
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		return conn.ConnectionState().PeerCertificates[0].Subject.CommonName
	}
	if got := served(); got != "first" {
		t.Fatalf("serves %q at start, want first", got)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DialTLSConfig(&tls.Config{RootCAs: authtest.Pool(t, pki.CAPEM)}))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeBroker, "1"
	c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	c.Name, c.Value = "listener.name.ssl.ssl.keystore.location", kmsg.StringPtr(second)
	res.Configs = append(res.Configs, c)
	req.Resources = append(req.Resources, res)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil || resp.Resources[0].ErrorCode != 0 {
		t.Fatalf("alter: %v %+v", err, resp)
	}
	deadline := time.Now().Add(15 * time.Second)
	for served() != "second" {
		if time.Now().After(deadline) {
			t.Fatal("the new keystore is not served 15 s after the alter")
		}
		waitABit()
	}
}
