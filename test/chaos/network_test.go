package chaos

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestNetworkFaultLoop is the loss test under network faults: every node
// in its own network namespace (netLab), and each round cuts one node
// off from the others (both ways, or only what it receives), loses a
// share of its packets with them, or delays every byte it exchanges with
// them, for 4 to 7 s, the fault kinds in turn; the victim is the leader
// of a random partition or the controller. The clients, in the root
// namespace, reach every node throughout, so a leader cut off from its
// followers keeps being sent acks=all writes: none of them may be
// acknowledged and then lost (the check), whatever it does. After each
// heal every partition must have a leader and its full ISR again, and
// every node must name the same controller, within a minute. Short form
// 4 rounds (one of each kind), long form (WEIR_CHAOS_LONG=1) 24, or
// WEIR_CHAOS_NET_ROUNDS. Needs root (network namespaces) and nftables;
// skipped, saying so, without them.
func TestNetworkFaultLoop(t *testing.T) {
	if testing.Short() {
		t.Skip("real processes in network namespaces; not in -short")
	}
	s := loadSettings(t)
	lab := newNetLab(t, nodes)
	ctx := testContext(t, time.Duration(s.netRounds)*75*time.Second+5*time.Minute)
	r := newRun(t, ctx, map[string]string{"replica.lag.time.max.ms": "3000"}, s.seed, lab, nil)
	stop := r.clients(ctx)
	round := 0
	counts := map[string]int{}
	r.loop(ctx, s.netRounds, func(ctx context.Context, f *fault) error {
		kind := netFaults[round%len(netFaults)]
		round++
		hold := 4*time.Second + time.Duration(r.rng.IntN(3000))*time.Millisecond
		pct, delay := 20+r.rng.IntN(40), time.Duration(100+r.rng.IntN(400))*time.Millisecond
		f.at = time.Now()
		if err := lab.inject(f.node, kind, pct, delay); err != nil {
			return err
		}
		sleep(ctx, hold)
		if err := lab.heal(f.node, kind); err != nil {
			return err
		}
		healed, err := r.c.recover(ctx, 60*time.Second)
		if err != nil {
			return err
		}
		agreed, err := poll(ctx, 60*time.Second, r.c.controllerAgreed)
		if err != nil {
			return fmt.Errorf("controller after the heal: %w", err)
		}
		counts[kind]++
		what := kind
		switch kind {
		case faultDrops:
			what = fmt.Sprintf("%s %d%%", kind, pct)
		case faultDelay:
			what = fmt.Sprintf("%s %v each way", kind, delay)
		}
		f.note = fmt.Sprintf("%s for %v; full ISR %v after the heal, one controller %v after", what, hold.Round(time.Millisecond), healed.Round(time.Millisecond), agreed.Round(time.Millisecond))
		return nil
	})
	r.finish(ctx, "network", stop, time.Now())
	var each []string
	for _, k := range netFaults {
		each = append(each, k+"="+strconv.Itoa(counts[k]))
	}
	t.Logf("chaos network: rounds by fault: %s", strings.Join(each, " "))
}

// controllerAgreed is nil when every node names the same controller, one
// of the nodes.
func (c *chaosCluster) controllerAgreed(ctx context.Context) error {
	var named []int32
	for n := 1; n <= nodes; n++ {
		req := kmsg.NewPtrDescribeClusterRequest()
		resp, err := req.RequestWith(ctx, c.cl.Broker(n))
		if err != nil {
			return fmt.Errorf("node %d: %w", n, err)
		}
		if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
			return fmt.Errorf("node %d: %w", n, err)
		}
		named = append(named, resp.ControllerID)
	}
	for _, id := range named {
		if id != named[0] || id < 1 || id > nodes {
			return fmt.Errorf("nodes name controllers %v", named)
		}
	}
	return nil
}
