package client

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/client/internal/wire"
	"weir/internal/auth"
)

// ErrClosed is returned by calls on a closed client.
var ErrClosed = errors.New("client: closed")

// core is what Producer, Consumer and Admin share: one
// connection per broker, dialed on demand, and the metadata cache with its
// refresher. It owns one goroutine (the refresher) plus one short-lived
// goroutine per dial in progress; close stops and waits for all of them.
type core struct {
	cfg  commonConfig
	o    options
	log  *slog.Logger
	meta atomic.Pointer[metadata]

	// autoCreate is sent as Metadata's AllowAutoTopicCreation.
	autoCreate bool

	mu          sync.Mutex
	conns       map[int32]*nodeConn
	outBytes    map[int32]*atomic.Int64 // bytes written per node, all requests
	interest    map[string]struct{}
	allTopics   bool
	wantRefresh bool
	lastAttempt time.Time
	changed     chan struct{} // closed and replaced after each metadata update
	onConnect   func(node int32)
	closed      bool

	wake   chan struct{}
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// nodeConn is the connection slot of one broker: at most one live connection
// and at most one dial in progress.
type nodeConn struct {
	conn     brokerConn
	dialing  chan struct{} // non-nil while a dial runs; closed when it ends
	err      error         // last dial error
	next     time.Time     // no dial before this (reconnect backoff)
	failures int
	out      *atomic.Pointer[atomic.Int64] // where the connection counts its writes
}

func newCore(cfg commonConfig, o options, autoCreate bool) *core {
	c := &core{
		cfg:        cfg,
		o:          o,
		log:        o.logger,
		autoCreate: autoCreate,
		conns:      map[int32]*nodeConn{},
		outBytes:   map[int32]*atomic.Int64{},
		interest:   map[string]struct{}{},
		changed:    make(chan struct{}),
		wake:       make(chan struct{}, 1),
	}
	c.meta.Store(emptyMetadata())
	c.ctx, c.cancel = context.WithCancel(context.Background())
	if c.o.dial == nil {
		c.o.dial = func(ctx context.Context, _ int32, addr string, onWrite func(int)) (brokerConn, error) {
			wc := wire.Config{ClientID: cfg.clientID, Logger: o.logger, DialTimeout: cfg.dialTimeout, MaxVersions: o.maxVersions, OnWrite: onWrite, Dialer: cfg.dialer, MaxIdle: cfg.maxIdle}
			conn, err := wire.Dial(ctx, addr, wc)
			if err != nil {
				return nil, err // not a typed nil in the interface
			}
			return conn, nil
		}
	}
	if !o.manual {
		c.wg.Add(1)
		go c.refresher()
	}
	return c
}

func (c *core) close() {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.closed = true
	conns := c.conns
	c.conns = map[int32]*nodeConn{}
	c.mu.Unlock()
	c.cancel()
	c.wg.Wait() // dials and the refresher stop on ctx
	for _, nc := range conns {
		if nc.conn != nil {
			nc.conn.Close()
		}
	}
}

func (c *core) now() time.Time { return c.o.clock.Now() }

// addrOf is the address of a node: a broker from metadata, or a bootstrap
// server for the negative ids -1, -2, ... used before metadata arrives.
func (c *core) addrOf(node int32) (string, bool) {
	if node < 0 {
		i := int(-node) - 1
		if i < len(c.cfg.bootstrap) {
			return c.cfg.bootstrap[i], true
		}
		return "", false
	}
	b, ok := c.meta.Load().brokers[node]
	if !ok {
		return "", false
	}
	return b.addr(), true
}

// ensureBroker refreshes metadata if node is not known yet, and says so
// if it still is not.
func (c *core) ensureBroker(ctx context.Context, node int32) error {
	if _, ok := c.addrOf(node); ok {
		return nil
	}
	if err := c.refresh(ctx); err != nil {
		return err
	}
	if _, ok := c.addrOf(node); !ok {
		return fmt.Errorf("client: broker %d is not in the cluster's metadata", node)
	}
	return nil
}

// tryConn returns node's connection if it is up; otherwise it starts a dial
// (unless one runs or the reconnect backoff has not passed) and returns nil.
// The sender uses it so one unreachable broker never stalls the others.
func (c *core) tryConn(node int32) brokerConn {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.tryConnLocked(node)
}

func (c *core) tryConnLocked(node int32) brokerConn {
	if c.closed {
		return nil
	}
	nc := c.conns[node]
	if nc == nil {
		nc = &nodeConn{}
		c.conns[node] = nc
	}
	if nc.conn != nil {
		select {
		case <-nc.conn.Done():
			idle := closedIdle(nc.conn)
			nc.conn = nil
			if !idle {
				c.wantRefresh = true // a dead connection often means a moved leader
				c.signal()
			}
		default:
			return nc.conn
		}
	}
	if nc.dialing != nil || c.now().Before(nc.next) {
		return nil
	}
	addr, ok := c.addrOf(node)
	if !ok {
		return nil
	}
	nc.dialing = make(chan struct{})
	if c.o.manual {
		// The simulation's dialer answers at once; dial inline so the run
		// stays deterministic.
		count, ref := c.outCounter(node)
		c.mu.Unlock()
		conn, err := c.o.dial(c.ctx, node, addr, count)
		c.mu.Lock()
		nc.out = ref
		c.dialed(node, nc, conn, err)
		return nc.conn
	}
	count, ref := c.outCounter(node)
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		ctx, cancel := context.WithTimeout(c.ctx, c.cfg.dialTimeout+time.Second)
		conn, err := c.o.dial(ctx, node, addr, count)
		cancel()
		c.mu.Lock()
		nc.out = ref
		c.dialed(node, nc, conn, err)
		hook := c.onConnect
		c.mu.Unlock()
		if err == nil && hook != nil {
			hook(node)
		}
	}()
	return nil
}

