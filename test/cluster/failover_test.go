package cluster

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

const partitions = 6

// setUp starts three nodes and creates topic (6 partitions, replication
// factor 3), waiting until every broker reports the same leaders.
func setUp(t *testing.T, ctx context.Context, topic string) (*testCluster, []view) {
	t.Helper()
	c := startCluster(t, ctx, 3)
	all := c.live()
	if len(all) != 3 {
		t.Fatalf("running nodes %v, want 3", all)
	}
	eventually(t, ctx, 20*time.Second, "create "+topic, func(ctx context.Context) error {
		return c.createTopic(ctx, all, topic, partitions, 3)
	})
	var views []view
	eventually(t, ctx, 20*time.Second, "every broker reports the same leaders", func(ctx context.Context) (err error) {
		views, err = c.agreement(ctx, all, topic, partitions)
		return err
	})
	for p, r := range views[0].replicas {
		if !slices.Equal(r, []int32{1, 2, 3}) {
			t.Fatalf("%s/%d has replicas %v, want [1 2 3]", topic, p, r)
		}
	}
	t.Logf("controller %d; leaders %v", views[0].controller, leadersOf(views[0]))
	return c, views
}

// logUnconsumed reports acknowledged records the consumer never
// received although it read past them. Not an assertion: these tests
// check availability and convergence, and the durability of
// acknowledged records across leader changes is for tests of
// replication.
func logUnconsumed(t *testing.T, ld *load, mark int) {
	t.Helper()
	n, some := ld.unconsumedBefore(mark)
	t.Logf("acknowledged records produced before record %d that the consumer never received: %d %v", mark, n, some)
}

// TestControlledShutdownKeepsClientsGoing stops a node that leads
// partitions with a controlled shutdown while a producer (acks=all) and a
// group consumer run, then starts it again.
func TestControlledShutdownKeepsClientsGoing(t *testing.T) {
	ctx := testContext(t, 2*time.Minute)
	const topic = "controlled-shutdown"
	c, views := setUp(t, ctx, topic)
	all := c.live()

	ld := startLoad(t, ctx, c, topic, partitions, "controlled-shutdown-group")
	eventually(t, ctx, 20*time.Second, "records acknowledged and consumed on every partition", ld.flowingSince(0))

	// A node that leads partitions, the controller's node only if no other does.
	led := leadersOf(views[0])
	victim := 0
	for _, n := range all {
		if len(led[int32(n)]) > 0 && (victim == 0 || int32(victim) == views[0].controller) {
			victim = n
		}
	}
	if victim == 0 {
		t.Fatalf("no node leads a partition: %v", views[0].leaders)
	}
	t.Logf("stopping node %d, leader of partitions %v", victim, led[int32(victim)])
	start := time.Now()
	c.stop(victim)
	t.Logf("node %d stopped after %v", victim, time.Since(start))
	live := without(all, victim)

	var after []view
	eventually(t, ctx, 5*time.Second, "the live brokers agree on leaders none of which is the stopped node", func(ctx context.Context) (err error) {
		after, err = c.agreement(ctx, live, topic, partitions)
		return err
	})
	t.Logf("%v after the stop was asked: leaders %v", time.Since(start), leadersOf(after[0]))
	for p, l := range views[0].leaders {
		if l != int32(victim) && after[0].leaders[p] != l {
			t.Errorf("partition %d moved from %d to %d although its leader kept running", p, l, after[0].leaders[p])
		}
	}

	mark := ld.mark()
	took := eventually(t, ctx, 20*time.Second, "records produced after the stop acknowledged and consumed on every partition", ld.flowingSince(mark))
	t.Logf("records produced after the stop acknowledged and consumed on every partition within %v", took)

	start = time.Now()
	c.start(ctx, victim)
	t.Logf("node %d answering again after %v", victim, time.Since(start))
	eventually(t, ctx, 20*time.Second, "all three brokers agree, the restarted one included", func(ctx context.Context) (err error) {
		after, err = c.agreement(ctx, all, topic, partitions)
		return err
	})
	t.Logf("%v after the restart: leaders %v", time.Since(start), leadersOf(after[0]))
	mark = ld.mark()
	eventually(t, ctx, 20*time.Second, "records produced after the restart acknowledged and consumed on every partition", ld.flowingSince(mark))
	logUnconsumed(t, ld, mark)

	if failed, first := ld.stop(ctx); failed > 0 {
		t.Errorf("%d records failed to produce across a controlled shutdown; first: %s", failed, strings.Join(first, "; "))
	}
}

