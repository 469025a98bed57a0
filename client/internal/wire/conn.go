package wire

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"
	"weir/internal/kframe"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Sentinel errors. A failed connection reports one of these, wrapped with
// the address and the cause.
var (
	ErrClosed           = errors.New("wire: connection closed")
	ErrRequestTimeout   = errors.New("wire: request timed out")
	ErrCorrelation      = errors.New("wire: response correlation id out of order")
	ErrResponseTooLarge = errors.New("wire: response larger than the configured limit")
	ErrUnsupported      = errors.New("wire: broker does not support this request")
	// ErrIdle: the connection was closed after connections.max.idle.ms
	// with nothing sent or awaited; no request was written to it after
	// that, so one that gets this error can be sent again on a new one.
	ErrIdle = errors.New("wire: connection closed after being idle")
)

// Config tunes a connection. The zero value works.
type Config struct {
	ClientID string
	// SoftwareName and SoftwareVersion go in ApiVersions v3+.
	SoftwareName, SoftwareVersion string
	// MaxResponseBytes caps a response's size; a bigger one closes the
	// connection. 0 means 256 MiB.
	MaxResponseBytes int32
	// Logger receives lifecycle and debug logs; nil discards them.
	Logger *slog.Logger
	// DialTimeout bounds the TCP connect and the ApiVersions exchange when
	// ctx has no earlier deadline. 0 means 10 s.
	DialTimeout time.Duration
	// Dialer connects; nil uses net.Dialer.
	Dialer func(ctx context.Context, network, addr string) (net.Conn, error)
	// MaxVersions, if set, caps the version used for an API key below what
	// both sides support (tests use it to exercise older versions).
	MaxVersions map[int16]int16
	// OnWrite, if set, is called with the size of every write.
	OnWrite func(n int)
	// MaxIdle is connections.max.idle.ms: a connection with no request
	// queued or awaiting its response for this long is closed (with
	// ErrIdle), as Kafka's clients close theirs before the broker's own
	// idle limit would. 0 or less: never.
	MaxIdle time.Duration
}

// Callback receives a response, or the error that prevented one. For a
// request that expects no response (Produce with acks=0) it is called with
// (nil, nil) once the bytes are written.
type Callback func(kmsg.Response, error)

// Conn is one connection to a broker. See the package documentation.
type Conn struct {
	addr    string
	nc      net.Conn
	log     *slog.Logger
	fmt     *kmsg.RequestFormatter
	maxRsp  int32
	onWrite func(int)
	maxIdle time.Duration

	versions [versionSlots]int16 // highest common version per key; -1 unsupported

	mu      sync.Mutex
	nextID  int32
	queue   []*call // handed over, not yet written
	pending []*call // written, awaiting a response, in write order
	err     error   // set once when the connection dies
	wake    chan struct{}
	active  time.Time // when a request was last handed over or answered

	done chan struct{} // closed when the connection is dead
	wg   sync.WaitGroup
}

const versionSlots = 128

type call struct {
	id         int32
	req        kmsg.Request
	cb         Callback
	noResponse bool
	timeout    time.Duration
	timer      *time.Timer
	finished   bool // guarded by Conn.mu
}

