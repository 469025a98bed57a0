package delayproxy

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// MaxFrame bounds a frame the proxy relays (Kafka's default
// socket.request.max.bytes is 100 MiB).
const MaxFrame = 200 << 20

// Proxy relays Kafka connections from its listener to one upstream broker
// and delays the responses of chosen API keys, serially per connection:
// a delayed response leaves Delay after the later of its own arrival from
// the broker and the previous response's departure, as from a broker
// that spends Delay on each such request and handles one request per
// connection at a time. Every response leaves in the order it came.
type Proxy struct {
	ln       net.Listener
	upstream string
	log      *slog.Logger
	delays   [128]atomic.Int64 // per API key, nanoseconds

	mu    sync.Mutex // guards conns
	conns map[net.Conn]struct{}
	wg    sync.WaitGroup
	done  chan struct{}
	once  sync.Once
}

// Listen starts a proxy on addr ("127.0.0.1:0" for any port) relaying to
// upstream. Close stops it.
func Listen(addr, upstream string, log *slog.Logger) (*Proxy, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	p := &Proxy{ln: ln, upstream: upstream, log: log, conns: map[net.Conn]struct{}{}, done: make(chan struct{})}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// Addr is the proxy's listening address.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// SetDelay sets the delay of key's responses (0: none); it applies to
// responses that arrive from then on.
func (p *Proxy) SetDelay(key int16, d time.Duration) {
	if key >= 0 && int(key) < len(p.delays) {
		p.delays[key].Store(int64(d))
	}
}

func (p *Proxy) delay(key int16) time.Duration {
	if key < 0 || int(key) >= len(p.delays) {
		return 0
	}
	return time.Duration(p.delays[key].Load())
}

// Close stops accepting, closes every connection and waits for the
// relaying goroutines.
func (p *Proxy) Close() error {
	var err error
	p.once.Do(func() {
		close(p.done)
		err = p.ln.Close()
		p.mu.Lock()
		for c := range p.conns {
			c.Close()
		}
		p.mu.Unlock()
	})
	p.wg.Wait()
	return err
}

func (p *Proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.done:
		return false
	default:
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *Proxy) untrack(c net.Conn) {
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
	c.Close()
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		if !p.track(c) {
			c.Close()
			return
		}
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			defer p.untrack(c)
			if err := p.relay(c); err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
				p.log.Debug("delayproxy: connection ended", "err", err)
			}
		}()
	}
}

// relay serves one client connection: requests go up as they come,
// noting each correlation id's API key; responses come back in order,
// each held as its key's delay says.
func (p *Proxy) relay(client net.Conn) error {
	up, err := net.Dial("tcp", p.upstream)
	if err != nil {
		return err
	}
	if !p.track(up) {
		up.Close()
		return net.ErrClosed
	}
	defer p.untrack(up)
	var keys sync.Map // correlation id -> API key
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errc := make(chan error, 1)
	go func() {
		errc <- forward(bufio.NewReaderSize(client, 64<<10), up, func(frame []byte) {
			if len(frame) >= 8 {
				key := int16(binary.BigEndian.Uint16(frame[0:2]))
				corr := int32(binary.BigEndian.Uint32(frame[4:8]))
				keys.Store(corr, key)
			}
		}, nil)
		client.Close()
		up.Close()
	}()
	var last time.Time // when the previous response left
	err = forward(bufio.NewReaderSize(up, 64<<10), client, nil, func(frame []byte) error {
		var d time.Duration
		if len(frame) >= 4 {
			corr := int32(binary.BigEndian.Uint32(frame[0:4]))
			if k, ok := keys.LoadAndDelete(corr); ok {
				d = p.delay(k.(int16))
			}
		}
		now := time.Now()
		if d > 0 {
			at := now
			if last.After(at) {
				at = last
			}
			at = at.Add(d)
			if wait := time.Until(at); wait > 0 {
				t := time.NewTimer(wait)
				select {
				case <-t.C:
				case <-ctx.Done():
					t.Stop()
					return ctx.Err()
				case <-p.done:
					t.Stop()
					return net.ErrClosed
				}
			}
		}
		last = time.Now()
		return nil
	})
	client.Close()
	up.Close()
	<-errc
	return err
}

// forward copies length-prefixed frames from r to w, showing each frame's
// body to seen (requests) or waiting on hold (responses) before writing
// it.
func forward(r *bufio.Reader, w io.Writer, seen func([]byte), hold func([]byte) error) error {
	var size [4]byte
	for {
		if _, err := io.ReadFull(r, size[:]); err != nil {
			return err
		}
		n := binary.BigEndian.Uint32(size[:])
		if n > MaxFrame {
			return fmt.Errorf("delayproxy: frame of %d bytes", n)
		}
		frame := make([]byte, 4+n)
		copy(frame, size[:])
		if _, err := io.ReadFull(r, frame[4:]); err != nil {
			return err
		}
		if seen != nil {
			seen(frame[4:])
		}
		if hold != nil {
			if err := hold(frame[4:]); err != nil {
				return err
			}
		}
		if _, err := w.Write(frame); err != nil {
			return err
		}
	}
}
