package kraft

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/wiretag"
)

// KafkaClientConfig configures a KafkaClient.
type KafkaClientConfig struct {
	// Leader returns the id of the node running the active controller as
	// this broker knows it (its raft node's leader: Node.Leader), or -1.
	// Nil means unknown: Bootstrap is tried in turn.
	Leader func() int32
	// Resolve returns the Kafka listener address of a node
	// (ListenerResolver, or a static table).
	Resolve func(id int32) (string, bool)
	// Bootstrap addresses are tried in turn while the leader is unknown
	// or cannot be resolved; BootstrapFunc, if set, adds addresses known
	// at the time of the attempt (say, brokers of the applied image).
	Bootstrap     []string
	BootstrapFunc func() []string
	// Local, if set, takes requests without a socket when the leader is
	// Local itself.
	Local *Node

	ClientID string
	// Dial connects; nil uses net.Dialer.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// DialTimeout bounds a connection and its ApiVersions exchange
	// (default 5 s).
	DialTimeout time.Duration
	// MinBackoff and MaxBackoff pace retries (defaults 10 ms and 100 ms).
	MinBackoff, MaxBackoff time.Duration
	// MaxConnsPerAddr caps the connections open to one address, in use
	// or idle (default 8); a request finding them all in use waits for
	// one. Idle connections are kept, never more than the cap.
	MaxConnsPerAddr int
	// LeaderPoll is how often a request waiting for its answer asks
	// Leader whether the quorum moved on; when it names another node the
	// request is given up (default 100 ms). See followLeader.
	LeaderPoll time.Duration
	Logger     *slog.Logger
}

// KafkaClient is the ControllerClient of a broker whose controller runs
// elsewhere: requests go over the Kafka protocol (plaintext, our own
// framing, kmsg bodies) to the Kafka listener of the node running the
// active controller, found through Leader and Resolve. Requests that get
// NOT_CONTROLLER or cannot reach that node are retried, following the
// leader, until their context ends; a request still waiting for its
// answer when the quorum names another leader is given up (followLeader);
// a request that may have reached a
// controller before its connection failed is retried only if resending
// it is harmless (BrokerRegistration, BrokerHeartbeat,
// ListPartitionReassignments, DescribeQuorum), else the error is
// returned.
//
// Connections are kept per address, one per concurrent request up to
// MaxConnsPerAddr, so a slow CreateTopics does not hold back a heartbeat
// and a burst of requests does not open a connection each. Safe for
// concurrent use; Close closes the idle connections and fails later
// requests.
type KafkaClient struct {
	retrier
	cfg KafkaClientConfig
	log *slog.Logger

	mu     sync.Mutex // leaf
	pools  map[string]*connPool
	next   int // the next Bootstrap address to try
	closed bool
	dials  int64 // connections opened, for tests
}

// connPool is the connections to one address.
type connPool struct {
	open int // connections open, idle or in use
	idle []*kconn
	// freed is closed, and replaced, when a connection goes back idle or
	// is closed: a request waiting for one looks again.
	freed chan struct{}
}

func (p *connPool) signal() {
	close(p.freed)
	p.freed = make(chan struct{})
}

