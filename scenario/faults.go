package scenario

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	"weir/client"
	"weir/internal/config"
	"weir/scenario/spec"
)

// runFaults applies the file's faults at their times, in order, until
// ctx ends. A fault counted from a phase waits for that phase to start.
// Failures go to errs (the run reports them) and do not stop the run.
func (r *runner) runFaults(ctx context.Context, faults []spec.Fault, errs chan<- error) {
	pending := slices.Clone(faults)
	tk := time.NewTicker(10 * time.Millisecond)
	defer tk.Stop()
	for len(pending) > 0 {
		select {
		case <-ctx.Done():
			return
		case <-tk.C:
		}
		now := time.Now()
		var left []spec.Fault
		for _, ft := range pending {
			r.mu.Lock()
			base, ok := r.start, true
			if ft.Phase != "" {
				base, ok = r.phaseStart[ft.Phase]
			}
			r.mu.Unlock()
			if !ok || now.Before(base.Add(ft.At.D())) {
				left = append(left, ft)
				continue
			}
			desc := describeFault(ft)
			r.event("fault", desc)
			fmt.Fprintf(r.out, "fault at %.1fs: %s\n", r.elapsed(), desc)
			fctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
			err := r.applyFault(fctx, ft)
			cancel()
			if err != nil {
				fmt.Fprintf(r.out, "fault %s failed: %v\n", desc, err)
				errs <- fmt.Errorf("fault %s: %w", desc, err)
			}
		}
		pending = left
	}
}

func describeFault(ft spec.Fault) string {
	switch ft.Action {
	case spec.FaultSlowBroker:
		return fmt.Sprintf("broker %d slow: produce +%d ms, fetch +%d ms per request, serially per connection", ft.Broker, ft.ProduceDelayMs, ft.FetchDelayMs)
	case spec.FaultBrokerConfig:
		return fmt.Sprintf("broker %d configs %v", ft.Broker, ft.Configs)
	case spec.FaultMoveLeaders:
		return "move every leader of " + ft.Topic
	case spec.FaultReassign:
		return fmt.Sprintf("reassign %s %v", ft.Topic, ft.Assignment)
	}
	return fmt.Sprintf("%s broker %d", ft.Action, ft.Broker)
}

func (r *runner) applyFault(ctx context.Context, ft spec.Fault) error {
	switch ft.Action {
	case spec.FaultSlowBroker:
		return r.brokerConfigs(ctx, ft.Broker, map[string]string{
			config.FaultProduceResponseMs: strconv.Itoa(ft.ProduceDelayMs),
			config.FaultFetchResponseMs:   strconv.Itoa(ft.FetchDelayMs),
		})
	case spec.FaultBrokerConfig:
		return r.brokerConfigs(ctx, ft.Broker, ft.Configs)
	case spec.FaultMoveLeaders:
		return r.moveLeaders(ctx, ft.Topic)
	case spec.FaultReassign:
		if err := r.adm.AlterPartitionReassignments(ctx, ft.Topic, ft.Assignment); err != nil {
			return err
		}
		return r.adm.ElectLeaders(ctx, client.ElectPreferred, ft.Topic, slices.Sorted(maps.Keys(ft.Assignment))...)
	default:
		return r.cluster.Act(ctx, ft.Action, ft.Broker)
	}
}

// brokerConfigs sets dynamic configs on one broker (-1: cluster-wide).
func (r *runner) brokerConfigs(ctx context.Context, broker int32, kv map[string]string) error {
	name := ""
	if broker >= 0 {
		name = strconv.Itoa(int(broker))
	}
	var ops []client.AlterConfigOp
	for _, k := range slices.Sorted(maps.Keys(kv)) {
		ops = append(ops, client.AlterConfigOp{Name: k, Value: ptr(kv[k])})
	}
	return r.adm.AlterConfigs(ctx, client.BrokerResource, name, ops...)
}

// moveLeaders moves every partition of topic to another leader, as
// bench/kip951 does: each replica list rotated by one (the same
// replicas, the next one preferred), then a preferred election.
// Partitions with one replica stay where they are.
func (r *runner) moveLeaders(ctx context.Context, topic string) error {
	ds, err := r.adm.DescribeTopics(ctx, topic)
	if err != nil {
		return err
	}
	if len(ds) != 1 {
		return fmt.Errorf("topic %s not described", topic)
	}
	moves := map[int32][]int32{}
	for _, p := range ds[0].Partitions {
		if len(p.Replicas) < 2 {
			continue
		}
		i := slices.Index(p.Replicas, p.Leader)
		rot := append(slices.Clone(p.Replicas[i+1:]), p.Replicas[:i+1]...)
		moves[p.Partition] = rot
	}
	if len(moves) == 0 {
		return fmt.Errorf("topic %s: no partition has a second replica to move to", topic)
	}
	if err := r.adm.AlterPartitionReassignments(ctx, topic, moves); err != nil {
		return err
	}
	return r.adm.ElectLeaders(ctx, client.ElectPreferred, topic, slices.Sorted(maps.Keys(moves))...)
}
