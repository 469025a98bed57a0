// Package authtest makes the certificates and key stores that tests of
// TLS listeners and clients need, in memory and in a test's temporary
// directory: nothing is read from the network or checked in.
package authtest

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

// PKI is a CA that issues server and client certificates, all made in
// memory.
type PKI struct {
	CA     *x509.Certificate
	CAPEM  []byte
	caKey  *ecdsa.PrivateKey
	serial int64
	dir    string
	t      testing.TB
}

// Cert is an issued certificate and its key.
type Cert struct {
	Cert    *x509.Certificate
	Key     *ecdsa.PrivateKey
	CertPEM []byte
	KeyPEM  []byte
}

// NewPKI makes a CA.
func NewPKI(t testing.TB) *PKI {
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
	return &PKI{CA: ca, caKey: key, CAPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), serial: 1, dir: t.TempDir(), t: t}
}

// issue makes a certificate; a server one for 127.0.0.1 and localhost
// when server is true.
func (p *PKI) Issue(subject pkix.Name, server bool) Cert {
	if server {
		return p.IssueServer(subject, []string{"localhost"}, []net.IP{net.ParseIP("127.0.0.1")})
	}
	return p.IssueServer(subject, nil, nil)
}

// issueServer makes a server certificate for the given names, or a
// client one when there are none.
func (p *PKI) IssueServer(subject pkix.Name, dns []string, ips []net.IP) Cert {
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
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.CA, &key.PublicKey, p.caKey)
	if err != nil {
		p.t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	pk, _ := x509.MarshalPKCS8PrivateKey(key)
	return Cert{
		Cert:    cert,
		Key:     key,
		CertPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		KeyPEM:  pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: pk}),
	}
}

// Write writes a file into the test's directory and returns its path.
func (p *PKI) Write(name string, data []byte) string {
	p.t.Helper()
	path := filepath.Join(p.dir, name)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		p.t.Fatal(err)
	}
	return path
}

// pkcs12Keystore writes c with the CA as its chain to a PKCS12 file.
func (p *PKI) PKCS12Keystore(name string, c Cert, password string) string {
	p.t.Helper()
	data, err := pkcs12.Modern.Encode(c.Key, c.Cert, []*x509.Certificate{p.CA}, password)
	if err != nil {
		p.t.Fatal(err)
	}
	return p.Write(name, data)
}

// pkcs12Truststore writes the CA to a PKCS12 truststore.
func (p *PKI) PKCS12Truststore(name, password string) string {
	p.t.Helper()
	data, err := pkcs12.Modern.EncodeTrustStore([]*x509.Certificate{p.CA}, password)
	if err != nil {
		p.t.Fatal(err)
	}
	return p.Write(name, data)
}

// Pool is a pool of the PEM certificates.
func Pool(t testing.TB, pemData []byte) *x509.CertPool {
	t.Helper()
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pemData) {
		t.Fatal("no certificates")
	}
	return pool
}
