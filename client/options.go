package client

import (
	"context"
	"log/slog"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/client/internal/wire"
	"weir/client/partitioner"
)

// Option sets something that is not a Kafka property: a logger, a custom
// partitioner, a random source.
type Option func(*options)

type options struct {
	logger       *slog.Logger
	rand         partitioner.Rand
	partitioners map[string]partitioner.Partitioner
	clock        clock
	dial         dialFunc
	maxVersions  map[int16]int16
	// manual runs the producer without its sender and refresher goroutines:
	// a test drives it with runOnce, on its own clock.
	manual bool
}

// WithLogger sets the logger; the default discards everything.
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.logger = l } }

// WithRand sets the random source of the partitioners and of retry jitter.
func WithRand(r partitioner.Rand) Option { return func(o *options) { o.rand = r } }

// WithPartitioner registers a custom partitioner under a class name; setting
// partitioner.class to that name selects it, as a class name does in Java.
func WithPartitioner(className string, p partitioner.Partitioner) Option {
	return func(o *options) {
		if o.partitioners == nil {
			o.partitioners = map[string]partitioner.Partitioner{}
		}
		o.partitioners[className] = p
	}
}

// WithMaxVersions caps the version used for some API keys below what both
// sides support, to exercise older protocol versions.
func WithMaxVersions(m map[int16]int16) Option { return func(o *options) { o.maxVersions = m } }

func buildOptions(opts []Option) options {
	o := options{}
	for _, f := range opts {
		f(&o)
	}
	if o.logger == nil {
		o.logger = slog.New(slog.DiscardHandler)
	}
	if o.rand == nil {
		o.rand = partitioner.DefaultRand
	}
	if o.clock == nil {
		o.clock = wallClock{}
	}
	return o
}

// clock is the time source; tests inject a fake.
type clock interface{ Now() time.Time }

type wallClock struct{}

func (wallClock) Now() time.Time { return time.Now() }

// brokerConn is what the client needs from a connection; *wire.Conn is the
// real one, the simulation supplies fakes.
type brokerConn interface {
	Send(req kmsg.Request, timeout time.Duration, noResponse bool, cb wire.Callback)
	// Do waits for req's response or ctx; timeout > 0 closes the connection
	// when it passes first (request.timeout.ms), ctx ending does not.
	Do(ctx context.Context, req kmsg.Request, timeout time.Duration) (kmsg.Response, error)
	Version(key int16) (int16, bool)
	Done() <-chan struct{}
	Close()
}

// dialFunc connects to node at addr; the connection calls onWrite with the
// size of every write.
type dialFunc func(ctx context.Context, node int32, addr string, onWrite func(int)) (brokerConn, error)
