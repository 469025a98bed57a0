package quorum

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/hashicorp/raft"
)

// TransportTLS secures the raft transport of a multi-node quorum: every
// connection is TLS and each side presents its certificate and checks
// the other's (mutual TLS), so only nodes holding a certificate that
// chains to the truststore take part in the metadata quorum.
type TransportTLS struct {
	// Server is the accepting side's configuration: its certificate and,
	// in ClientCAs, the truststore a peer's chain must reach. A peer's
	// certificate is accepted whatever its extended key usages (a
	// broker's keystore certificate is usually a server certificate).
	Server *tls.Config
	// Client is the dialling side's configuration for a peer's host: its
	// certificate and the checks of the peer's.
	Client func(host string) (*tls.Config, error)
}

// serverConfig is t.Server requiring a peer certificate that chains to
// its ClientCAs.
func (t *TransportTLS) serverConfig() (*tls.Config, error) {
	if t.Server == nil || len(t.Server.Certificates) == 0 || t.Client == nil {
		return nil, errors.New("quorum: raft TLS needs this node's certificate and a client configuration")
	}
	roots := t.Server.ClientCAs
	if roots == nil {
		return nil, errors.New("quorum: raft TLS needs a truststore (ssl.truststore.*) to check the other nodes' certificates")
	}
	cfg := t.Server.Clone()
	cfg.ClientAuth = tls.RequireAnyClientCert
	cfg.VerifyPeerCertificate = func(raw [][]byte, _ [][]*x509.Certificate) error {
		certs := make([]*x509.Certificate, 0, len(raw))
		for _, der := range raw {
			c, err := x509.ParseCertificate(der)
			if err != nil {
				return fmt.Errorf("quorum: peer certificate: %w", err)
			}
			certs = append(certs, c)
		}
		opts := x509.VerifyOptions{Roots: roots, Intermediates: x509.NewCertPool(), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}}
		for _, c := range certs[1:] {
			opts.Intermediates.AddCert(c)
		}
		_, err := certs[0].Verify(opts)
		return err
	}
	return cfg, nil
}

// tlsStream is a raft.StreamLayer over TLS: tcpStream's listener and
// address, with a TLS listener and dial.
type tlsStream struct {
	tcpStream
	client func(host string) (*tls.Config, error)
}

// newTLSStream listens on bind with TLS and advertises advertise.
func newTLSStream(bind string, advertise net.Addr, t *TransportTLS, d *peerDialer) (*tlsStream, error) {
	server, err := t.serverConfig()
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", bind)
	if err != nil {
		return nil, err
	}
	return &tlsStream{tcpStream: tcpStream{Listener: tls.NewListener(ln, server), advertise: advertise, dialer: d}, client: t.Client}, nil
}

// Dial connects to a peer and completes the handshake within timeout.
func (s *tlsStream) Dial(address raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	host, _, err := net.SplitHostPort(string(address))
	if err != nil {
		return nil, err
	}
	cfg, err := s.client(host)
	if err != nil {
		return nil, err
	}
	return s.dialer.dial(func() (net.Conn, error) {
		return tls.DialWithDialer(&net.Dialer{Timeout: timeout}, "tcp", string(address), cfg)
	})
}
