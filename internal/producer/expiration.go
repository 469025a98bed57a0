package producer

import (
	"log/slog"
	"sync"
	"time"

	"weir/internal/clock"
)

// Expirer is a partition whose idle producers can be forgotten:
// log.Log.ExpireProducers, which runs State.ExpireProducers under the
// log's lock.
type Expirer interface {
	ExpireProducers() int
}

// ExpirationConfig configures an Expiration.
type ExpirationConfig struct {
	// Every is producer.id.expiration.check.interval.ms (Kafka's 10 min).
	Every time.Duration
	// Partitions lists the partitions this node holds a replica of at
	// the moment of a round (leaders and followers alike: a follower
	// forgets its producers as the leader does).
	Partitions func() []Expirer
	// Clock drives the rounds; nil is the system clock.
	Clock  clock.Clock
	Logger *slog.Logger
}

// Expiration forgets, every producer.id.expiration.check.interval.ms, the
// producers of each partition idle for producer.id.expiration.ms (Kafka's
// periodic producer expiration check). A round runs on the clock's timer
// goroutine and schedules the next when it ends, so rounds never overlap;
// Close stops them and waits for one under way.
type Expiration struct {
	cfg     ExpirationConfig
	running sync.WaitGroup

	mu     sync.Mutex // guards timer and closed; a leaf
	timer  clock.Timer
	closed bool
}

// StartExpiration schedules the first round one interval from now.
func StartExpiration(cfg ExpirationConfig) *Expiration {
	if cfg.Clock == nil {
		cfg.Clock = clock.System()
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	e := &Expiration{cfg: cfg}
	e.mu.Lock()
	e.timer = cfg.Clock.AfterFunc(cfg.Every, e.round)
	e.mu.Unlock()
	return e
}

func (e *Expiration) round() {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return
	}
	e.running.Add(1)
	e.mu.Unlock()
	defer e.running.Done()
	expired := 0
	for _, p := range e.cfg.Partitions() {
		expired += p.ExpireProducers()
	}
	if expired > 0 {
		e.cfg.Logger.Debug("producers expired", "count", expired)
	}
	e.mu.Lock()
	if !e.closed {
		e.timer = e.cfg.Clock.AfterFunc(e.cfg.Every, e.round)
	}
	e.mu.Unlock()
}

// Close stops the rounds and waits for one under way.
func (e *Expiration) Close() {
	e.mu.Lock()
	e.closed = true
	e.timer.Stop()
	e.mu.Unlock()
	e.running.Wait()
}
