package fault

import (
	"context"
	"sync"
	"time"

	"weir/internal/config"
	"weir/internal/server"
)

// Point is one fault-injection point: the API key whose replies it
// delays, the dynamic broker config that says by how much, and whether
// the delays of one connection queue behind each other (Serial) or run
// side by side.
type Point struct {
	Key    int16
	Config string
	Serial bool
}

// Points are every fault-injection point the broker has; a new one is a
// row here and a config in internal/config.
var Points = []Point{
	{Key: 0, Config: config.FaultProduceResponseMs, Serial: true}, // Produce
	{Key: 0, Config: config.FaultProduceResponseConcurrentMs},
	{Key: 1, Config: config.FaultFetchResponseMs, Serial: true}, // Fetch
	{Key: 1, Config: config.FaultFetchResponseConcurrentMs},
}

// Injector applies the Points to a node's replies. Its delays read the
// node's current settings, so an operator turns a fault on and off with
// IncrementalAlterConfigs.
//
// A serial point models a broker that spends its delay handling each
// request, one request per connection at a time as Kafka's network
// layer does: a connection's delayed replies leave one after another,
// each d after the later of its own completion and the previous delayed
// reply of that connection. Five requests in flight then wait d, 2d, ...
// 5d, and the connection carries at most one delayed reply per d. The
// lanes that order them are per connection (server.Request.Conn.ID) and
// are dropped when the connection's context ends.
type Injector struct {
	// delay is a config's current value; 0 is off.
	delay func(config string) time.Duration
	stop  <-chan struct{}
	wg    *sync.WaitGroup

	mu    sync.Mutex // leaf: guards lanes only
	lanes map[uint64]*lane
}

// lane orders one connection's serially delayed replies: tail is closed
// when the last one queued has gone out.
type lane struct {
	tail chan struct{}
}

// closedChan is the tail of a lane with nothing queued.
var closedChan = func() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}()

// NewInjector returns an injector reading delays with delay; its timers'
// goroutines are counted in wg and complete at once when stop is closed.
func NewInjector(delay func(config string) time.Duration, stop <-chan struct{}, wg *sync.WaitGroup) *Injector {
	return &Injector{delay: delay, stop: stop, wg: wg, lanes: map[uint64]*lane{}}
}

// Apply returns r, or r delayed when a point for req's key is on. ctx is
// the connection's context (the one server.Dispatcher.Serve receives):
// when it ends, the connection's lane is forgotten and its waiting
// replies are released, since nobody will write them.
func (i *Injector) Apply(ctx context.Context, req *server.Request, r *server.Reply) *server.Reply {
	for _, p := range Points {
		if p.Key != req.Key {
			continue
		}
		d := i.delay(p.Config)
		if d <= 0 {
			continue
		}
		if p.Serial {
			r = i.serial(ctx, req.Conn.ID, r, d)
		} else {
			r = Delay(r, d, i.stop, i.wg)
		}
	}
	return r
}

// serial queues r on its connection's lane: the returned reply completes
// d after both r and the lane's previous reply have.
func (i *Injector) serial(ctx context.Context, conn uint64, r *server.Reply, d time.Duration) *server.Reply {
	mine := make(chan struct{})
	i.mu.Lock()
	l, ok := i.lanes[conn]
	if !ok {
		l = &lane{tail: closedChan}
		i.lanes[conn] = l
		context.AfterFunc(ctx, func() {
			i.mu.Lock()
			delete(i.lanes, conn)
			i.mu.Unlock()
		})
	}
	prev := l.tail
	l.tail = mine
	i.mu.Unlock()

	out := server.NewPendingReply()
	i.wg.Add(1)
	go func() {
		defer i.wg.Done()
		defer close(mine)
		defer server.Forward(r, out)
		for _, wait := range []<-chan struct{}{prev, r.Done()} {
			select {
			case <-wait:
			case <-i.stop:
				return
			case <-ctx.Done():
				return
			}
		}
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
		case <-i.stop:
		case <-ctx.Done():
		}
	}()
	return out
}
