package kraft

import (
	"context"
	crand "crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/metadata"
)

// Clock is the time source of a BrokerLifecycle; tests inject a fake.
type Clock interface {
	Now() time.Time
	After(d time.Duration) <-chan time.Time
}

type realClock struct{}

func (realClock) Now() time.Time                         { return time.Now() }
func (realClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

// MetadataView is the broker's applied metadata, as the lifecycle needs
// it: the offset it reports is Image().Offset(), which the controller
// compares with the registration's to unfence the broker. MetadataFSM
// (Node.FSM) implements it; a broker passes the image its registry has
// applied, so that it is unfenced only once it serves what it reports.
type MetadataView interface {
	Image() *metadata.Image
	// Changed returns a channel closed at the next applied change.
	Changed() <-chan struct{}
}

// MetadataFuncs is a MetadataView made of two functions.
type MetadataFuncs struct {
	Img func() *metadata.Image
	Chg func() <-chan struct{}
}

func (m MetadataFuncs) Image() *metadata.Image   { return m.Img() }
func (m MetadataFuncs) Changed() <-chan struct{} { return m.Chg() }

// LifecycleState is where a broker is in its life with the controller.
type LifecycleState int32

const (
	// StateRegistering: not registered yet (or registering again after
	// the controller forgot this incarnation).
	StateRegistering LifecycleState = iota
	// StateFenced: registered, not allowed to lead or join ISRs, catching
	// up with the metadata log until the controller unfences it.
	StateFenced
	// StateActive: unfenced; it may lead partitions.
	StateActive
	// StateShuttingDown: in controlled shutdown; its leaderships moved,
	// and it waits for every active broker to apply that.
	StateShuttingDown
	// StateStopped: the controller let it go, or the lifecycle was closed.
	StateStopped
)

func (s LifecycleState) String() string {
	switch s {
	case StateRegistering:
		return "registering"
	case StateFenced:
		return "fenced"
	case StateActive:
		return "active"
	case StateShuttingDown:
		return "shutting-down"
	case StateStopped:
		return "stopped"
	}
	return fmt.Sprintf("state(%d)", int32(s))
}

// LifecycleConfig configures a BrokerLifecycle.
type LifecycleConfig struct {
	BrokerID  int32
	ClusterID string
	// Incarnation identifies this run of the broker; zero picks a random
	// one. A restarted broker registers with a new incarnation.
	Incarnation [16]byte
	Listeners   []kmsg.BrokerRegistrationRequestListener
	Rack        *string

	Client   ControllerClient
	Metadata MetadataView
	// Ready reports whether the broker may take leaderships (its logs
	// are recovered, its data directory takes writes); while it does
	// not, the broker asks to be fenced. Call HeartbeatNow when it
	// changes. Nil: always.
	Ready func() bool

	// HeartbeatInterval is broker.heartbeat.interval.ms (default 2 s).
	HeartbeatInterval time.Duration
	// RetryInterval paces attempts while registering, catching up or
	// shutting down, and retries after errors (default 100 ms); applied
	// metadata changes wake those states earlier.
	RetryInterval time.Duration
	// RequestTimeout bounds each request, retries included (default 5 s).
	RequestTimeout time.Duration
	Clock          Clock
	Logger         *slog.Logger
}

// BrokerLifecycle is a broker's side of the controller protocol: it
// registers, heartbeats with its applied metadata offset (every
// HeartbeatInterval while active, sooner while catching up or shutting
// down), becomes active when the controller unfences it, registers again
// if the controller forgets it, and on Shutdown asks for a controlled
// shutdown and reports when the controller lets it go.
//
// While another broker is in controlled shutdown it heartbeats as soon as
// it applies a new batch: the controller lets a shutting-down broker go
// once every active broker has applied the batch that moved its
// leaderships, so waiting for the regular heartbeat would add up to
// HeartbeatInterval to every controlled shutdown.
//
// It runs one goroutine, stopped by Close (or when the controller lets
// it go).
type BrokerLifecycle struct {
	cfg LifecycleConfig
	log *slog.Logger

	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}

	shutdownReq chan struct{}
	// poke asks the loop to talk to the controller now (HeartbeatNow).
	poke         chan struct{}
	shutdownOnce sync.Once
	unfenced     chan struct{}
	unfenceOnce  sync.Once
	stopped      chan struct{}

	state    atomic.Int32
	epoch    atomic.Int64
	reported atomic.Int64 // the offset of the last heartbeat answered

	// Loop state.
	refused      int // registrations refused in a row
	wantShutdown bool
	lastSent     time.Time
}

