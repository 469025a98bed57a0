package quorum

import (
	"errors"
	"fmt"
	"net"
	"sync"
	"syscall"
	"time"

	"github.com/hashicorp/raft"
)

// refusedWait is how long a dial to a peer whose port refuses connections
// (its process is down or restarting) keeps trying, every refusedRetry,
// before it fails. hashicorp/raft backs off after each failed append to a
// peer, doubling up to about 10 s between attempts, so a peer down for a
// minute, failing at once each time, found its leader waiting up to 10 s
// more after its return before sending it anything: a restarted node then
// caught up late. Failing slowly instead keeps the backoff short, and the
// dial connects within refusedRetry of the peer's return.
const (
	refusedWait  = 30 * time.Second
	refusedRetry = 25 * time.Millisecond
)

// peerDialer dials raft peers, retrying refused connections for up to
// refusedWait until Stop.
type peerDialer struct {
	stop     chan struct{}
	stopOnce sync.Once
}

func newPeerDialer() *peerDialer { return &peerDialer{stop: make(chan struct{})} }

// Stop makes dials in progress and later ones give up on a refused
// connection at once: the node is closing, and raft's shutdown waits for
// the goroutines that dial.
func (d *peerDialer) Stop() { d.stopOnce.Do(func() { close(d.stop) }) }

// dial calls connect until it succeeds, fails otherwise than by a refused
// connection, refusedWait has passed, or Stop.
func (d *peerDialer) dial(connect func() (net.Conn, error)) (net.Conn, error) {
	deadline := time.Now().Add(refusedWait)
	for {
		conn, err := connect()
		if err == nil || !errors.Is(err, syscall.ECONNREFUSED) || !time.Now().Before(deadline) {
			return conn, err
		}
		t := time.NewTimer(refusedRetry)
		select {
		case <-d.stop:
			t.Stop()
			return nil, err
		case <-t.C:
		}
	}
}

// tcpStream is a plain TCP raft.StreamLayer whose dials go through a
// peerDialer.
type tcpStream struct {
	net.Listener
	advertise net.Addr
	dialer    *peerDialer
}

// newTCPStream listens on bind and advertises advertise.
func newTCPStream(bind string, advertise net.Addr, d *peerDialer) (*tcpStream, error) {
	if a, ok := advertise.(*net.TCPAddr); ok && (a.IP == nil || a.IP.IsUnspecified()) {
		return nil, fmt.Errorf("raft address %s is not one its peers can dial", bind)
	}
	ln, err := net.Listen("tcp", bind)
	if err != nil {
		return nil, err
	}
	return &tcpStream{Listener: ln, advertise: advertise, dialer: d}, nil
}

func (s *tcpStream) Addr() net.Addr {
	if s.advertise != nil {
		return s.advertise
	}
	return s.Listener.Addr()
}

// Dial connects to a peer, each attempt within timeout.
func (s *tcpStream) Dial(address raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	return s.dialer.dial(func() (net.Conn, error) {
		return net.DialTimeout("tcp", string(address), timeout)
	})
}
