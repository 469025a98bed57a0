package chaos

import (
	"context"
	"crypto/tls"
	"crypto/x509/pkix"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"weir/internal/auth/authtest"
)

// TestKillLoopSASLSSL is the kill loop on a cluster whose every listener
// is SASL_SSL with SCRAM-SHA-512, inter-broker included (replication,
// forwarded requests, registration with the controller), every client
// connecting so; a plaintext client must get no answer from any node.
func TestKillLoopSASLSSL(t *testing.T) {
	if testing.Short() {
		t.Skip("real processes for half a minute; not in -short")
	}
	s := loadSettings(t)
	killLoop(t, "kill sasl_ssl", s.saslKillRounds, s.seed, newSASLSSL(t))
}

// The SCRAM-SHA-512 users of a SASL_SSL cluster: the brokers' own, for
// their connections to each other, and the clients'.
const (
	brokerUser, brokerPassword = "broker", "broker-secret"
	clientUser, clientPassword = "chaos", "chaos-secret"
)

// saslSSL is what makes a cluster's every listener SASL_SSL with
// SCRAM-SHA-512, and its clients connect so: a CA made for the test, one
// broker certificate for 127.0.0.1 that every node serves, the brokers'
// SCRAM user (inter-broker connections check the certificate against the
// CA and authenticate as it) and the clients' user, both served by every
// node from --add-scram.
type saslSSL struct {
	props     map[string]string // broker properties
	args      []string          // extra weir serve flags
	tlsConfig *tls.Config       // the clients' TLS: the test CA as the only root
	javaProps string            // a client properties file for the Java producer
}

func newSASLSSL(t *testing.T) *saslSSL {
	t.Helper()
	pki := authtest.NewPKI(t)
	keystore := pki.PKCS12Keystore("broker.p12", pki.Issue(pkix.Name{CommonName: "broker"}, true), "keystore-secret")
	ca := pki.Write("ca.pem", pki.CAPEM)
	jaas := func(user, password string) string {
		return fmt.Sprintf(`org.apache.kafka.common.security.scram.ScramLoginModule required username="%s" password="%s";`, user, password)
	}
	s := &saslSSL{
		props: map[string]string{
			"sasl.enabled.mechanisms":                               "SCRAM-SHA-512",
			"sasl.mechanism.inter.broker.protocol":                  "SCRAM-SHA-512",
			"ssl.keystore.type":                                     "PKCS12",
			"ssl.keystore.location":                                 keystore,
			"ssl.keystore.password":                                 "keystore-secret",
			"ssl.truststore.type":                                   "PEM",
			"ssl.truststore.location":                               ca,
			"listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config": jaas(brokerUser, brokerPassword),
		},
		args: []string{
			"--add-scram", fmt.Sprintf("SCRAM-SHA-512=[name=%s,password=%s]", brokerUser, brokerPassword),
			"--add-scram", fmt.Sprintf("SCRAM-SHA-512=[name=%s,password=%s]", clientUser, clientPassword),
		},
		tlsConfig: &tls.Config{RootCAs: authtest.Pool(t, pki.CAPEM)},
	}
	s.javaProps = pki.Write("java-client.properties", fmt.Appendf(nil, `security.protocol=SASL_SSL
sasl.mechanism=SCRAM-SHA-512
sasl.jaas.config=%s
ssl.truststore.type=PEM
ssl.truststore.location=%s
`, jaas(clientUser, clientPassword), ca))
	return s
}

// clientOpts connect a franz-go client over TLS, verifying the brokers'
// certificate, and authenticate it as the clients' SCRAM user.
func (s *saslSSL) clientOpts() []kgo.Opt {
	return []kgo.Opt{
		kgo.DialTLSConfig(s.tlsConfig),
		kgo.SASL(scram.Auth{User: clientUser, Pass: clientPassword}.AsSha512Mechanism()),
	}
}

// refusesPlaintext checks that no node answers a plaintext client: an
// ApiVersions request to each, without TLS or SASL, gets no answer.
func (c *chaosCluster) refusesPlaintext(ctx context.Context) {
	t := c.t
	t.Helper()
	var wg sync.WaitGroup
	answered := make([]error, nodes+1)
	for n := 1; n <= nodes; n++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cl, err := kgo.NewClient(kgo.SeedBrokers(c.Spec.KafkaAddr(n)), kgo.RetryTimeout(2*time.Second))
			if err != nil {
				answered[n] = err
				return
			}
			defer cl.Close()
			rctx, cancel := context.WithTimeout(ctx, 3*time.Second)
			defer cancel()
			if _, err := kmsg.NewPtrApiVersionsRequest().RequestWith(rctx, cl); err == nil {
				answered[n] = fmt.Errorf("node %d answered a plaintext client's ApiVersions", n)
			}
		}()
	}
	wg.Wait()
	for _, err := range answered {
		if err != nil {
			t.Fatal(err)
		}
	}
}

// writeProps writes broker properties to a server.properties file in dir.
func writeProps(t *testing.T, dir string, props map[string]string) string {
	t.Helper()
	var b []byte
	for k, v := range props {
		b = fmt.Appendf(b, "%s=%s\n", k, v)
	}
	path := filepath.Join(dir, "server.properties")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