// outCounter returns the function a connection to node calls with the size
// of every write, and the switch that points it at another node's counter
// (a bootstrap connection adopted by its broker); c.mu is held.
func (c *core) outCounter(node int32) (func(int), *atomic.Pointer[atomic.Int64]) {
	ref := new(atomic.Pointer[atomic.Int64])
	ref.Store(c.counterLocked(node))
	return func(n int) { ref.Load().Add(int64(n)) }, ref
}

func (c *core) counterLocked(node int32) *atomic.Int64 {
	ctr := c.outBytes[node]
	if ctr == nil {
		ctr = new(atomic.Int64)
		c.outBytes[node] = ctr
	}
	return ctr
}

// outgoing returns the bytes written to each node so far, like the Java
// client's outgoing-byte-total per node.
func (c *core) outgoing() map[int32]int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[int32]int64, len(c.outBytes))
	for n, v := range c.outBytes {
		out[n] = v.Load()
	}
	return out
}

// dialed records a dial's outcome; c.mu is held.
func (c *core) dialed(node int32, nc *nodeConn, conn brokerConn, err error) {
	close(nc.dialing)
	nc.dialing = nil
	if err != nil || c.closed {
		if conn != nil {
			conn.Close()
		}
		nc.err = err
		nc.failures++
		nc.next = c.now().Add(backoff(c.cfg.reconnectBackoff, c.cfg.reconnectMax, nc.failures, c.o.rand))
		c.log.Debug("dial failed", logNode, node, logErr, err)
		return
	}
	nc.conn, nc.err, nc.failures = conn, nil, 0
}

// conn waits for node's connection, dialing if needed.
func (c *core) conn(ctx context.Context, node int32) (brokerConn, error) {
	return c.connect(ctx, node, true)
}

