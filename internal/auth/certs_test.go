package auth

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"software.sslmate.com/src/go-pkcs12"
)

// testPKI is a CA, a server certificate for 127.0.0.1 and localhost, and
// client certificates, all made in memory.
type testPKI struct {
	ca     *x509.Certificate
	caKey  *ecdsa.PrivateKey
	caPEM  []byte
	serial int64
	dir    string
	t      testing.TB
}

type testCert struct {
	cert    *x509.Certificate
	key     *ecdsa.PrivateKey
	certPEM []byte
	keyPEM  []byte
}

func newPKI(t testing.TB) *testPKI {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "weir test CA"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(der)
	return &testPKI{ca: ca, caKey: key, caPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), serial: 1, dir: t.TempDir(), t: t}
}

// issue makes a certificate; a server one for 127.0.0.1 and localhost
// when server is true.
func (p *testPKI) issue(subject pkix.Name, server bool) testCert {
	if server {
		return p.issueServer(subject, []string{"localhost"}, []net.IP{net.ParseIP("127.0.0.1")})
	}
	return p.issueServer(subject, nil, nil)
}

// issueServer makes a server certificate for the given names, or a
// client one when there are none.
func (p *testPKI) issueServer(subject pkix.Name, dns []string, ips []net.IP) testCert {
	server := len(dns)+len(ips) > 0
	p.t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		p.t.Fatal(err)
	}
	p.serial++
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(p.serial),
		Subject:      subject,
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	if server {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
		tmpl.IPAddresses = ips
		tmpl.DNSNames = dns
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.ca, &key.PublicKey, p.caKey)
	if err != nil {
		p.t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	pk, _ := x509.MarshalPKCS8PrivateKey(key)
	return testCert{
		cert:    cert,
		key:     key,
		certPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		keyPEM:  pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: pk}),
	}
}

func (p *testPKI) write(name string, data []byte) string {
	p.t.Helper()
	path := filepath.Join(p.dir, name)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		p.t.Fatal(err)
	}
	return path
}

// pkcs12Keystore writes c with the CA as its chain to a PKCS12 file.
func (p *testPKI) pkcs12Keystore(name string, c testCert, password string) string {
	p.t.Helper()
	data, err := pkcs12.Modern.Encode(c.key, c.cert, []*x509.Certificate{p.ca}, password)
	if err != nil {
		p.t.Fatal(err)
	}
	return p.write(name, data)
}

// pkcs12Truststore writes the CA to a PKCS12 truststore.
func (p *testPKI) pkcs12Truststore(name, password string) string {
	p.t.Helper()
	data, err := pkcs12.Modern.EncodeTrustStore([]*x509.Certificate{p.ca}, password)
	if err != nil {
		p.t.Fatal(err)
	}
	return p.write(name, data)
}

func mustPool(t testing.TB, pemData []byte) *x509.CertPool {
	t.Helper()
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pemData) {
		t.Fatal("no certificates")
	}
	return pool
}
