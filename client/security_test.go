package client

import (
	"bufio"
	"context"
	"crypto/x509/pkix"
	"errors"
	"os/exec"
	"strings"
	"testing"
	"time"

	"weir/internal/auth"
	"weir/internal/auth/authtest"
	"weir/internal/testport"
)

// TestIntegrationSecurity runs a weir broker with a SASL_SSL listener and
// uses the Java client's property names to produce and consume over it
// with SCRAM-SHA-512 and PLAIN, and checks that wrong credentials fail.
func TestIntegrationSecurity(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: needs a broker process")
	}
	bin, err := buildWeir()
	if err != nil {
		t.Fatal(err)
	}
	pki := authtest.NewPKI(t)
	cert := pki.Issue(pkix.Name{CommonName: "broker"}, true)
	addr := testport.Addr(t)
	conf := pki.Write("server.properties", []byte(`listeners=SASL_SSL://`+addr+`
security.inter.broker.protocol=SASL_SSL
sasl.enabled.mechanisms=SCRAM-SHA-512,PLAIN
sasl.mechanism.inter.broker.protocol=SCRAM-SHA-512
ssl.keystore.type=PEM
ssl.keystore.location=`+pki.Write("broker.pem", append(append([]byte{}, cert.KeyPEM...), cert.CertPEM...))+`
listener.name.sasl_ssl.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required user_bob="bob-secret";
`))
	cmd := exec.Command(bin, "serve", "--config", conf, "--data-dir", t.TempDir(), "--log-level", "warn",
		"--add-scram", "SCRAM-SHA-512=[name=alice,password=alice-secret]")
	stdout, _ := cmd.StdoutPipe()
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	up := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if listenLine.MatchString(sc.Text()) {
				up <- true
			}
		}
	}()
	select {
	case <-up:
	case <-time.After(30 * time.Second):
		t.Fatalf("weir did not start:\n%s", stderr.String())
	}
	truststore := pki.Write("ca.pem", pki.CAPEM)
	base := map[string]string{"bootstrap.servers": addr, "security.protocol": "SASL_SSL",
		"ssl.truststore.type": "PEM", "ssl.truststore.location": truststore}
	with := func(kv ...string) map[string]string {
		m := map[string]string{}
		for k, v := range base {
			m[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	scram := with("sasl.mechanism", "SCRAM-SHA-512",
		"sasl.jaas.config", `org.apache.kafka.common.security.scram.ScramLoginModule required username="alice" password="alice-secret";`)
	plain := with("sasl.mechanism", "PLAIN",
		"sasl.jaas.config", `org.apache.kafka.common.security.plain.PlainLoginModule required username="bob" password="bob-secret";`)

	topic := "secure-topic"
	p, err := NewProducer(scram)
	if err != nil {
		t.Fatal(err)
	}
	ctx := testCtx(t)
	defer p.Close(ctx)
	if _, err := p.SendSync(ctx, &Record{Topic: topic, Value: []byte("over SASL_SSL")}); err != nil {
		t.Fatalf("produce with SCRAM-SHA-512: %v", err)
	}
	c, err := NewConsumer(with("group.id", "g", "auto.offset.reset", "earliest", "sasl.mechanism", "PLAIN",
		"sasl.jaas.config", plain["sasl.jaas.config"]))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	if err := c.Subscribe([]string{topic}, nil); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for got := false; !got; {
		if time.Now().After(deadline) {
			t.Fatal("nothing consumed with PLAIN")
		}
		recs, err := c.Poll(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			got = got || string(r.Value) == "over SASL_SSL"
		}
	}

	bad := with("sasl.mechanism", "PLAIN", "request.timeout.ms", "2000",
		"sasl.jaas.config", `org.apache.kafka.common.security.plain.PlainLoginModule required username="bob" password="nope";`)
	a, err := NewAdmin(bad)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	// A refused authentication fails the call at once, as Java's
	// AuthenticationException does, rather than being retried until the
	// call's deadline.
	short, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	start := time.Now()
	_, err = a.ListTopics(short)
	if !errors.Is(err, auth.ErrAuthentication) {
		t.Fatalf("a wrong PLAIN password: %v, want an authentication error", err)
	}
	if took := time.Since(start); short.Err() != nil {
		t.Fatalf("the refused authentication was retried until the deadline (%v)", took)
	}
}