// connect returns a connection to node. Patient, it dials again after
// each failed dial's back-off until ctx ends; otherwise it returns the
// error of a failed dial (or of the one whose back-off is running).
func (c *core) connect(ctx context.Context, node int32, patient bool) (brokerConn, error) {
	for {
		c.mu.Lock()
		if conn := c.tryConnLocked(node); conn != nil {
			c.mu.Unlock()
			return conn, nil
		}
		if c.closed {
			c.mu.Unlock()
			return nil, ErrClosed
		}
		nc := c.conns[node]
		wait, lastErr, next := nc.dialing, nc.err, nc.next
		c.mu.Unlock()
		if _, ok := c.addrOf(node); !ok {
			return nil, fmt.Errorf("client: no address known for node %d", node)
		}
		if wait == nil {
			// A refused authentication is not retried: the credentials
			// will not change (Java's AuthenticationException is fatal
			// to the call too).
			if lastErr != nil && (!patient || errors.Is(lastErr, auth.ErrAuthentication)) {
				return nil, fmt.Errorf("client: node %d: %w", node, lastErr)
			}
			if lastErr != nil && ctx.Err() == nil {
				// In backoff after a failed dial: wait it out, bounded by ctx.
				t := time.NewTimer(max(time.Until(next), time.Millisecond))
				select {
				case <-t.C:
				case <-ctx.Done():
					t.Stop()
					return nil, fmt.Errorf("client: node %d: %w (last dial error: %v)", node, ctx.Err(), lastErr)
				}
			}
			continue
		}
		select {
		case <-wait:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// do sends req to node and waits for the response.
func (c *core) do(ctx context.Context, node int32, req kmsg.Request) (kmsg.Response, error) {
	return c.send(ctx, node, req, true)
}

// doFast is do without waiting out dial back-offs: a node that refuses
// connections fails at once.
func (c *core) doFast(ctx context.Context, node int32, req kmsg.Request) (kmsg.Response, error) {
	return c.send(ctx, node, req, false)
}

func (c *core) send(ctx context.Context, node int32, req kmsg.Request, patient bool) (kmsg.Response, error) {
	for {
		conn, err := c.connect(ctx, node, patient)
		if err != nil {
			return nil, err
		}
		resp, err := conn.Do(ctx, req, c.cfg.requestTimeout)
		// A connection closed for idleness as the request was handed to
		// it never wrote the request: send it on a new one.
		if errors.Is(err, wire.ErrIdle) && ctx.Err() == nil {
			continue
		}
		return resp, err
	}
}

// anyNodes lists nodes to try for a request any broker can answer:
// connected ones first, then the other brokers, then bootstrap servers.
func (c *core) anyNodes() []int32 {
	m := c.meta.Load()
	var up, rest []int32
	c.mu.Lock()
	for id := range m.brokers {
		if nc := c.conns[id]; nc != nil && nc.conn != nil {
			up = append(up, id)
		} else {
			rest = append(rest, id)
		}
	}
	c.mu.Unlock()
	sort.Slice(up, func(i, j int) bool { return up[i] < up[j] })
	sort.Slice(rest, func(i, j int) bool { return rest[i] < rest[j] })
	out := append(up, rest...)
	for i := range c.cfg.bootstrap {
		out = append(out, int32(-i-1))
	}
	return out
}

// doAny sends req to the first broker that answers. A first pass skips
// brokers that refuse connections (a dead broker still listed in
// metadata must not hold the request for its dial back-offs); if none
// answered, a second pass waits for each in turn.
func (c *core) doAny(ctx context.Context, req kmsg.Request) (kmsg.Response, int32, error) {
	var errs []error
	nodes := c.anyNodes()
	for pass := range 2 {
		errs = errs[:0] // the patient pass's errors say why nobody answered
		for _, node := range nodes {
			attempt, cancel := context.WithTimeout(ctx, c.cfg.requestTimeout)
			resp, err := c.send(attempt, node, req, pass == 1)
			cancel()
			if err == nil {
				return resp, node, nil
			}
			if ctx.Err() != nil {
				return nil, node, ctx.Err()
			}
			errs = append(errs, err)
			if errors.Is(err, wire.ErrUnsupported) {
				return nil, node, err
			}
		}
	}
	return nil, -1, fmt.Errorf("client: no broker answered: %w", errors.Join(errs...))
}

// addInterest makes topics part of every metadata refresh.
func (c *core) addInterest(topics ...string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, t := range topics {
		if _, ok := c.interest[t]; !ok {
			c.interest[t] = struct{}{}
			c.wantRefresh = true
		}
	}
	c.signal()
}

// setInterest replaces the topics of interest (a consumer's subscription).
func (c *core) setInterest(topics []string, all bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.interest = map[string]struct{}{}
	for _, t := range topics {
		c.interest[t] = struct{}{}
	}
	c.allTopics = all
	c.wantRefresh = true
	c.signal()
}

// requestRefresh asks the refresher for a metadata update soon (after the
// retry backoff since the last attempt).
func (c *core) requestRefresh() {
	c.mu.Lock()
	c.wantRefresh = true
	c.signal()
	c.mu.Unlock()
}

func (c *core) signal() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// changedCh is closed at the next metadata update.
func (c *core) changedCh() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.changed
}

func (c *core) publish(m *metadata) {
	c.meta.Store(m)
	c.mu.Lock()
	c.adoptBootstrapLocked(m)
	close(c.changed)
	c.changed = make(chan struct{})
	c.mu.Unlock()
}

// adoptBootstrapLocked moves a live bootstrap connection into the slot of
// the broker at the same address, so each broker keeps one connection;
// c.mu is held.
func (c *core) adoptBootstrapLocked(m *metadata) {
	for i, addr := range c.cfg.bootstrap {
		boot := c.conns[int32(-i-1)]
		if boot == nil || boot.conn == nil {
			continue
		}
		for id, b := range m.brokers {
			if b.addr() != addr {
				continue
			}
			if nc := c.conns[id]; nc == nil || (nc.conn == nil && nc.dialing == nil) {
				if boot.out != nil {
					boot.out.Store(c.counterLocked(id))
				}
				c.conns[id] = &nodeConn{conn: boot.conn, out: boot.out}
				boot.conn, boot.out = nil, nil
			}
			break
		}
	}
}

func (c *core) refresher() {
	defer c.wg.Done()
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-c.ctx.Done():
			return
		case <-c.wake:
		case <-timer.C:
		}
		c.mu.Lock()
		due := c.wantRefresh || time.Since(c.meta.Load().updated) >= c.cfg.metadataMaxAge
		wait := c.lastAttempt.Add(c.cfg.retryBackoff).Sub(c.now())
		c.mu.Unlock()
		if !due {
			timer.Reset(time.Until(c.meta.Load().updated.Add(c.cfg.metadataMaxAge)))
			continue
		}
		if wait > 0 {
			timer.Reset(wait)
			continue
		}
		if err := c.refresh(c.ctx); err != nil && c.ctx.Err() == nil {
			c.log.Debug("metadata refresh failed", logErr, err)
		}
		timer.Reset(c.cfg.metadataMaxAge)
		c.mu.Lock()
		if c.wantRefresh {
			c.signal()
		}
		c.mu.Unlock()
	}
}

