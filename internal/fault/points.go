package fault

import (
	"sync"
	"time"

	"weir/internal/config"
	"weir/internal/server"
)

// Point is one fault-injection point: the API key whose replies it
// delays and the dynamic broker config that says by how much.
type Point struct {
	Key    int16
	Config string
}

// Points are every fault-injection point the broker has; a new one is a
// row here and a config in internal/config.
var Points = []Point{
	{Key: 0, Config: config.FaultProduceResponseMs}, // Produce
	{Key: 1, Config: config.FaultFetchResponseMs},   // Fetch
}

// Injector applies the Points to a node's replies. Its delays read the
// node's current settings, so an operator turns a fault on and off with
// IncrementalAlterConfigs.
type Injector struct {
	// delay is a config's current value; 0 is off.
	delay func(config string) time.Duration
	stop  <-chan struct{}
	wg    *sync.WaitGroup
}

// NewInjector returns an injector reading delays with delay; its timers'
// goroutines are counted in wg and complete at once when stop is closed.
func NewInjector(delay func(config string) time.Duration, stop <-chan struct{}, wg *sync.WaitGroup) *Injector {
	return &Injector{delay: delay, stop: stop, wg: wg}
}

// Apply returns r, or r delayed when a point for key is on.
func (i *Injector) Apply(key int16, r *server.Reply) *server.Reply {
	for _, p := range Points {
		if p.Key == key {
			return Delay(r, i.delay(p.Config), i.stop, i.wg)
		}
	}
	return r
}
