package client

import (
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"weir/client/internal/wire"
)

// errLog records the errors of the client's log lines.
type errLog struct {
	mu   sync.Mutex
	errs []error
}

func (l *errLog) record(r slog.Record) {
	r.Attrs(func(a slog.Attr) bool {
		if err, ok := a.Value.Any().(error); ok {
			l.mu.Lock()
			l.errs = append(l.errs, err)
			l.mu.Unlock()
		}
		return true
	})
}

func (l *errLog) idleCloses() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, err := range l.errs {
		if errors.Is(err, wire.ErrIdle) {
			n++
		}
	}
	return n
}

// TestIntegrationIdleConnectionsClosed: with connections.max.idle.ms the
// producer's and the admin client's connections are closed once idle for
// that long, and the next request opens a new one and succeeds.
func TestIntegrationIdleConnectionsClosed(t *testing.T) {
	const idle = 300 * time.Millisecond
	log := &errLog{}
	props := map[string]string{"bootstrap.servers": bootstrap(t), "connections.max.idle.ms": "300"}
	a, err := NewAdmin(props, WithLogger(slog.New(logFunc(log.record))))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	topic := uniqueTopic(t)
	createTopic(t, a, topic, 1)
	p, err := NewProducer(props, WithLogger(slog.New(logFunc(log.record))))
	if err != nil {
		t.Fatal(err)
	}
	ctx := testCtx(t)
	defer p.Close(ctx)
	for round := range 3 {
		if _, err := p.Send(ctx, &Record{Topic: topic, Key: []byte("k"), Value: []byte("v")}, nil).Get(ctx); err != nil {
			t.Fatalf("round %d: send: %v", round, err)
		}
		if _, err := a.ListTopics(ctx); err != nil {
			t.Fatalf("round %d: list topics: %v", round, err)
		}
		before := log.idleCloses()
		eventually(t, 20*idle, func() error {
			if n := log.idleCloses(); n <= before {
				return errors.New("no connection closed for idleness yet")
			}
			return nil
		})
	}
	log.mu.Lock()
	all := errors.Join(log.errs...)
	log.mu.Unlock()
	if !strings.Contains(all.Error(), "connections.max.idle.ms") {
		t.Fatal("idle closes do not name connections.max.idle.ms")
	}
}
