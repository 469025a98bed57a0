package server

import "time"

// DefaultMaxIdle is Kafka's connections.max.idle.ms default.
const DefaultMaxIdle = 10 * time.Minute

// idleSweepEvery is how often the sweep looks for idle connections: a
// quarter of maxIdle, between 10 ms and 30 s, so a connection is closed
// between maxIdle and 1.25 maxIdle after its last request.
func idleSweepEvery(maxIdle time.Duration) time.Duration {
	return min(max(maxIdle/4, 10*time.Millisecond), 30*time.Second)
}

// sweepIdle closes connections idle for maxIdle (connections.max.idle.ms)
// until the server closes. One goroutine per Server, counted in wg.
func (s *Server) sweepIdle() {
	defer s.wg.Done()
	t := time.NewTicker(idleSweepEvery(s.maxIdle))
	defer t.Stop()
	for {
		select {
		case <-s.closed:
			return
		case now := <-t.C:
			for _, c := range s.idleConns(now) {
				c.log.Debug("closing idle connection", "max_idle", s.maxIdle)
				s.stats.idleClosed.Add(1)
				c.cancel()
			}
		}
	}
}

// idleConns returns the connections that have sent no request for
// maxIdle and have none unanswered (a long fetch wait, a throttled
// reply: not idle).
func (s *Server) idleConns(now time.Time) []*conn {
	s.mu.Lock()
	defer s.mu.Unlock()
	var idle []*conn
	for c := range s.conns {
		answered := c.answered.Load() // first: requests >= answered at any time
		n := c.requests.Load()
		if n != c.idleSeen || c.idleSince.IsZero() || n != answered {
			c.idleSeen, c.idleSince = n, now
			continue
		}
		if now.Sub(c.idleSince) >= s.maxIdle {
			idle = append(idle, c)
		}
	}
	return idle
}
