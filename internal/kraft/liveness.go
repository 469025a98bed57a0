package kraft

import (
	"context"
	"log/slog"
	"time"

	"weir/internal/metadata"
	"weir/internal/probe"
)

// Fast fencing of dead brokers. A broker's session lapses after
// broker.session.timeout.ms (9 s) without a heartbeat, and until then the
// partitions it led have no working leader: producers stall. While this
// node runs the active controller it also probes, every
// weir.broker.liveness.probe.ms, the listener of every unfenced broker:
// a connection refused twice in a row means no process listens there any
// more (it exited or was killed), and the controller fences it at once,
// moving its leaderships. A broker that is slow, paused or unreachable
// does not refuse connections (a timeout proves nothing), so it keeps
// its session: this never fences a healthy broker under load. A new
// controller probes from its first tick, which covers the death of the
// previous controller's own broker.

// LivenessConfig tunes ProbeLiveness.
type LivenessConfig struct {
	// Every is weir.broker.liveness.probe.ms, read at each round; 0 or
	// less turns the probe off until it is set again.
	Every func() time.Duration
	// Addr is a broker's inter-broker listener address.
	Addr   func(*metadata.Broker) (string, bool)
	Logger *slog.Logger
}

// ProbeLiveness probes other brokers' listeners while this node runs the
// active controller, and fences a broker whose listener refused two
// probes in a row. It holds one idle connection to each unfenced
// broker's inter-broker listener (probe.Hold) rather than dialling it
// every round, which made every broker accept several connections a
// second from the controller's node for nothing; only when a held
// connection ends is the listener dialled again, and a refusal counted.
// It returns when ctx ends; its caller owns it.
func (n *Node) ProbeLiveness(ctx context.Context, cfg LivenessConfig) {
	type held struct {
		epoch int64
		addr  string
		conn  *probe.Conn
	}
	watches := map[int32]*held{}
	refused := map[int32]int{}
	drop := func(id int32) {
		if w := watches[id]; w != nil {
			w.conn.Close()
			delete(watches, id)
		}
	}
	dropAll := func() {
		for id := range watches {
			drop(id)
		}
	}
	defer dropAll()
	for {
		every := cfg.Every()
		if every <= 0 {
			every = time.Second // disabled: look again later
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(every):
		}
		active, err := n.Controller()
		if cfg.Every() <= 0 || err != nil {
			dropAll()
			clear(refused)
			continue
		}
		seen := map[int32]bool{}
		for _, br := range n.Image().Brokers() {
			if br.Fenced || br.ID == n.ID() {
				continue
			}
			addr, ok := cfg.Addr(br)
			if !ok {
				continue
			}
			seen[br.ID] = true
			if w := watches[br.ID]; w != nil && (w.epoch != br.Epoch || w.addr != addr || w.conn.Ended()) {
				drop(br.ID)
			}
			if watches[br.ID] != nil {
				delete(refused, br.ID)
				continue
			}
			conn, got := probe.Hold(ctx, addr, every)
			if conn != nil {
				watches[br.ID] = &held{epoch: br.Epoch, addr: addr, conn: conn}
			}
			if got != probe.Refused {
				delete(refused, br.ID)
				continue
			}
			refused[br.ID]++
			if refused[br.ID] < 2 {
				continue
			}
			delete(refused, br.ID)
			fctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			wrote, err := active.FenceBroker(fctx, br.ID, br.Epoch)
			cancel()
			cfg.Logger.Info("fenced a broker whose listener refuses connections", "broker", br.ID, "epoch", br.Epoch, "fenced", wrote, "err", err)
		}
		for id := range watches {
			if !seen[id] {
				drop(id)
			}
		}
		for id := range refused {
			if !seen[id] {
				delete(refused, id)
			}
		}
	}
}
