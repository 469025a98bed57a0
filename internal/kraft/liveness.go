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
// probes in a row. It returns when ctx ends; its caller owns it.
func (n *Node) ProbeLiveness(ctx context.Context, cfg LivenessConfig) {
	refused := map[int32]int{}
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
		if cfg.Every() <= 0 {
			continue
		}
		active, err := n.Controller()
		if err != nil {
			clear(refused)
			continue
		}
		for _, br := range n.Image().Brokers() {
			if br.Fenced || br.ID == n.ID() {
				delete(refused, br.ID)
				continue
			}
			addr, ok := cfg.Addr(br)
			if !ok {
				continue
			}
			if probe.Dial(ctx, addr, every) != probe.Refused {
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
	}
}
