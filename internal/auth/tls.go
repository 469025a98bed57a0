package auth

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"software.sslmate.com/src/go-pkcs12"
)

// TLSSettings are the ssl.* values of one listener, or of a client.
type TLSSettings struct {
	KeystoreType       string // JKS (read when the file is PKCS12), PKCS12 or PEM
	KeystoreLocation   string
	KeystorePassword   string
	KeyPassword        string
	KeystoreChain      string // PEM text, with type PEM
	KeystoreKey        string // PEM text, with type PEM
	TruststoreType     string
	TruststoreLocation string
	TruststorePassword string
	TruststoreCerts    string // PEM text, with type PEM
	ClientAuth         string // none, requested, required
	EnabledProtocols   []string
	CipherSuites       []string
	// EndpointIdentification is "https" (check the server's name against
	// its certificate) or "" (do not); clients only.
	EndpointIdentification string
}

// ErrJKS is a Java KeyStore file, which weir does not read.
var ErrJKS = errors.New("JKS keystores are not supported; convert the file to PKCS12 (keytool -importkeystore -deststoretype PKCS12) or use ssl.keystore.type=PEM")

// jksMagic starts every JKS file.
var jksMagic = []byte{0xfe, 0xed, 0xfe, 0xed}

// maxStoreBytes bounds a keystore or truststore file.
const maxStoreBytes = 16 << 20