// Dial connects to addr and negotiates API versions.
func Dial(ctx context.Context, addr string, cfg Config) (*Conn, error) {
	if cfg.DialTimeout <= 0 {
		cfg.DialTimeout = 10 * time.Second
	}
	if cfg.MaxResponseBytes <= 0 {
		cfg.MaxResponseBytes = 256 << 20
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	dctx, cancel := context.WithTimeout(ctx, cfg.DialTimeout)
	defer cancel()
	dial := cfg.Dialer
	if dial == nil {
		var d net.Dialer
		dial = d.DialContext
	}
	nc, err := dial(dctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("wire: dial %s: %w", addr, err)
	}
	c := &Conn{
		addr:    addr,
		nc:      nc,
		log:     cfg.Logger.With("addr", addr),
		fmt:     kmsg.NewRequestFormatter(kmsg.FormatterClientID(cfg.ClientID)),
		maxRsp:  cfg.MaxResponseBytes,
		onWrite: cfg.OnWrite,
		maxIdle: cfg.MaxIdle,
		active:  time.Now(),
		wake:    make(chan struct{}, 1),
		done:    make(chan struct{}),
	}
	for i := range c.versions {
		c.versions[i] = -1
	}
	c.wg.Add(2)
	go c.writeLoop()
	go c.readLoop()
	if err := c.negotiate(dctx, cfg); err != nil {
		c.Close()
		return nil, err
	}
	for k, v := range cfg.MaxVersions {
		if int(k) < versionSlots && c.versions[k] > v {
			c.versions[k] = v
		}
	}
	return c, nil
}

// negotiate runs ApiVersions at the highest version we know, retrying once at
// the version the broker names if it rejects ours (it answers an unsupported
// ApiVersions with error 35 and its own range in the v0 format).
func (c *Conn) negotiate(ctx context.Context, cfg Config) error {
	name, ver := cfg.SoftwareName, cfg.SoftwareVersion
	if name == "" {
		name, ver = "weir-go", "0"
	}
	v := (&kmsg.ApiVersionsRequest{}).MaxVersion()
	for attempt := 0; attempt < 2; attempt++ {
		req := kmsg.NewPtrApiVersionsRequest()
		req.SetVersion(v)
		req.ClientSoftwareName, req.ClientSoftwareVersion = name, ver
		timeout := time.Duration(0)
		if d, ok := ctx.Deadline(); ok {
			timeout = max(time.Until(d), time.Millisecond) // a silent broker fails the dial
		}
		raw, err := c.do(ctx, req, timeout)
		if err != nil {
			return err
		}
		resp := raw.(*kmsg.ApiVersionsResponse)
		if resp.ErrorCode == kerr.UnsupportedVersion.Code {
			next := int16(0)
			for _, k := range resp.ApiKeys {
				if k.ApiKey == 18 {
					next = k.MaxVersion
				}
			}
			if next >= v {
				return fmt.Errorf("wire: %s: ApiVersions v%d rejected and broker offers v%d", c.addr, v, next)
			}
			v = next
			continue
		}
		if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
			return fmt.Errorf("wire: %s: ApiVersions: %w", c.addr, err)
		}
		c.setVersions(resp.ApiKeys)
		c.log.Debug("api versions negotiated", "api_versions_version", v, "keys", len(resp.ApiKeys))
		return nil
	}
	return fmt.Errorf("wire: %s: ApiVersions negotiation did not converge", c.addr)
}

func (c *Conn) setVersions(keys []kmsg.ApiVersionsResponseApiKey) {
	for _, k := range keys {
		if k.ApiKey < 0 || int(k.ApiKey) >= versionSlots {
			continue
		}
		req := kmsg.RequestForKey(k.ApiKey)
		if req == nil {
			continue
		}
		v := min(req.MaxVersion(), k.MaxVersion)
		if v < k.MinVersion {
			continue
		}
		c.versions[k.ApiKey] = v
	}
}

// Version returns the highest version of key both sides speak, and false if
// the broker does not serve key at all.
func (c *Conn) Version(key int16) (int16, bool) {
	if key < 0 || int(key) >= versionSlots || c.versions[key] < 0 {
		return -1, false
	}
	return c.versions[key], true
}

// Addr is the address dialed.
func (c *Conn) Addr() string { return c.addr }

// Done is closed when the connection has died or been closed.
func (c *Conn) Done() <-chan struct{} { return c.done }

// Err is why the connection died, nil while it is alive.
func (c *Conn) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// Pending counts requests handed over and not yet answered.
func (c *Conn) Pending() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.queue) + len(c.pending)
}

