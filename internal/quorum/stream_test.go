package quorum

import (
	"errors"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"weir/internal/testport"
)

// TestDialWaitsForARefusingPeer: a dial to a port that refuses
// connections (a peer restarting) connects once the peer listens; Stop
// ends such a dial at once; other failures return at once.
func TestDialWaitsForARefusingPeer(t *testing.T) {
	t.Run("connects when the peer comes back", func(t *testing.T) {
		addr := testport.Addr(t)
		s := &tcpStream{dialer: newPeerDialer()}
		type result struct {
			conn net.Conn
			err  error
		}
		done := make(chan result, 1)
		go func() {
			c, err := s.Dial(raft.ServerAddress(addr), time.Second)
			done <- result{c, err}
		}()
		time.Sleep(300 * time.Millisecond) // refused meanwhile
		select {
		case r := <-done:
			t.Fatalf("dial returned while the peer was down: %v", r.err)
		default:
		}
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		select {
		case r := <-done:
			if r.err != nil {
				t.Fatalf("dial after the peer came back: %v", r.err)
			}
			r.conn.Close()
		case <-time.After(5 * time.Second):
			t.Fatal("dial still waiting 5 s after the peer came back")
		}
	})
	t.Run("Stop ends a refused dial", func(t *testing.T) {
		d := newPeerDialer()
		s := &tcpStream{dialer: d}
		done := make(chan error, 1)
		go func() {
			_, err := s.Dial(raft.ServerAddress(testport.Addr(t)), time.Second)
			done <- err
		}()
		time.Sleep(100 * time.Millisecond)
		d.Stop()
		select {
		case err := <-done:
			if !errors.Is(err, syscall.ECONNREFUSED) {
				t.Fatalf("dial after Stop: %v, want connection refused", err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("dial still waiting 5 s after Stop")
		}
		start := time.Now()
		if _, err := s.Dial(raft.ServerAddress(testport.Addr(t)), time.Second); err == nil || time.Since(start) > time.Second {
			t.Fatalf("dial after Stop: %v after %v, want a refusal at once", err, time.Since(start))
		}
	})
	t.Run("other failures return at once", func(t *testing.T) {
		s := &tcpStream{dialer: newPeerDialer()}
		start := time.Now()
		if _, err := s.Dial("no-such-host.invalid:1", time.Second); err == nil || time.Since(start) > 5*time.Second {
			t.Fatalf("dial of an unresolvable address: %v after %v", err, time.Since(start))
		}
	})
}