func readStore(what, path string) ([]byte, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	if st.Size() > maxStoreBytes {
		return nil, fmt.Errorf("%s %s: larger than %d bytes", what, path, maxStoreBytes)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	if bytes.HasPrefix(data, jksMagic) {
		return nil, fmt.Errorf("%s %s: %w", what, path, ErrJKS)
	}
	return data, nil
}

// keyPair loads the keystore: nil when none is configured.
func (s TLSSettings) keyPair() (*tls.Certificate, error) {
	switch {
	case strings.EqualFold(s.KeystoreType, "PEM") && (s.KeystoreChain != "" || s.KeystoreKey != ""):
		if s.KeystoreLocation != "" {
			return nil, errors.New("ssl.keystore.location and ssl.keystore.certificate.chain are both set; set one")
		}
		if s.KeystoreChain == "" || s.KeystoreKey == "" {
			return nil, errors.New("ssl.keystore.type=PEM needs both ssl.keystore.certificate.chain and ssl.keystore.key")
		}
		return pemKeyPair([]byte(s.KeystoreChain), []byte(s.KeystoreKey), s.KeyPassword)
	case s.KeystoreLocation == "":
		if s.KeystoreChain != "" || s.KeystoreKey != "" {
			return nil, errors.New("ssl.keystore.certificate.chain and ssl.keystore.key need ssl.keystore.type=PEM")
		}
		return nil, nil
	}
	data, err := readStore("ssl.keystore.location", s.KeystoreLocation)
	if err != nil {
		return nil, err
	}
	if strings.EqualFold(s.KeystoreType, "PEM") {
		return pemKeyPair(data, data, s.KeyPassword)
	}
	password := s.KeystorePassword
	if password == "" && s.KeyPassword != "" {
		password = s.KeyPassword
	}
	key, leaf, chain, err := pkcs12.DecodeChain(data, password)
	if err != nil && s.KeyPassword != "" && s.KeyPassword != password {
		key, leaf, chain, err = pkcs12.DecodeChain(data, s.KeyPassword)
	}
	if err != nil {
		return nil, fmt.Errorf("ssl.keystore.location %s: %w", s.KeystoreLocation, err)
	}
	cert := &tls.Certificate{PrivateKey: key, Leaf: leaf, Certificate: [][]byte{leaf.Raw}}
	for _, c := range chain {
		cert.Certificate = append(cert.Certificate, c.Raw)
	}
	if err := checkKeyMatches(key, leaf); err != nil {
		return nil, fmt.Errorf("ssl.keystore.location %s: %w", s.KeystoreLocation, err)
	}
	return cert, nil
}

// pemKeyPair reads a certificate chain and a private key from PEM.
func pemKeyPair(chainPEM, keyPEM []byte, keyPassword string) (*tls.Certificate, error) {
	var cert tls.Certificate
	for rest := chainPEM; ; {
		var b *pem.Block
		if b, rest = pem.Decode(rest); b == nil {
			break
		}
		if b.Type == "CERTIFICATE" {
			cert.Certificate = append(cert.Certificate, b.Bytes)
		}
	}
	if len(cert.Certificate) == 0 {
		return nil, errors.New("ssl keystore: no CERTIFICATE in the PEM certificate chain")
	}
	key, err := pemPrivateKey(keyPEM, keyPassword)
	if err != nil {
		return nil, err
	}
	if cert.Leaf, err = x509.ParseCertificate(cert.Certificate[0]); err != nil {
		return nil, fmt.Errorf("ssl keystore: certificate: %w", err)
	}
	if err := checkKeyMatches(key, cert.Leaf); err != nil {
		return nil, err
	}
	cert.PrivateKey = key
	return &cert, nil
}

func pemPrivateKey(data []byte, password string) (crypto.PrivateKey, error) {
	for rest := data; ; {
		var b *pem.Block
		if b, rest = pem.Decode(rest); b == nil {
			return nil, errors.New("ssl keystore: no private key in the PEM key")
		}
		switch b.Type {
		case "PRIVATE KEY":
			if password != "" {
				return nil, errors.New("ssl.key.password is set but the PEM key is not encrypted")
			}
			return x509.ParsePKCS8PrivateKey(b.Bytes)
		case "RSA PRIVATE KEY":
			return x509.ParsePKCS1PrivateKey(b.Bytes)
		case "EC PRIVATE KEY":
			return x509.ParseECPrivateKey(b.Bytes)
		case "ENCRYPTED PRIVATE KEY":
			if password == "" {
				return nil, errors.New("the PEM key is encrypted: set ssl.key.password")
			}
			der, err := decryptPKCS8(b.Bytes, []byte(password))
			if err != nil {
				return nil, fmt.Errorf("ssl keystore: encrypted key: %w", err)
			}
			return x509.ParsePKCS8PrivateKey(der)
		}
	}
}

// checkKeyMatches refuses a key that is not the certificate's.
func checkKeyMatches(key crypto.PrivateKey, leaf *x509.Certificate) error {
	type publicKeyer interface{ Public() crypto.PublicKey }
	pk, ok := key.(publicKeyer)
	if !ok {
		return fmt.Errorf("ssl keystore: unsupported private key type %T", key)
	}
	type equaler interface{ Equal(crypto.PublicKey) bool }
	switch pub := pk.Public().(type) {
	case *rsa.PublicKey, *ecdsa.PublicKey, ed25519.PublicKey:
		if !pub.(equaler).Equal(leaf.PublicKey) {
			return errors.New("ssl keystore: the private key does not match the certificate")
		}
		return nil
	}
	return fmt.Errorf("ssl keystore: unsupported private key type %T", key)
}

// trustPool loads the truststore: nil when none is configured.
func (s TLSSettings) trustPool() (*x509.CertPool, error) {
	var certs []*x509.Certificate
	switch {
	case strings.EqualFold(s.TruststoreType, "PEM") && s.TruststoreCerts != "":
		if s.TruststoreLocation != "" {
			return nil, errors.New("ssl.truststore.location and ssl.truststore.certificates are both set; set one")
		}
		return pemPool("ssl.truststore.certificates", []byte(s.TruststoreCerts))
	case s.TruststoreLocation == "":
		if s.TruststoreCerts != "" {
			return nil, errors.New("ssl.truststore.certificates needs ssl.truststore.type=PEM")
		}
		return nil, nil
	}
	data, err := readStore("ssl.truststore.location", s.TruststoreLocation)
	if err != nil {
		return nil, err
	}
	if strings.EqualFold(s.TruststoreType, "PEM") {
		return pemPool("ssl.truststore.location "+s.TruststoreLocation, data)
	}
	if certs, err = pkcs12.DecodeTrustStore(data, s.TruststorePassword); err != nil {
		return nil, fmt.Errorf("ssl.truststore.location %s: %w", s.TruststoreLocation, err)
	}
	if len(certs) == 0 {
		return nil, fmt.Errorf("ssl.truststore.location %s: no trusted certificates", s.TruststoreLocation)
	}
	pool := x509.NewCertPool()
	for _, c := range certs {
		pool.AddCert(c)
	}
	return pool, nil
}

func pemPool(what string, data []byte) (*x509.CertPool, error) {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(data) {
		return nil, fmt.Errorf("%s: no PEM certificates", what)
	}
	return pool, nil
}

var tlsVersions = map[string]uint16{"TLSv1": tls.VersionTLS10, "TLSv1.1": tls.VersionTLS11, "TLSv1.2": tls.VersionTLS12, "TLSv1.3": tls.VersionTLS13}

// versionRange reads ssl.enabled.protocols, which must be a contiguous
// range of versions: Go enables a minimum and a maximum, not a set.
func versionRange(protocols []string) (lo, hi uint16, err error) {
	if len(protocols) == 0 {
		return tls.VersionTLS12, tls.VersionTLS13, nil
	}
	var vs []uint16
	for _, p := range protocols {
		v, ok := tlsVersions[p]
		if !ok {
			return 0, 0, fmt.Errorf("ssl.enabled.protocols: %s is not one of TLSv1, TLSv1.1, TLSv1.2, TLSv1.3", p)
		}
		vs = append(vs, v)
	}
	slices.Sort(vs)
	vs = slices.Compact(vs)
	if int(vs[len(vs)-1]-vs[0]) != len(vs)-1 {
		return 0, 0, fmt.Errorf("ssl.enabled.protocols %s: only a contiguous range of versions can be enabled", strings.Join(protocols, ","))
	}
	return vs[0], vs[len(vs)-1], nil
}

// cipherSuites reads ssl.cipher.suites (IANA names, as Java uses them).
// TLS 1.3 suites are accepted and ignored: Go always enables them.
func cipherSuites(names []string) ([]uint16, error) {
	if len(names) == 0 {
		return nil, nil
	}
	known := map[string]uint16{}
	for _, c := range append(tls.CipherSuites(), tls.InsecureCipherSuites()...) {
		known[c.Name] = c.ID
	}
	var ids []uint16
	for _, n := range names {
		switch n {
		case "TLS_AES_128_GCM_SHA256", "TLS_AES_256_GCM_SHA384", "TLS_CHACHA20_POLY1305_SHA256":
			continue
		}
		id, ok := known[n]
		if !ok {
			return nil, fmt.Errorf("ssl.cipher.suites: %s is not a cipher suite weir supports", n)
		}
		ids = append(ids, id)
	}
	return ids, nil
}

// ServerTLS builds a listener's TLS configuration: its certificate, the
// client authentication it asks for and the truststore that checks client
// certificates.
func ServerTLS(s TLSSettings) (*tls.Config, error) {
	cert, err := s.keyPair()
	if err != nil {
		return nil, err
	}
	if cert == nil {
		return nil, errors.New("an SSL listener needs a keystore: ssl.keystore.location, or ssl.keystore.type=PEM with ssl.keystore.certificate.chain and ssl.keystore.key")
	}
	pool, err := s.trustPool()
	if err != nil {
		return nil, err
	}
	cfg := &tls.Config{Certificates: []tls.Certificate{*cert}, ClientCAs: pool}
	switch strings.ToLower(s.ClientAuth) {
	case "", "none":
		cfg.ClientAuth = tls.NoClientCert
	case "requested":
		cfg.ClientAuth = tls.VerifyClientCertIfGiven
	case "required":
		cfg.ClientAuth = tls.RequireAndVerifyClientCert
	default:
		return nil, fmt.Errorf("ssl.client.auth %q: want none, requested or required", s.ClientAuth)
	}
	if cfg.ClientAuth != tls.NoClientCert && pool == nil {
		return nil, fmt.Errorf("ssl.client.auth=%s needs a truststore (ssl.truststore.location or ssl.truststore.certificates) to check client certificates", s.ClientAuth)
	}
	if err := s.applyProtocols(cfg); err != nil {
		return nil, err
	}
	// Session tickets would let a client resume without presenting its
	// certificate again after the listener's truststore changed.
	cfg.SessionTicketsDisabled = true
	return cfg, nil
}

// ClientTLS builds a client's TLS configuration for connecting to host.
func ClientTLS(s TLSSettings, host string) (*tls.Config, error) {
	cert, err := s.keyPair()
	if err != nil {
		return nil, err
	}
	pool, err := s.trustPool()
	if err != nil {
		return nil, err
	}
	cfg := &tls.Config{RootCAs: pool, ServerName: host}
	if cert != nil {
		cfg.Certificates = []tls.Certificate{*cert}
	}
	switch strings.ToLower(s.EndpointIdentification) {
	case "https":
	case "":
		// Check the chain, not the name, as Java does with the
		// identification algorithm off.
		cfg.InsecureSkipVerify = true
		cfg.VerifyConnection = func(cs tls.ConnectionState) error {
			opts := x509.VerifyOptions{Roots: pool, Intermediates: x509.NewCertPool()}
			for _, c := range cs.PeerCertificates[1:] {
				opts.Intermediates.AddCert(c)
			}
			_, err := cs.PeerCertificates[0].Verify(opts)
			return err
		}
	default:
		return nil, fmt.Errorf("ssl.endpoint.identification.algorithm %q: want https or empty", s.EndpointIdentification)
	}
	if err := s.applyProtocols(cfg); err != nil {
		return nil, err
	}
	return cfg, nil
}

func (s TLSSettings) applyProtocols(cfg *tls.Config) error {
	var err error
	if cfg.MinVersion, cfg.MaxVersion, err = versionRange(s.EnabledProtocols); err != nil {
		return err
	}
	cfg.CipherSuites, err = cipherSuites(s.CipherSuites)
	return err
}