// refreshIfWanted is the refresher's work done inline, for manual mode: a
// refresh when one was asked for and the retry backoff has passed.
func (c *core) refreshIfWanted(ctx context.Context) {
	c.mu.Lock()
	due := c.wantRefresh && !c.now().Before(c.lastAttempt.Add(c.cfg.retryBackoff))
	c.mu.Unlock()
	if due {
		_ = c.refresh(ctx)
	}
}

// refresh fetches metadata for the topics of interest now.
func (c *core) refresh(ctx context.Context) error {
	c.mu.Lock()
	c.wantRefresh = false
	c.lastAttempt = c.now()
	all := c.allTopics
	req := kmsg.NewPtrMetadataRequest()
	req.AllowAutoTopicCreation = c.autoCreate
	if !all {
		req.Topics = make([]kmsg.MetadataRequestTopic, 0, len(c.interest))
		for t := range c.interest {
			rt := kmsg.NewMetadataRequestTopic()
			rt.Topic = kmsg.StringPtr(t)
			req.Topics = append(req.Topics, rt)
		}
	}
	c.mu.Unlock()
	raw, _, err := c.doAny(ctx, req)
	if err != nil {
		c.mu.Lock()
		c.wantRefresh = true
		c.mu.Unlock()
		return err
	}
	resp := raw.(*kmsg.MetadataResponse)
	m := c.meta.Load().merged(resp, all, c.now())
	retry := false
	for _, t := range m.topics {
		if t.err != nil && kerr.IsRetriable(t.err) {
			retry = true
		}
		for _, p := range t.partitions {
			if p.leader < 0 {
				retry = true
			}
		}
	}
	c.publish(m)
	if retry {
		c.mu.Lock()
		c.wantRefresh = true
		c.mu.Unlock()
	}
	return nil
}

// waitTopic returns the metadata of topic once it is known with partitions,
// refreshing as needed, or fails with the topic's non-retriable error or
// ctx's.
func (c *core) waitTopic(ctx context.Context, topic string) (*topicMeta, error) {
	c.addInterest(topic)
	for {
		ch := c.changedCh()
		if t := c.meta.Load().topics[topic]; t != nil {
			if len(t.partitions) > 0 && (t.err == nil || kerr.IsRetriable(t.err)) {
				return t, nil
			}
			if t.err != nil && !kerr.IsRetriable(t.err) {
				return nil, fmt.Errorf("client: topic %q: %w", topic, t.err)
			}
		}
		if c.o.manual {
			if err := c.refresh(ctx); err != nil {
				return nil, err
			}
			if t := c.meta.Load().topics[topic]; t != nil && len(t.partitions) > 0 {
				return t, nil
			}
			return nil, fmt.Errorf("client: topic %q: no partitions", topic)
		}
		c.requestRefresh()
		select {
		case <-ch:
		case <-ctx.Done():
			err := ctx.Err()
			if t := c.meta.Load().topics[topic]; t != nil && t.err != nil {
				err = fmt.Errorf("%w (last error: %v)", err, t.err)
			}
			return nil, fmt.Errorf("client: waiting for metadata of topic %q: %w", topic, err)
		}
	}
}

