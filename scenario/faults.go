package scenario

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"weir/client"
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
			fctx, cancel := context.WithTimeout(ctx, max(3*time.Minute, stopTimeout(ft)+time.Minute))
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
	case spec.FaultFailover:
		return "failover: kill the controller's node"
	}
	if ft.Controller {
		return ft.Action + " the controller's node"
	}
	return fmt.Sprintf("%s broker %d", ft.Action, ft.Broker)
}

func (r *runner) applyFault(ctx context.Context, ft spec.Fault) error {
	if ft.Controller {
		n, err := r.controllerNode(ctx)
		if err != nil {
			return err
		}
		ft.Broker = n
		r.event("fault", fmt.Sprintf("the controller runs on node %d", n))
	}
	switch ft.Action {
	case spec.FaultFailover:
		return r.failover(ctx)
	case spec.FaultStop, spec.FaultRestart, spec.FaultStart:
		start := time.Now()
		err := r.cluster.Act(ctx, ft.Action, ft.Broker, stopTimeout(ft))
		if err == nil {
			r.event("fault", fmt.Sprintf("%s of broker %d took %.2f s", ft.Action, ft.Broker, time.Since(start).Seconds()))
		}
		return err
	case spec.FaultSlowBroker:
		return r.cluster.slow(ctx, ft.Broker, time.Duration(ft.ProduceDelayMs)*time.Millisecond, time.Duration(ft.FetchDelayMs)*time.Millisecond)
	case spec.FaultBrokerConfig:
		return r.brokerConfigs(ctx, ft.Broker, ft.Configs)
	case spec.FaultMoveLeaders:
		return r.moveLeaders(ctx, ft.Topic)
	case spec.FaultReassign:
		return r.reassign(ctx, ft.Topic, ft.Assignment)
	default:
		return r.cluster.Act(ctx, ft.Action, ft.Broker, stopTimeout(ft))
	}
}

// stopTimeout is how long a stop or restart gives the node to exit.
func stopTimeout(ft spec.Fault) time.Duration {
	if ft.Timeout > 0 {
		return ft.Timeout.D()
	}
	return spec.DefaultStopTimeout
}

// failover kills the node running the active controller and times how
// long until a new topic can be created through the other nodes, then
// starts the node again.
func (r *runner) failover(ctx context.Context) error {
	victim, err := r.controllerNode(ctx)
	if err != nil {
		return err
	}
	if err := r.cluster.Act(ctx, spec.FaultKill, victim, 0); err != nil {
		return err
	}
	killed := time.Now()
	r.event("fault", fmt.Sprintf("killed node %d, the controller's", victim))
	probe := fmt.Sprintf("%s-failover-%d", r.f.Name, killed.UnixNano())
	for {
		if err = createProbe(ctx, r.adm, probe); err == nil {
			break
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("no controller accepted a topic %v after the kill: %w", time.Since(killed), err)
		case <-time.After(5 * time.Millisecond):
		}
	}
	took := time.Since(killed)
	r.event("fault", fmt.Sprintf("failover: a topic was created %.3f s after node %d was killed", took.Seconds(), victim))
	fmt.Fprintf(r.out, "failover: a new controller created a topic %.3f s after the kill\n", took.Seconds())
	start := time.Now()
	if err := r.cluster.Act(ctx, spec.FaultStart, victim, 0); err != nil {
		return err
	}
	r.event("fault", fmt.Sprintf("node %d started again in %.2f s", victim, time.Since(start).Seconds()))
	return nil
}

// createProbe creates the one-partition topic name, giving the attempt 2
// s. The name is new to this probe, so TOPIC_ALREADY_EXISTS means an
// earlier attempt was accepted after its 2 s were up (Apache Kafka 4.3's
// new controller at 10,000 partitions created it 1.3 s after the kill and
// its broker answered later), and counts as created: retrying until
// success never ended.
func createProbe(ctx context.Context, adm *client.Admin, name string) error {
	pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	err := adm.CreateTopics(pctx, client.TopicSpec{Name: name, Partitions: 1, ReplicationFactor: 1})
	if errors.Is(err, kerr.TopicAlreadyExists) {
		return nil
	}
	return err
}

// controllerNode is the node running the active controller: the
// metadata quorum's leader by DescribeQuorum, on weir as on Apache Kafka
// (whose KRaft brokers put some live broker in DescribeCluster's
// controller field).
func (r *runner) controllerNode(ctx context.Context) (int32, error) {
	n, _, err := r.adm.MetadataQuorumLeader(ctx)
	if err != nil {
		return -1, fmt.Errorf("finding the controller: %w", err)
	}
	return n, nil
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
	return r.reassign(ctx, topic, moves)
}

// reassign gives partitions of topic new replica lists, waits until each
// has them with its preferred replica in sync (a new replica has to
// catch up first), and elects the preferred leaders.
func (r *runner) reassign(ctx context.Context, topic string, replicas map[int32][]int32) error {
	if err := r.adm.AlterPartitionReassignments(ctx, topic, replicas); err != nil {
		return err
	}
	for {
		ds, err := r.adm.DescribeTopics(ctx, topic)
		if err == nil && len(ds) == 1 && reassigned(ds[0].Partitions, replicas) {
			break
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the reassignment of %s did not complete: %w", topic, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
	return r.adm.ElectLeaders(ctx, client.ElectPreferred, topic, slices.Sorted(maps.Keys(replicas))...)
}

// reassigned reports whether every partition in want has exactly its
// replicas, the preferred one in sync.
func reassigned(parts []client.PartitionDescription, want map[int32][]int32) bool {
	for _, p := range parts {
		w, ok := want[p.Partition]
		if !ok {
			continue
		}
		if !slices.Equal(p.Replicas, w) || !slices.Contains(p.ISR, w[0]) {
			return false
		}
	}
	return true
}