// TestControllerKillFailover SIGKILLs the node running the active
// controller while a producer and a group consumer run: a surviving node
// takes over the controller, accepts a CreateTopics, moves the dead
// node's leaderships once its session lapses, and the killed node
// rejoins after a restart.
func TestControllerKillFailover(t *testing.T) {
	ctx := testContext(t, 2*time.Minute)
	const topic = "controller-kill"
	c, views := setUp(t, ctx, topic)
	all := c.live()
	ctrl := int(views[0].controller)
	eventually(t, ctx, 5*time.Second, "a \"controller active\" line in the controller's log", func(context.Context) error {
		if len(c.activations(ctrl)) == 0 {
			return fmt.Errorf("brokers name node %d the controller but its log has no such line", ctrl)
		}
		return nil
	})
	activated := map[int]int{}
	for _, n := range all {
		activated[n] = len(c.activations(n))
	}

	ld := startLoad(t, ctx, c, topic, partitions, "controller-kill-group")
	eventually(t, ctx, 20*time.Second, "records acknowledged and consumed on every partition", ld.flowingSince(0))

	t.Logf("killing node %d (controller; leader of partitions %v)", ctrl, leadersOf(views[0])[int32(ctrl)])
	killed := time.Now()
	c.kill(ctrl)
	live := without(all, ctrl)

	var newCtrl int32
	toController := eventually(t, ctx, 15*time.Second, "the live brokers name the same new controller", func(ctx context.Context) error {
		var seen []int32
		for _, n := range live {
			v, err := c.viewOf(ctx, n, topic)
			if err != nil {
				return err
			}
			seen = append(seen, v.controller)
		}
		if seen[0] == int32(ctrl) || !slices.Contains(live, int(seen[0])) || slices.ContainsFunc(seen, func(id int32) bool { return id != seen[0] }) {
			return fmt.Errorf("nodes %v name controllers %v", live, seen)
		}
		newCtrl = seen[0]
		return nil
	})
	t.Logf("new controller %d, named by every live broker %v after the kill", newCtrl, toController)
	// DescribeCluster names the raft leader, which logs "controller active"
	// once its controller has started on the committed image.
	var lines []string
	eventually(t, ctx, 5*time.Second, "a new \"controller active\" line in the new controller's log", func(context.Context) error {
		if lines = c.activations(int(newCtrl)); len(lines) <= activated[int(newCtrl)] {
			return fmt.Errorf("node %d has %d such lines, as before the kill", newCtrl, len(lines))
		}
		return nil
	})
	t.Logf("node %d: %s", newCtrl, lines[len(lines)-1])

	const second = "created-after-failover"
	eventually(t, ctx, 20*time.Second, "CreateTopics after the failover", func(ctx context.Context) error {
		return c.createTopic(ctx, live, second, 3, 3)
	})
	toCreate := time.Since(killed)
	t.Logf("CreateTopics succeeded %v after the kill", toCreate)

	var after []view
	eventually(t, ctx, 20*time.Second, "the killed node fenced and its leaderships moved to live replicas, on every live broker", func(ctx context.Context) (err error) {
		after, err = c.agreement(ctx, live, topic, partitions)
		return err
	})
	toMoved := time.Since(killed)
	t.Logf("leaderships moved %v after the kill: leaders %v", toMoved, leadersOf(after[0]))
	t.Logf("timings after SIGKILL of the controller: new controller %v, CreateTopics %v, leaderships moved %v",
		toController, toCreate, toMoved)

	mark := ld.mark()
	took := eventually(t, ctx, 20*time.Second, "records produced after the failover acknowledged and consumed on every partition", ld.flowingSince(mark))
	t.Logf("records produced after the failover acknowledged and consumed on every partition within %v", took)

	start := time.Now()
	c.start(ctx, ctrl)
	t.Logf("node %d answering again after %v", ctrl, time.Since(start))
	eventually(t, ctx, 20*time.Second, "all three brokers agree, the restarted one included", func(ctx context.Context) error {
		if _, err := c.agreement(ctx, all, topic, partitions); err != nil {
			return err
		}
		_, err := c.agreement(ctx, all, second, 3)
		return err
	})
	t.Logf("metadata converged on all three %v after the restart", time.Since(start))
	mark = ld.mark()
	eventually(t, ctx, 20*time.Second, "records produced after the restart acknowledged and consumed on every partition", ld.flowingSince(mark))
	logUnconsumed(t, ld, mark)
	if failed, first := ld.stop(ctx); failed > 0 {
		t.Errorf("%d records failed to produce across the controller's failover; first: %s", failed, strings.Join(first, "; "))
	}
}