// Send hands req over for writing and returns at once; cb receives the
// outcome. If req's version is unset (zero) and the broker supports a higher
// one, the highest common version is used. timeout > 0 bounds the wait for
// the response: past it the connection is closed (as the Java client does),
// failing every pending request. noResponse marks a request the broker will
// not answer (Produce with acks=0).
func (c *Conn) Send(req kmsg.Request, timeout time.Duration, noResponse bool, cb Callback) {
	if err := c.pickVersion(req); err != nil {
		cb(nil, err)
		return
	}
	c.sendRaw(req, timeout, noResponse, cb)
}

// Do sends req and waits for its response or ctx. timeout > 0 is the
// request timeout of Send: past it the connection is closed. Ending ctx
// only stops the wait; the connection and the requests behind this one are
// unaffected, and the late response is dropped.
func (c *Conn) Do(ctx context.Context, req kmsg.Request, timeout time.Duration) (kmsg.Response, error) {
	if err := c.pickVersion(req); err != nil {
		return nil, err
	}
	return c.do(ctx, req, timeout)
}

func (c *Conn) do(ctx context.Context, req kmsg.Request, timeout time.Duration) (kmsg.Response, error) {
	type result struct {
		r   kmsg.Response
		err error
	}
	ch := make(chan result, 1)
	c.sendRaw(req, timeout, false, func(r kmsg.Response, err error) { ch <- result{r, err} })
	select {
	case res := <-ch:
		return res.r, res.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// sendRaw is Send without version selection (ApiVersions sets its own).
func (c *Conn) sendRaw(req kmsg.Request, timeout time.Duration, noResponse bool, cb Callback) {
	cl := &call{req: req, cb: cb, noResponse: noResponse, timeout: timeout}
	c.mu.Lock()
	if c.err != nil {
		err := c.err
		c.mu.Unlock()
		cb(nil, err)
		return
	}
	cl.id = c.nextID
	c.nextID++
	c.queue = append(c.queue, cl)
	if c.maxIdle > 0 {
		c.active = time.Now()
	}
	c.mu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

func (c *Conn) pickVersion(req kmsg.Request) error {
	v, ok := c.Version(req.Key())
	if !ok {
		return fmt.Errorf("%w: %s (key %d) at %s", ErrUnsupported, kmsg.NameForKey(req.Key()), req.Key(), c.addr)
	}
	if req.GetVersion() == 0 || req.GetVersion() > v {
		req.SetVersion(v)
	}
	return nil
}

func (c *Conn) writeLoop() {
	defer c.wg.Done()
	var buf []byte
	var idle *time.Timer
	var idleC <-chan time.Time
	if c.maxIdle > 0 {
		idle = time.NewTimer(c.maxIdle)
		defer idle.Stop()
		idleC = idle.C
	}
	for {
		select {
		case <-c.wake:
		case <-idleC:
			left := c.closeIfIdle()
			if left == 0 {
				return
			}
			idle.Reset(left)
			continue
		case <-c.done:
			return
		}
		c.mu.Lock()
		batch := c.queue
		c.queue = nil
		if c.err != nil {
			c.mu.Unlock()
			return
		}
		buf = buf[:0]
		var silent []*call
		for _, cl := range batch {
			// AppendRequest writes the frame length at the start of the
			// slice it is given, so frames after the first must restore
			// the first frame's length and fix their own.
			start := len(buf)
			var head [4]byte
			copy(head[:], buf)
			buf = c.fmt.AppendRequest(buf, cl.req, cl.id)
			copy(buf, head[:min(start, 4)])
			binary.BigEndian.PutUint32(buf[start:], uint32(len(buf)-start-4))
			if cl.noResponse {
				silent = append(silent, cl)
				continue
			}
			c.pending = append(c.pending, cl)
			if cl.timeout > 0 {
				cl.timer = time.AfterFunc(cl.timeout, func() { c.timedOut(cl) })
			}
		}
		c.mu.Unlock()
		if len(buf) == 0 {
			continue
		}
		if _, err := c.nc.Write(buf); err != nil {
			c.fail(fmt.Errorf("wire: write to %s: %w", c.addr, err))
			return
		}
		if c.onWrite != nil {
			c.onWrite(len(buf))
		}
		for _, cl := range silent {
			cl.cb(nil, nil)
		}
		if cap(buf) > 1<<20 {
			buf = nil // do not pin a large produce request's buffer
		}
	}
}

// closeIfIdle closes the connection with ErrIdle if nothing was handed
// over or answered for maxIdle and nothing is queued or awaited, and
// returns 0; otherwise it returns how long until it may be idle enough.
// The check and the close are one step under mu, so a request handed over
// meanwhile is never failed by it.
func (c *Conn) closeIfIdle() time.Duration {
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return 0
	}
	if len(c.queue) > 0 || len(c.pending) > 0 {
		c.mu.Unlock()
		return c.maxIdle
	}
	if left := c.maxIdle - time.Since(c.active); left > 0 {
		c.mu.Unlock()
		return left
	}
	c.kill(fmt.Errorf("%w: %s, nothing sent for %v (connections.max.idle.ms)", ErrIdle, c.addr, c.maxIdle))
	return 0
}

func (c *Conn) timedOut(cl *call) {
	c.mu.Lock()
	done := cl.finished
	c.mu.Unlock()
	if !done {
		c.fail(fmt.Errorf("%w: %s v%d to %s after %v", ErrRequestTimeout, kmsg.NameForKey(cl.req.Key()), cl.req.GetVersion(), c.addr, cl.timeout))
	}
}

func (c *Conn) readLoop() {
	defer c.wg.Done()
	for {
		id, body, err := kframe.ReadResponse(c.nc, c.maxRsp)
		if errors.Is(err, kframe.ErrSize) {
			c.fail(fmt.Errorf("%w: from %s: %v", ErrResponseTooLarge, c.addr, err))
			return
		}
		if err != nil {
			c.fail(fmt.Errorf("wire: read from %s: %w", c.addr, err))
			return
		}
		c.mu.Lock()
		if len(c.pending) == 0 || c.pending[0].id != id {
			c.mu.Unlock()
			c.fail(fmt.Errorf("%w: got %d from %s", ErrCorrelation, id, c.addr))
			return
		}
		cl := c.pending[0]
		c.pending[0] = nil
		c.pending = c.pending[1:]
		cl.finished = true
		if c.maxIdle > 0 {
			c.active = time.Now()
		}
		c.mu.Unlock()
		if cl.timer != nil {
			cl.timer.Stop()
		}
		resp, err := kframe.DecodeResponse(cl.req, body)
		if err != nil {
			err = fmt.Errorf("wire: %s from %s: %w", kmsg.NameForKey(cl.req.Key()), c.addr, err)
		}
		cl.cb(resp, err)
	}
}

// fail kills the connection with err and fails every queued and pending
// request. Only the first cause is kept.
func (c *Conn) fail(err error) {
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return
	}
	c.kill(err)
}

// kill is fail with c.mu held and the connection alive; it unlocks c.mu.
func (c *Conn) kill(err error) {
	c.err = err
	calls := append(c.pending, c.queue...)
	c.pending, c.queue = nil, nil
	for _, cl := range calls {
		cl.finished = true
	}
	close(c.done)
	c.mu.Unlock()
	c.nc.Close()
	if !errors.Is(err, ErrClosed) {
		c.log.Debug("connection failed", "err", err)
	}
	for _, cl := range calls {
		if cl.timer != nil {
			cl.timer.Stop()
		}
		cl.cb(nil, err)
	}
}

// Close closes the connection, fails pending requests with ErrClosed and
// waits for the connection's goroutines to stop.
func (c *Conn) Close() {
	c.fail(fmt.Errorf("%w: %s", ErrClosed, c.addr))
	c.wg.Wait()
}
