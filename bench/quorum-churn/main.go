// Command quorum-churn counts how often the metadata quorum of a
// three-process weir cluster changes controller while the cluster is
// loaded: idle RF 3 partitions (whose replica fetchers keep the brokers
// busy), acks=all producers on an RF 3 topic and goroutines
// that keep every core busy, as a shared 2-core machine is. It reads the
// nodes' logs for the controllers that became active, the raft elections
// started and the leaders that stepped down, and asks every node's
// Metadata for the controller id every 250 ms, counting the changes a
// client sees. At the end, still under load, it SIGKILLs the node running
// the controller and times the failover until a survivor accepts a
// CreateTopics. bench/quorum-churn/run drives it (before and after a
// change, one binary each); README.md there has the figures.
//
// # What it owns
//
// One cluster directory under --dir (removed afterwards unless --keep),
// the cluster's processes (SIGKILLed at the end, also on an interrupt),
// the load, and the count. Every line of output is a comment (#) or a
// measurement: M <metric> <value> <unit>.
//
// # Concurrency
//
// The producers, the burners and the Metadata poller are goroutines
// joined before the counts are printed.
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/localcluster"
)

type options struct {
	weir       string
	dir        string
	basePort   int
	duration   time.Duration
	producers  int
	recordSize int
	burners    int
	keep       bool
	serveArgs  string
	partitions int
}

func main() {
	var o options
	flag.StringVar(&o.weir, "weir", "", "the weir binary (required)")
	flag.StringVar(&o.dir, "dir", "", "directory for the cluster's data (required)")
	flag.IntVar(&o.basePort, "base-port", 27740, "first Kafka port; the cluster uses six consecutive ports")
	flag.DurationVar(&o.duration, "duration", 2*time.Minute, "how long the load runs")
	flag.IntVar(&o.producers, "producers", 4, "acks=all producers (each its own client)")
	flag.IntVar(&o.recordSize, "record-size", 1024, "bytes per record")
	flag.IntVar(&o.burners, "burners", 2, "goroutines spinning on the CPU for the whole run")
	flag.BoolVar(&o.keep, "keep", false, "keep the cluster's directory")
	flag.StringVar(&o.serveArgs, "serve-args", "", "extra weir serve flags for every node, space separated")
	flag.IntVar(&o.partitions, "partitions", 30000, "idle RF 3 partitions created before the load (topics of 50), which keep the brokers' replica fetchers busy")
	flag.Parse()
	if o.weir == "" || o.dir == "" {
		fmt.Fprintln(os.Stderr, "--weir and --dir are required")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o); err != nil {
		fmt.Fprintln(os.Stderr, "quorum-churn:", err)
		os.Exit(1)
	}
}

func m(metric string, v any, unit string) { fmt.Printf("M %s %v %s\n", metric, v, unit) }

func run(ctx context.Context, o options) error {
	dir := filepath.Join(o.dir, "quorum-churn")
	os.RemoveAll(dir)
	args := []string{"--shutdown-timeout", "5s", "--log-level", "info"}
	args = append(args, strings.Fields(o.serveArgs)...)
	spec := localcluster.Spec{Nodes: 3, BasePort: o.basePort, Binary: o.weir, Args: args}
	fmt.Printf("# %s: 3 nodes, %v of load, %d acks=all producers of %d B records, %d burners, serve args %q\n",
		time.Now().UTC().Format(time.RFC3339), o.duration, o.producers, o.recordSize, o.burners, o.serveArgs)
	c, err := localcluster.Up(ctx, dir, spec, 2*time.Minute)
	if err != nil {
		return err
	}
	defer func() {
		for n := 1; n <= 3; n++ {
			localcluster.Kill(dir, n)
		}
		c.StopAll(10 * time.Second)
		if !o.keep {
			os.RemoveAll(dir)
		}
	}()
	seeds := strings.Split(spec.Bootstrap(), ",")
	admin, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.RequestRetries(20))
	if err != nil {
		return err
	}
	defer admin.Close()
	if err := createTopic(ctx, admin, "churn", 6, 3); err != nil {
		return err
	}
	start := time.Now()
	for i := 0; i*50 < o.partitions; i++ {
		if err := createTopic(ctx, admin, fmt.Sprintf("idle-%05d", i), int32(min(50, o.partitions-i*50)), 3); err != nil {
			return fmt.Errorf("creating the idle partitions: %w", err)
		}
	}
	m("idle_partitions", o.partitions, "")
	m("idle_partitions_created_in", time.Since(start).Milliseconds(), "ms")
	marks := logSizes(dir)

	lctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	var acked, failed atomic.Int64
	for range o.producers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			produce(lctx, seeds, o.recordSize, &acked, &failed)
		}()
	}
	for range o.burners {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for x := 0; lctx.Err() == nil; x++ {
				if x%1_000_000 == 0 {
					x = 0
				}
			}
		}()
	}
	wctx, wcancel := context.WithTimeout(lctx, o.duration)
	seen := pollControllers(wctx, admin)
	wcancel()
	churned := countLines(dir, marks, `msg="controller active"`)
	// Still under load: the node running the controller is killed, and a
	// survivor is asked for a change until one is accepted.
	failover, killed, err := killController(ctx, dir, spec, admin)
	cancel()
	wg.Wait()
	if err != nil {
		return err
	}

	m("records_acked", acked.Load(), "")
	m("records_failed", failed.Load(), "")
	m("controller_changes_seen", seen, "")
	m("controller_active", churned, "")
	m("failover.killed_node", killed, "")
	m("failover.create_topics_accepted", failover.Milliseconds(), "ms")
	count := func(needle string) int { return countLines(dir, marks, needle) }
	m("raft_elections_at_once", count(`msg="starting a raft election at once"`), "")
	m("raft_elections_started", count("heartbeat timeout reached, starting election"), "")
	m("raft_leader_stepped_down", count("failed to contact quorum of nodes, stepping down"), "")
	m("raft_prevotes_refused", count("rejecting pre-vote request since we have a leader"), "")
	m("brokers_fenced", count(`msg="fenced a broker`), "")
	return nil
}

