package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// DefaultMaxInFlight bounds the requests read but not yet answered on one
// connection.
const DefaultMaxInFlight = 64

// Config configures a Server.
type Config struct {
	// Addr is the TCP address of a single PLAINTEXT listener, e.g.
	// "127.0.0.1:0"; used when Listeners is empty.
	Addr string
	// Listeners are the named listeners to serve, each with its own
	// address and security. Empty means one PLAINTEXT listener on Addr.
	Listeners []Listener
	// HandshakeTimeout bounds a listener's Security.Open (the TLS
	// handshake), from the connection's first byte. Zero means
	// DefaultHandshakeTimeout.
	HandshakeTimeout time.Duration
	// MaxRequestSize is socket.request.max.bytes: frames above it close
	// the connection. Zero means DefaultMaxRequestSize.
	MaxRequestSize int32
	// MaxIdle is connections.max.idle.ms: a connection that has sent no
	// request for this long, with none unanswered, is closed (clients
	// reconnect when they need to; Kafka's clients close theirs first,
	// after their own 9 minutes). Zero means DefaultMaxIdle; negative
	// never closes an idle connection.
	MaxIdle time.Duration
	// MaxInFlight bounds the requests read but not yet answered per
	// connection; at the bound the reader stops reading. Zero means
	// DefaultMaxInFlight.
	MaxInFlight int
	// Logger receives connection and protocol-violation logs. Nil
	// discards them.
	Logger     *slog.Logger
	Dispatcher Dispatcher
}

// Server accepts Kafka protocol connections and dispatches their
// requests. See the package documentation for its concurrency model.
type Server struct {
	log            *slog.Logger
	dispatcher     Dispatcher
	listeners      []*listener // in Config order; [0] is the default
	maxRequestSize int32
	maxInFlight    int
	handshake      time.Duration
	maxIdle        time.Duration  // <= 0: never
	reusable       map[int16]bool // keys whose frames come from frames
	frames         framePool
	stats          *counters

	baseCtx   context.Context
	forceStop context.CancelFunc // tears down every connection at once

	mu      sync.Mutex
	serving bool
	closing bool
	closed  chan struct{} // closed with closing set: stops the idle sweep
	conns   map[*conn]struct{}
	nextID  uint64
	wg      sync.WaitGroup // connection goroutines
}

// New validates cfg, binds every listener and returns a Server ready to
// Serve. Dispatcher.Versions is called here, once.
func New(cfg Config) (*Server, error) {
	s, err := newServer(cfg)
	if err != nil {
		return nil, err
	}
	for _, l := range s.listeners {
		if l.Bound != nil {
			l.ln = l.Bound
			continue
		}
		if l.ln, err = net.Listen("tcp", l.Addr); err != nil {
			s.closeListeners()
			return nil, fmt.Errorf("server: listener %s: listen: %w", l.Name, err)
		}
	}
	return s, nil
}