// StartLifecycle starts the broker's lifecycle loop: it registers at
// once.
func StartLifecycle(cfg LifecycleConfig) (*BrokerLifecycle, error) {
	if cfg.Client == nil || cfg.Metadata == nil {
		return nil, errors.New("kraft: lifecycle needs a Client and Metadata")
	}
	if cfg.Incarnation == ([16]byte{}) {
		_, _ = crand.Read(cfg.Incarnation[:])
	}
	if cfg.HeartbeatInterval <= 0 {
		cfg.HeartbeatInterval = 2 * time.Second
	}
	if cfg.RetryInterval <= 0 {
		cfg.RetryInterval = 100 * time.Millisecond
	}
	if cfg.RequestTimeout <= 0 {
		cfg.RequestTimeout = 5 * time.Second
	}
	if cfg.Clock == nil {
		cfg.Clock = realClock{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	l := &BrokerLifecycle{
		cfg:         cfg,
		log:         cfg.Logger.With("node", cfg.BrokerID),
		done:        make(chan struct{}),
		shutdownReq: make(chan struct{}),
		poke:        make(chan struct{}, 1),
		unfenced:    make(chan struct{}),
		stopped:     make(chan struct{}),
	}
	l.epoch.Store(-1)
	l.reported.Store(-1)
	l.ctx, l.cancel = context.WithCancel(context.Background())
	go l.run()
	return l, nil
}

// State is the current state.
func (l *BrokerLifecycle) State() LifecycleState { return LifecycleState(l.state.Load()) }

// Epoch is the broker epoch of the current registration (-1 before).
func (l *BrokerLifecycle) Epoch() int64 { return l.epoch.Load() }

// Reported is the metadata offset of the last heartbeat answered.
func (l *BrokerLifecycle) Reported() int64 { return l.reported.Load() }

// Unfenced is closed the first time the controller unfences the broker.
func (l *BrokerLifecycle) Unfenced() <-chan struct{} { return l.unfenced }

// AwaitUnfenced waits until the controller unfences this broker, or ctx
// ends. When bounded ends first (a start-up timeout) it gives up, unless
// catchingUp says the metadata this broker reports is still behind what
// its node holds: catching up is this node's own work (seconds at
// 100,000 partitions on a busy machine), and the controller unfences it
// once done, so the wait goes on, bounded by ctx alone.
func (l *BrokerLifecycle) AwaitUnfenced(ctx, bounded context.Context, catchingUp func() bool) error {
	select {
	case <-l.unfenced:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-bounded.Done():
	}
	if catchingUp == nil || !catchingUp() {
		return fmt.Errorf("kraft: not unfenced by the controller (state %v): %w", l.State(), bounded.Err())
	}
	select {
	case <-l.unfenced:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Stopped is closed when the controller has let the broker go.
func (l *BrokerLifecycle) Stopped() <-chan struct{} { return l.stopped }

// Shutdown asks for a controlled shutdown and waits until the controller
// has moved the broker's leaderships, every active broker has applied
// that, and the controller has fenced it: the broker may then exit. It
// returns ctx's error if that takes longer, ErrClosed if the lifecycle
// was closed first.
func (l *BrokerLifecycle) Shutdown(ctx context.Context) error {
	l.shutdownOnce.Do(func() { close(l.shutdownReq) })
	select {
	case <-l.stopped:
		return nil
	case <-l.done:
		select {
		case <-l.stopped:
			return nil
		default:
			return ErrClosed
		}
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Close stops the loop without a controlled shutdown and waits for it.
func (l *BrokerLifecycle) Close() {
	l.cancel()
	<-l.done
}

func (l *BrokerLifecycle) setState(s LifecycleState) {
	if old := LifecycleState(l.state.Swap(int32(s))); old != s {
		l.log.Info("broker state", "from", old.String(), "to", s.String(), "epoch", l.epoch.Load())
	}
	switch s {
	case StateActive:
		l.unfenceOnce.Do(func() { close(l.unfenced) })
	case StateStopped:
		close(l.stopped)
	}
}

// HeartbeatNow has the lifecycle talk to the controller at once rather
// than at its next heartbeat: what Ready says changed. It never blocks.
func (l *BrokerLifecycle) HeartbeatNow() {
	select {
	case l.poke <- struct{}{}:
	default:
	}
}

func (l *BrokerLifecycle) run() {
	defer close(l.done)
	shutdownReq := l.shutdownReq
	wait := time.Duration(0)
	// next is the Changed channel loaded before the image was last
	// looked at: a change applied after that look closes it.
	var next <-chan struct{}
	for {
		var changed <-chan struct{}
		if l.wakeOnChange() {
			changed = next
			if changed == nil {
				changed = l.cfg.Metadata.Changed()
			}
		}
		next = nil
		select {
		case <-l.ctx.Done():
			return
		case <-shutdownReq:
			shutdownReq = nil
			l.wantShutdown = true
		case <-l.poke:
		case <-changed:
			// Load the next channel before reading the image, so a change
			// applied while this one is judged wakes the loop again.
			next = l.cfg.Metadata.Changed()
			if !l.changeWorthSending() {
				// Keep the pending deadline.
				wait = max(0, l.nextDue()-l.cfg.Clock.Now().Sub(l.lastSent))
				continue
			}
		case <-l.cfg.Clock.After(wait):
		}
		if next == nil {
			// communicate reads the image: a change applied after that
			// must wake the next wait.
			next = l.cfg.Metadata.Changed()
		}
		l.communicate()
		if l.State() == StateStopped {
			return
		}
		wait = l.nextDue()
	}
}

// nextDue is the time between two communications in the current state.
func (l *BrokerLifecycle) nextDue() time.Duration {
	if l.State() == StateActive && !l.wantShutdown {
		return l.cfg.HeartbeatInterval
	}
	if l.State() == StateFenced && !l.wantShutdown && l.cfg.Ready != nil && !l.cfg.Ready() {
		// Fenced by its own choice (a failed disk): nothing to catch
		// up with until Ready changes, which HeartbeatNow reports.
		return l.cfg.HeartbeatInterval
	}
	if l.State() == StateRegistering && l.refused > 0 {
		return min(l.cfg.HeartbeatInterval, max(l.cfg.RetryInterval, 500*time.Millisecond))
	}
	return l.cfg.RetryInterval
}

// wakeOnChange: states in which an applied change may warrant an early
// heartbeat.
func (l *BrokerLifecycle) wakeOnChange() bool {
	switch l.State() {
	case StateFenced, StateShuttingDown, StateActive:
		return true
	}
	return false
}

// changeWorthSending: the image moved past the last reported offset and
// this broker is catching up or shutting down, or another broker waits
// for everyone to apply its controlled shutdown.
func (l *BrokerLifecycle) changeWorthSending() bool {
	img := l.cfg.Metadata.Image()
	if img.Offset() <= l.reported.Load() {
		return false
	}
	if l.State() != StateActive || l.wantShutdown {
		return true
	}
	for _, b := range img.Brokers() {
		if b.ID != l.cfg.BrokerID && b.InControlledShutdown && !b.Fenced {
			return true
		}
	}
	return false
}

func (l *BrokerLifecycle) communicate() {
	l.lastSent = l.cfg.Clock.Now()
	ctx, cancel := context.WithTimeout(l.ctx, l.cfg.RequestTimeout)
	defer cancel()
	switch l.State() {
	case StateRegistering:
		if l.wantShutdown {
			// Nothing to hand over.
			l.setState(StateStopped)
			return
		}
		l.register(ctx)
	default:
		l.heartbeat(ctx)
	}
}

func (l *BrokerLifecycle) register(ctx context.Context) {
	req := kmsg.NewPtrBrokerRegistrationRequest()
	req.BrokerID, req.ClusterID, req.IncarnationID = l.cfg.BrokerID, l.cfg.ClusterID, l.cfg.Incarnation
	req.Listeners, req.Rack = l.cfg.Listeners, l.cfg.Rack
	req.PreviousBrokerEpoch = l.epoch.Load()
	resp, err := l.cfg.Client.RegisterBroker(ctx, req)
	switch {
	case err != nil:
		l.log.Debug("registration failed", "err", err)
	case resp.ErrorCode != 0:
		// Refused (say, the previous incarnation's session is still
		// live): say so once, then retry at the heartbeat interval.
		if l.refused == 0 {
			l.log.Warn("registration refused; retrying", "err", kerr.ErrorForCode(resp.ErrorCode))
		}
		l.refused++
	default:
		if l.refused > 0 {
			l.log.Info("registered after refusals", "refusals", l.refused)
		}
		l.refused = 0
		l.epoch.Store(resp.BrokerEpoch)
		l.setState(StateFenced)
	}
}

func (l *BrokerLifecycle) heartbeat(ctx context.Context) {
	req := kmsg.NewPtrBrokerHeartbeatRequest()
	req.BrokerID, req.BrokerEpoch = l.cfg.BrokerID, l.epoch.Load()
	offset := l.cfg.Metadata.Image().Offset()
	req.CurrentMetadataOffset = offset
	req.WantFence = l.cfg.Ready != nil && !l.cfg.Ready()
	var (
		resp *kmsg.BrokerHeartbeatResponse
		err  error
	)
	if l.wantShutdown {
		resp, err = l.cfg.Client.ControlledShutdown(ctx, req)
	} else {
		resp, err = l.cfg.Client.Heartbeat(ctx, req)
	}
	if err != nil {
		l.log.Debug("heartbeat failed", "err", err)
		return
	}
	switch resp.ErrorCode {
	case 0:
	case kerr.StaleBrokerEpoch.Code:
		// The controller no longer knows this registration.
		l.log.Warn("registration lost, registering again", "epoch", req.BrokerEpoch)
		l.setState(StateRegistering)
		return
	default:
		l.log.Debug("heartbeat refused", "err", kerr.ErrorForCode(resp.ErrorCode))
		return
	}
	l.reported.Store(offset)
	switch {
	case resp.ShouldShutdown:
		l.setState(StateStopped)
	case l.wantShutdown && !resp.IsFenced:
		l.setState(StateShuttingDown)
	case resp.IsFenced:
		l.setState(StateFenced)
	default:
		l.setState(StateActive)
	}
}