// killController SIGKILLs the node running the controller and returns
// how long it took until a survivor accepted a CreateTopics.
func killController(ctx context.Context, dir string, spec localcluster.Spec, admin *kgo.Client) (time.Duration, int32, error) {
	resp, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, admin)
	if err != nil {
		return 0, -1, err
	}
	ctl := resp.ControllerID
	survivor := ctl%3 + 1
	cl, err := kgo.NewClient(kgo.SeedBrokers(spec.KafkaAddr(int(survivor))), kgo.RequestRetries(0))
	if err != nil {
		return 0, ctl, err
	}
	defer cl.Close()
	if _, err := kmsg.NewPtrApiVersionsRequest().RequestWith(ctx, cl); err != nil {
		return 0, ctl, err
	}
	start := time.Now()
	if err := localcluster.Kill(dir, int(ctl)); err != nil {
		return 0, ctl, err
	}
	for i := 0; ; i++ {
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err := createTopic(rctx, cl.Broker(int(survivor)), fmt.Sprintf("after-failover-%d", i), 1, 2)
		cancel()
		if err == nil {
			return time.Since(start), ctl, nil
		}
		if time.Since(start) > 2*time.Minute {
			return 0, ctl, fmt.Errorf("no CreateTopics accepted after killing node %d: %w", ctl, err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func createTopic(ctx context.Context, cl kmsg.Requestor, name string, parts int32, rf int16) error {
	req := kmsg.NewPtrCreateTopicsRequest()
	t := kmsg.NewCreateTopicsRequestTopic()
	t.Topic, t.NumPartitions, t.ReplicationFactor = name, parts, rf
	req.Topics = append(req.Topics, t)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return err
	}
	if err := kerr.ErrorForCode(resp.Topics[0].ErrorCode); err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		if m := resp.Topics[0].ErrorMessage; m != nil {
			return fmt.Errorf("%w: %s", err, *m)
		}
		return err
	}
	return nil
}

// produce sends acks=all records until ctx ends, counting outcomes.
func produce(ctx context.Context, seeds []string, size int, acked, failed *atomic.Int64) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.DefaultProduceTopic("churn"),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.MaxBufferedRecords(2000))
	if err != nil {
		failed.Add(1)
		return
	}
	defer cl.Close()
	value := make([]byte, size)
	for ctx.Err() == nil {
		cl.Produce(ctx, &kgo.Record{Value: value}, func(_ *kgo.Record, err error) {
			if err == nil {
				acked.Add(1)
			} else if ctx.Err() == nil {
				failed.Add(1)
			}
		})
	}
	fctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl.Flush(fctx)
}

// pollControllers asks each node in turn for the controller id every
// 250 ms until ctx ends and counts the changes, ignoring answers that
// name none.
func pollControllers(ctx context.Context, cl *kgo.Client) int {
	changes, last := 0, int32(-1)
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for node := 1; ; node = node%3 + 1 {
		select {
		case <-ctx.Done():
			return changes
		case <-tick.C:
		}
		rctx, cancel := context.WithTimeout(ctx, time.Second)
		resp, err := cl.Broker(node).Request(rctx, kmsg.NewPtrMetadataRequest())
		cancel()
		if err != nil {
			continue
		}
		id := resp.(*kmsg.MetadataResponse).ControllerID
		if id < 0 {
			continue
		}
		if last >= 0 && id != last {
			changes++
			fmt.Printf("# %s controller %d -> %d (as node %d says)\n", time.Now().UTC().Format("15:04:05.000"), last, id, node)
		}
		last = id
	}
}

func logPath(dir string, n int) string {
	return filepath.Join(localcluster.NodeDir(dir, n), "weir.log")
}

func logSizes(dir string) [4]int64 {
	var marks [4]int64
	for n := 1; n <= 3; n++ {
		if st, err := os.Stat(logPath(dir, n)); err == nil {
			marks[n] = st.Size()
		}
	}
	return marks
}

// countLines counts the lines holding needle in the nodes' logs after
// their marks.
func countLines(dir string, marks [4]int64, needle string) int {
	total := 0
	for n := 1; n <= 3; n++ {
		f, err := os.Open(logPath(dir, n))
		if err != nil {
			continue
		}
		f.Seek(marks[n], 0)
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 64<<10), 4<<20)
		for sc.Scan() {
			if strings.Contains(sc.Text(), needle) {
				total++
			}
		}
		f.Close()
	}
	return total
}
