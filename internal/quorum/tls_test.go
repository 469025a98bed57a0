package quorum

import (
	"crypto/tls"
	"crypto/x509/pkix"
	"fmt"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"weir/internal/auth/authtest"
)

// transportTLS is a node's mutual TLS over pki: its server certificate
// (for 127.0.0.1) presented both ways, pki's CA trusted.
func transportTLS(t *testing.T, pki *authtest.PKI, name string) *TransportTLS {
	t.Helper()
	c := pki.Issue(pkix.Name{CommonName: name}, true)
	cert, err := tls.X509KeyPair(c.CertPEM, c.KeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	roots := authtest.Pool(t, pki.CAPEM)
	return &TransportTLS{
		Server: &tls.Config{Certificates: []tls.Certificate{cert}, ClientCAs: roots},
		Client: func(host string) (*tls.Config, error) {
			return &tls.Config{Certificates: []tls.Certificate{cert}, RootCAs: roots, ServerName: host}, nil
		},
	}
}

// TestTLSQuorum: three voters over mutual TLS elect a leader and
// replicate; a peer without a certificate the truststore trusts, or a
// plain TCP one, gets no answer to a raft request.
func TestTLSQuorum(t *testing.T) {
	pki := authtest.NewPKI(t)
	c := startClusterWith(t, 3, func(i int, cfg *Config) { cfg.TLS = transportTLS(t, pki, fmt.Sprint("node-", i+1)) })
	l := c.leader(t)
	for i := range 10 {
		propose(t, c.nodes[l], fmt.Sprint("tls-", i))
	}
	for i, f := range c.fsms {
		eventually(t, 5*time.Second, fmt.Sprint("node ", i+1, " applies 10"), func() bool { return len(f.list()) == 10 })
	}
	target := raft.ServerAddress(c.cfgs[l].Addr)
	heartbeat := func(tr *raft.NetworkTransport) error {
		req := &raft.AppendEntriesRequest{RPCHeader: raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax, ID: []byte("intruder"), Addr: []byte("127.0.0.1:1")}, Term: 1 << 40}
		return tr.AppendEntries(raft.ServerID("intruder"), target, req, &raft.AppendEntriesResponse{})
	}

	// Peers that trust the quorum's CA (so they accept its certificates)
	// but present a certificate of another CA, or none: the quorum
	// refuses their handshake.
	roots := authtest.Pool(t, pki.CAPEM)
	otherCert := transportTLS(t, authtest.NewPKI(t), "intruder").Server.Certificates
	for _, intruder := range []struct {
		name  string
		certs []tls.Certificate
	}{{"another CA's certificate", otherCert}, {"no certificate", nil}} {
		tt := transportTLS(t, authtest.NewPKI(t), "intruder")
		tt.Client = func(host string) (*tls.Config, error) {
			return &tls.Config{Certificates: intruder.certs, RootCAs: roots, ServerName: host}, nil
		}
		stream, err := newTLSStream("127.0.0.1:0", nil, tt, newPeerDialer())
		if err != nil {
			t.Fatal(err)
		}
		tr := raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{Stream: stream, MaxPool: 1, Timeout: 2 * time.Second})
		defer tr.Close()
		if err := heartbeat(tr); err == nil {
			t.Fatalf("a peer with %s got an AppendEntries answer", intruder.name)
		}
	}
	// Plain TCP: no answer either.
	plain, err := raft.NewTCPTransport("127.0.0.1:0", nil, 1, 2*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	if err := heartbeat(plain); err == nil {
		t.Fatal("a plain TCP peer got an AppendEntries answer")
	}
	// The quorum kept its leader and term: the intruders' huge term was
	// never heard.
	if !c.nodes[l].IsLeader() {
		t.Fatal("the leader stepped down after the refused requests")
	}
	propose(t, c.nodes[l], "after")

	// Without a truststore there is no mutual TLS: Open refuses.
	bad := transportTLS(t, pki, "x")
	bad.Server.ClientCAs = nil
	if _, err := Open(Config{ID: 9, Dir: t.TempDir(), Addr: freeAddr(t), Bootstrap: []Peer{{ID: 9, Addr: "127.0.0.1:1"}}, TLS: bad}, &listFSM{}); err == nil {
		t.Fatal("raft TLS without a truststore was accepted")
	}
}