// applyLeaderHints patches KIP-951 leader hints into the metadata and asks
// for a full refresh in the background, as the Java client does. It returns
// how many hints moved a leader.
func (c *core) applyLeaderHints(hints []leaderHint, eps []nodeEndpoint) int {
	if len(hints) == 0 {
		return 0
	}
	for {
		old := c.meta.Load()
		n, applied := old.withLeaders(hints, eps)
		if applied == 0 {
			c.requestRefresh()
			return 0
		}
		if c.meta.CompareAndSwap(old, n) {
			c.mu.Lock()
			close(c.changed)
			c.changed = make(chan struct{})
			c.wantRefresh = true
			c.signal()
			c.mu.Unlock()
			for _, h := range hints {
				c.log.Debug("leader moved by response hint", logTopic, h.topic, logPartition, h.partition, logNode, h.leader, logEpoch, h.epoch)
			}
			return applied
		}
	}
}

// backoff is the Java client's exponential backoff with ±20% jitter:
// base * 2^(attempts-1), capped at maxB.
func backoff(base, maxB time.Duration, attempts int, r func() uint32) time.Duration {
	if base <= 0 {
		return 0
	}
	if attempts < 1 {
		attempts = 1
	}
	d := float64(base)
	for i := 1; i < attempts && d < float64(maxB); i++ {
		d *= 2
	}
	d = min(d, float64(max(maxB, base)))
	jitter := 0.8 + 0.4*float64(r())/float64(1<<32)
	return time.Duration(d * jitter)
}

// findCoordinator asks any broker which node coordinates key (keyType 0:
// group, 1: transaction) and makes sure that node's address is known.
func (c *core) findCoordinator(ctx context.Context, key string, keyType int8) (int32, error) {
	for attempt := 1; ; attempt++ {
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.CoordinatorKey, req.CoordinatorType = key, keyType
		req.CoordinatorKeys = []string{key}
		raw, _, err := c.doAny(ctx, req)
		if err != nil {
			return -1, err
		}
		resp := raw.(*kmsg.FindCoordinatorResponse)
		node, host, port, code := resp.NodeID, resp.Host, resp.Port, resp.ErrorCode
		if len(resp.Coordinators) > 0 {
			co := resp.Coordinators[0]
			node, host, port, code = co.NodeID, co.Host, co.Port, co.ErrorCode
		}
		err = kerr.ErrorForCode(code)
		if err == nil {
			c.learnBroker(broker{id: node, host: host, port: port})
			return node, nil
		}
		if !kerr.IsRetriable(err) {
			return -1, fmt.Errorf("client: find coordinator for %q: %w", key, err)
		}
		t := time.NewTimer(backoff(c.cfg.retryBackoff, c.cfg.retryBackoffMax, attempt, c.o.rand))
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return -1, fmt.Errorf("client: find coordinator for %q: %w (last error: %v)", key, ctx.Err(), err)
		}
	}
}

// learnBroker adds a broker address seen outside Metadata (a coordinator).
func (c *core) learnBroker(b broker) {
	for {
		old := c.meta.Load()
		if cur, ok := old.brokers[b.id]; ok && cur.host == b.host && cur.port == b.port {
			return
		}
		n := *old
		n.brokers = maps.Clone(old.brokers)
		n.brokers[b.id] = b
		if c.meta.CompareAndSwap(old, &n) {
			return
		}
	}
}

// closedIdle says whether conn was closed for connections.max.idle.ms,
// which says nothing about the cluster (a connection lost otherwise
// often means a moved leader).
func closedIdle(conn brokerConn) bool {
	e, ok := conn.(interface{ Err() error })
	return ok && errors.Is(e.Err(), wire.ErrIdle)
}
