package kraft

import (
	"context"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// InterBrokerConfig configures an InterBrokerClient.
type InterBrokerConfig struct {
	// Resolve returns a broker's address on the inter-broker listener
	// (ListenerResolver).
	Resolve func(id int32) (string, bool)
	// Dial connects; nil uses net.Dialer.
	Dial     func(ctx context.Context, network, addr string) (net.Conn, error)
	ClientID string
	// Timeout bounds each request (default 30 s): the replica fetchers
	// need every request to end (replica.Manager.RemovePartitions waits
	// for a response's handling).
	Timeout time.Duration
	Logger  *slog.Logger
}

// InterBrokerClient sends requests to other brokers' Kafka listeners:
// the replica fetchers' Fetch and ListOffsets (it is their
// replica.Transport), the share coordinator's and the transaction
// coordinator's inter-broker calls. It keeps one KafkaClient per broker,
// made on first use and pointed at that broker alone, so a broker's
// connections are reused across requests. Safe for concurrent use.
type InterBrokerClient struct {
	cfg InterBrokerConfig

	mu      sync.Mutex // leaf
	clients map[int32]*KafkaClient
	closed  bool
}

// NewInterBrokerClient returns a client that connects on first use.
func NewInterBrokerClient(cfg InterBrokerConfig) *InterBrokerClient {
	if cfg.Timeout <= 0 {
		cfg.Timeout = 30 * time.Second
	}
	return &InterBrokerClient{cfg: cfg, clients: map[int32]*KafkaClient{}}
}

// Send sends req to broker id and returns its answer, within ctx and
// the configured timeout. After Close it returns ErrClosed.
func (c *InterBrokerClient) Send(ctx context.Context, id int32, req kmsg.Request) (kmsg.Response, error) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil, ErrClosed
	}
	kc := c.clients[id]
	if kc == nil {
		kc = NewKafkaClient(KafkaClientConfig{
			Leader:   func() int32 { return id },
			Resolve:  c.cfg.Resolve,
			Dial:     c.cfg.Dial,
			ClientID: c.cfg.ClientID,
			Logger:   c.cfg.Logger,
		})
		c.clients[id] = kc
	}
	c.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
	defer cancel()
	return kc.Request(ctx, req)
}

// Dials counts the connections opened to every broker.
func (c *InterBrokerClient) Dials() int64 {
	var n int64
	for _, kc := range c.take(false) {
		n += kc.Dials()
	}
	return n
}

// Close closes every broker's connections; later requests fail.
func (c *InterBrokerClient) Close() {
	for _, kc := range c.take(true) {
		kc.Close()
	}
}

// take lists the brokers' clients, and forgets them when closing, so
// that they are used without c.mu held.
func (c *InterBrokerClient) take(closing bool) []*KafkaClient {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]*KafkaClient, 0, len(c.clients))
	for _, kc := range c.clients {
		out = append(out, kc)
	}
	if closing {
		c.clients, c.closed = nil, true
	}
	return out
}