// newServer builds a Server without a listener; tests feed it
// connections directly.
func newServer(cfg Config) (*Server, error) {
	if cfg.Dispatcher == nil {
		return nil, errors.New("server: no dispatcher")
	}
	versions, err := checkVersions(cfg.Dispatcher.Versions())
	if err != nil {
		return nil, err
	}
	listeners := cfg.Listeners
	if len(listeners) == 0 {
		listeners = []Listener{{Name: "PLAINTEXT", Addr: cfg.Addr}}
	}
	s := &Server{
		log:            cfg.Logger,
		dispatcher:     cfg.Dispatcher,
		maxRequestSize: cfg.MaxRequestSize,
		maxInFlight:    cfg.MaxInFlight,
		handshake:      cfg.HandshakeTimeout,
		maxIdle:        cfg.MaxIdle,
		closed:         make(chan struct{}),
		conns:          make(map[*conn]struct{}),
		reusable:       map[int16]bool{},
	}
	all := maps.Clone(versions)
	names := map[string]bool{}
	for _, l := range listeners {
		if l.Name == "" {
			l.Name = "PLAINTEXT"
		}
		if names[l.Name] {
			return nil, fmt.Errorf("server: listener %s listed twice", l.Name)
		}
		names[l.Name] = true
		sl := &listener{Listener: l, versions: versions}
		if l.Security != nil {
			if sl.versions, sl.extra, err = mergeVersions(versions, l.Security.Versions()); err != nil {
				return nil, fmt.Errorf("server: listener %s: %w", l.Name, err)
			}
			maps.Copy(all, sl.versions)
		}
		s.listeners = append(s.listeners, sl)
	}
	s.stats = newCounters(all)
	if fr, ok := cfg.Dispatcher.(FrameReuser); ok {
		for key := range versions {
			if fr.ReusesFrame(key) {
				s.reusable[key] = true
			}
		}
	}
	if s.log == nil {
		s.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if s.maxRequestSize <= 0 {
		s.maxRequestSize = DefaultMaxRequestSize
	}
	if s.maxInFlight <= 0 {
		s.maxInFlight = DefaultMaxInFlight
	}
	if s.maxIdle == 0 {
		s.maxIdle = DefaultMaxIdle
	}
	if s.handshake <= 0 {
		s.handshake = DefaultHandshakeTimeout
	}
	s.baseCtx, s.forceStop = context.WithCancel(context.Background())
	return s, nil
}

// checkVersions rejects ranges the server could not honour: keys kmsg
// cannot decode, versions beyond what kmsg knows, duplicates.
func checkVersions(ranges []APIVersionRange) (map[int16]APIVersionRange, error) {
	m := make(map[int16]APIVersionRange, len(ranges))
	for _, r := range ranges {
		req := kmsg.RequestForKey(r.Key)
		switch {
		case req == nil:
			return nil, fmt.Errorf("server: api key %d is not a known request", r.Key)
		case r.Min < 0 || r.Min > r.Max || r.Max > req.MaxVersion():
			return nil, fmt.Errorf("server: api key %d: range %d..%d not within 0..%d", r.Key, r.Min, r.Max, req.MaxVersion())
		}
		if _, dup := m[r.Key]; dup {
			return nil, fmt.Errorf("server: api key %d listed twice", r.Key)
		}
		m[r.Key] = r
	}
	return m, nil
}

// Addr is the address the first listener is bound to.
func (s *Server) Addr() net.Addr { return s.listeners[0].ln.Addr() }

// ListenerAddr is the address the named listener is bound to, nil when
// there is no such listener.
func (s *Server) ListenerAddr(name string) net.Addr {
	for _, l := range s.listeners {
		if l.Name == name {
			return l.ln.Addr()
		}
	}
	return nil
}

// Stats returns a snapshot of the server's counters.
func (s *Server) Stats() Stats { return s.stats.snapshot() }

// Serve accepts connections until Shutdown is called or ctx is cancelled,
// then waits for every connection to finish. Cancelling ctx is a hard
// stop: connections close at once and pending replies are dropped. Serve
// returns nil after Shutdown and ctx.Err() after cancellation.
func (s *Server) Serve(ctx context.Context) error {
	s.mu.Lock()
	if s.serving {
		s.mu.Unlock()
		return errors.New("server: Serve called twice")
	}
	s.serving = true
	if s.maxIdle > 0 && !s.closing {
		// Under mu, as startConnOn adds its goroutines: no Add after
		// beginClose, so none races a Shutdown's wg.Wait.
		s.wg.Add(1)
		go s.sweepIdle()
	}
	s.mu.Unlock()

	stop := context.AfterFunc(ctx, func() {
		s.beginClose()
		s.forceStop()
	})
	defer stop()

	errs := make(chan error, len(s.listeners))
	for _, l := range s.listeners {
		s.log.Info("serving", "listener", l.Name, "addr", l.ln.Addr().String())
		go func() { errs <- s.acceptLoop(ctx, l) }()
	}
	var err error
	for range s.listeners {
		if e := <-errs; e != nil && err == nil {
			err = e
		}
	}
	s.wg.Wait()
	s.log.Info("stopped serving")
	return err
}

func (s *Server) acceptLoop(ctx context.Context, l *listener) error {
	var backoff time.Duration
	for {
		nc, err := l.ln.Accept()
		if err == nil {
			backoff = 0
			s.startConnOn(l, nc)
			continue
		}
		if s.isClosing() {
			return ctx.Err()
		}
		// Running out of file descriptors and the like pass; anything
		// else means the listener is broken.
		if !isTemporary(err) {
			s.beginClose()
			s.forceStop()
			return fmt.Errorf("server: listener %s: accept: %w", l.Name, err)
		}
		backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
		s.log.Warn("accept failed, retrying", "err", err, "backoff", backoff)
		t := time.NewTimer(backoff)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
		}
	}
}

// isTemporary matches accept errors that go away by themselves (EMFILE,
// ENFILE, ECONNABORTED), which net reports through the deprecated
// Temporary method.
func isTemporary(err error) bool {
	var t interface{ Temporary() bool }
	return errors.As(err, &t) && t.Temporary()
}

// Shutdown stops accepting, stops reading new requests, lets every request
// already read be answered and written, then closes the connections. If
// ctx ends first, the rest is torn down as by a cancelled Serve and
// Shutdown returns ctx.Err(). Either way no connection goroutine is left
// when it returns.
func (s *Server) Shutdown(ctx context.Context) error {
	for _, c := range s.beginClose() {
		c.stopReading()
	}
	done := make(chan struct{})
	go func() {
		s.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		s.forceStop()
		<-done
		return ctx.Err()
	}
}

// beginClose marks the server closing, closes the listener and returns the
// live connections. No connection starts after it.
func (s *Server) beginClose() []*conn {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.closing {
		s.closing = true
		close(s.closed)
		s.closeListeners()
	}
	conns := make([]*conn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	return conns
}

func (s *Server) closeListeners() {
	for _, l := range s.listeners {
		if l.ln != nil {
			l.ln.Close()
		}
	}
}

func (s *Server) isClosing() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closing
}

// startConn starts nc's reader and writer on the first listener, unless
// the server is closing.
func (s *Server) startConn(nc net.Conn) bool { return s.startConnOn(s.listeners[0], nc) }

// startConnOn starts nc's reader and writer, unless the server is
// closing.
func (s *Server) startConnOn(l *listener, nc net.Conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		nc.Close()
		return false
	}
	s.nextID++
	c := newConn(s, l, nc, s.nextID)
	s.conns[c] = struct{}{}
	s.wg.Add(2)
	go c.readLoop()
	go c.writeLoop()
	return true
}

func (s *Server) forget(c *conn) {
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
}
