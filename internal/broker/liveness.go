package broker

import (
	"context"
	"errors"
	"net"
	"strconv"
	"syscall"
	"time"

	"weir/internal/config"
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

// livenessLoop runs until the broker closes.
func (b *Broker) livenessLoop() {
	defer b.wg.Done()
	refused := map[int32]int{}
	for {
		every := b.settings().Millis(config.LivenessProbeMs)
		if every <= 0 {
			every = time.Second // disabled: look again later
		}
		select {
		case <-b.ctx.Done():
			return
		case <-time.After(every):
		}
		if b.settings().Millis(config.LivenessProbeMs) <= 0 {
			continue
		}
		active, err := b.node.Controller()
		if err != nil {
			clear(refused)
			continue
		}
		for _, br := range b.node.Image().Brokers() {
			if br.Fenced || br.ID == b.cfg.NodeID {
				delete(refused, br.ID)
				continue
			}
			mb, ok := b.endpointFor(br, "")
			if !ok {
				continue
			}
			if !probeRefused(b.ctx, net.JoinHostPort(mb.Host, strconv.Itoa(int(mb.Port))), every) {
				delete(refused, br.ID)
				continue
			}
			refused[br.ID]++
			if refused[br.ID] < 2 {
				continue
			}
			delete(refused, br.ID)
			ctx, cancel := context.WithTimeout(b.ctx, 5*time.Second)
			wrote, err := active.FenceBroker(ctx, br.ID, br.Epoch)
			cancel()
			b.logger.Info("fenced a broker whose listener refuses connections", "broker", br.ID, "epoch", br.Epoch, "fenced", wrote, "err", err)
		}
	}
}

// probeRefused reports whether a connection to addr is refused: nothing
// listens there.
func probeRefused(ctx context.Context, addr string, timeout time.Duration) bool {
	d := net.Dialer{Timeout: timeout}
	c, err := d.DialContext(ctx, "tcp", addr)
	if err == nil {
		c.Close()
		return false
	}
	return errors.Is(err, syscall.ECONNREFUSED)
}