// NewKafkaClient returns a client; it connects on first use.
func NewKafkaClient(cfg KafkaClientConfig) *KafkaClient {
	if cfg.Dial == nil {
		var d net.Dialer
		cfg.Dial = d.DialContext
	}
	if cfg.DialTimeout <= 0 {
		cfg.DialTimeout = 5 * time.Second
	}
	if cfg.MinBackoff <= 0 {
		cfg.MinBackoff = defaultMinBackoff
	}
	if cfg.MaxBackoff <= 0 {
		cfg.MaxBackoff = defaultMaxBackoff
	}
	if cfg.MaxConnsPerAddr <= 0 {
		cfg.MaxConnsPerAddr = defaultMaxConnsPerAddr
	}
	if cfg.LeaderPoll <= 0 {
		cfg.LeaderPoll = defaultLeaderPoll
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	k := &KafkaClient{cfg: cfg, log: cfg.Logger, pools: map[string]*connPool{}}
	k.retrier = retrier{try: k.attempt, minBackoff: cfg.MinBackoff, maxBackoff: cfg.MaxBackoff}
	return k
}

// defaultMaxConnsPerAddr is MaxConnsPerAddr's default: a broker's
// lifecycle, its admin forwards and its ISR changes rarely overlap more.
const defaultMaxConnsPerAddr = 8

// safeToResend lists the requests that may be sent again after a
// connection failed with the request possibly delivered.
func safeToResend(key int16) bool { return key == 46 || key == 55 || key == 62 || key == 63 }

func (k *KafkaClient) attempt(ctx context.Context, req kmsg.Request) (kmsg.Response, int64, bool, error) {
	leader := int32(-1)
	if k.cfg.Leader != nil {
		leader = k.cfg.Leader()
	}
	if l := k.cfg.Local; l != nil && leader == l.ID() {
		return localAttempt(l)(ctx, req)
	}
	addr, ok := "", false
	if leader >= 0 && k.cfg.Resolve != nil {
		addr, ok = k.cfg.Resolve(leader)
	}
	if !ok {
		if addr, ok = k.bootstrap(); !ok {
			return nil, -1, true, fmt.Errorf("kraft: no known controller (leader %d)", leader)
		}
	}
	// The watch covers the connection too: a dial to a descheduled
	// process completes in its kernel, then waits for its ApiVersions.
	rtCtx, moved := k.followLeader(ctx, addr, req.Key())
	c, err := k.get(rtCtx, leader, addr)
	if err != nil {
		moved()
		return nil, -1, ctx.Err() == nil && !errors.Is(err, ErrClosed), err
	}
	if tags := requestTags(req); tags != nil && isControllerKey(req.Key()) {
		wiretag.AskControllerOffset(tags)
	}
	resp, written, err := c.roundTrip(rtCtx, req)
	if moved() && err != nil {
		err = fmt.Errorf("%w (%s); %v", errLeaderMoved, addr, err)
	}
	if errors.Is(err, ErrUnsupportedRequest) {
		k.put(c)
		return nil, -1, false, err
	}
	if err != nil {
		k.discard(c)
		return nil, -1, ctx.Err() == nil && (!written || safeToResend(req.Key())), err
	}
	k.put(c)
	offset := int64(-1)
	if tags := responseTags(resp); tags != nil {
		if off, ok := wiretag.TakeControllerOffset(tags); ok {
			offset = off
		}
	}
	return resp, offset, false, nil
}

// errLeaderMoved says a request was given up because the quorum named
// another leader while it waited for its answer.
var errLeaderMoved = errors.New("kraft: the controller moved while a request waited for its answer")

// defaultLeaderPoll is how often a request waiting for the node it was
// sent to looks whether the quorum moved on (KafkaClientConfig.LeaderPoll).
const defaultLeaderPoll = 100 * time.Millisecond

// followLeader returns the context a round trip to addr runs under: it
// ends when ctx does, or when Leader names a node whose address is
// another. A request sent to a controller that stops answering (its
// process descheduled, its host cut off), or to a bootstrap address
// while no leader was known, would otherwise wait out its whole timeout
// after a new controller was elected, and with it whatever queues behind
// it (a broker sends its ISR changes one request at a time). moved,
// called once the round trip is over, stops the watch and reports
// whether it ended the round trip. Nothing is watched for a request
// that is not a controller's (a replica fetch between brokers, whose
// Leader names one fixed node) or when there is no Leader to ask.
func (k *KafkaClient) followLeader(ctx context.Context, addr string, key int16) (context.Context, func() bool) {
	if k.cfg.Leader == nil || k.cfg.Resolve == nil || !isControllerKey(key) {
		return ctx, func() bool { return false }
	}
	wctx, cancel := context.WithCancelCause(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(k.cfg.LeaderPoll)
		defer t.Stop()
		for {
			select {
			case <-wctx.Done():
				return
			case <-t.C:
			}
			if id := k.cfg.Leader(); id >= 0 {
				if now, ok := k.cfg.Resolve(id); ok && now != addr {
					cancel(errLeaderMoved)
					return
				}
			}
		}
	}()
	return wctx, func() bool {
		cancel(nil)
		<-done
		return errors.Is(context.Cause(wctx), errLeaderMoved)
	}
}

func (k *KafkaClient) bootstrap() (string, bool) {
	addrs := k.cfg.Bootstrap
	if k.cfg.BootstrapFunc != nil {
		addrs = append(slices.Clip(addrs), k.cfg.BootstrapFunc()...)
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if len(addrs) == 0 {
		return "", false
	}
	addr := addrs[k.next%len(addrs)]
	k.next++
	return addr, true
}

// get returns an idle connection to addr, or a new one while fewer than
// MaxConnsPerAddr are open, or waits for one to be freed.
func (k *KafkaClient) get(ctx context.Context, node int32, addr string) (*kconn, error) {
	for {
		k.mu.Lock()
		if k.closed {
			k.mu.Unlock()
			return nil, ErrClosed
		}
		p := k.pools[addr]
		if p == nil {
			p = &connPool{freed: make(chan struct{})}
			k.pools[addr] = p
		}
		for len(p.idle) > 0 {
			c := p.idle[len(p.idle)-1]
			p.idle = p.idle[:len(p.idle)-1]
			if idleConnAlive(c.nc) {
				k.mu.Unlock()
				return c, nil
			}
			c.close()
			p.open--
		}
		if p.open < k.cfg.MaxConnsPerAddr {
			p.open++
			k.dials++
			k.mu.Unlock()
			return k.dial(ctx, node, addr)
		}
		freed := p.freed
		k.mu.Unlock()
		select {
		case <-freed:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// dial opens a connection that holds one of addr's slots, giving the
// slot back when it fails.
func (k *KafkaClient) dial(ctx context.Context, node int32, addr string) (*kconn, error) {
	dctx, cancel := context.WithTimeout(ctx, k.cfg.DialTimeout)
	defer cancel()
	c, err := dialKafka(dctx, k.cfg.Dial, addr, k.cfg.ClientID)
	if err != nil {
		k.release(addr)
		// The client reaches the active controller for the lifecycle
		// and admin requests, and a partition's leader for a follower's
		// fetches: name the node it dialled (-1: a bootstrap address).
		return nil, fmt.Errorf("kraft: connect to node %d at %s: %w", node, addr, err)
	}
	k.log.Debug("connected", "node", node, "addr", addr)
	return c, nil
}

// put keeps a connection that answered for the next request.
func (k *KafkaClient) put(c *kconn) {
	k.mu.Lock()
	defer k.mu.Unlock()
	p := k.pools[c.addr]
	if k.closed || p == nil {
		c.close()
		return
	}
	p.idle = append(p.idle, c)
	p.signal()
}

// discard closes a connection that failed and frees its slot.
func (k *KafkaClient) discard(c *kconn) {
	c.close()
	k.release(c.addr)
}

func (k *KafkaClient) release(addr string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if p := k.pools[addr]; p != nil {
		p.open--
		p.signal()
	}
}

// Close closes idle connections; connections in use close when their
// request ends.
func (k *KafkaClient) Close() {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.closed = true
	for addr, p := range k.pools {
		for _, c := range p.idle {
			c.close()
		}
		p.signal()
		delete(k.pools, addr)
	}
}

// Dials is how many connections the client has opened.
func (k *KafkaClient) Dials() int64 {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.dials
}

// Request sends any request once to the node Leader names (or a
// bootstrap address), without the controller client's retries: brokers
// use it to reach each other (replica fetches). The caller retries.
func (k *KafkaClient) Request(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
	resp, _, _, err := k.attempt(ctx, req)
	return resp, err
}
