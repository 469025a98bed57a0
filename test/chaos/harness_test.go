package chaos

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/localcluster"
)

// weirBin is the weir binary every cluster of this package runs, built
// once by TestMain.
var weirBin string

func TestMain(m *testing.M) {
	tmp, err := os.MkdirTemp("", "weir-chaos-bin")
	if err != nil {
		fmt.Fprintln(os.Stderr, "chaos:", err)
		os.Exit(1)
	}
	weirBin = filepath.Join(tmp, "weir")
	build := exec.Command("go", "build", "-o", weirBin, "weir/cmd/weir")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	code := 1
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "chaos: building weir:", err)
	} else {
		code = m.Run()
	}
	os.RemoveAll(tmp)
	os.Exit(code)
}

const (
	topic      = "chaos"
	partitions = 6
	nodes      = 3
)

// chaosCluster is a three-node cluster of weir processes owned by one
// test, with an admin client on every node.
type chaosCluster struct {
	*localcluster.Cluster
	t   *testing.T
	sec *saslSSL // nil: PLAINTEXT
	cl  *kgo.Client
	adm *kadm.Client
}

// startCluster starts the cluster with the given broker properties and
// creates the topic (RF 3, min.insync.replicas 2). With sec, every
// node's listener (the inter-broker one too) is SASL_SSL, and the
// cluster must refuse plaintext clients. The cluster stops when the test
// ends; its logs are kept (WEIR_CHAOS_KEEP, or a temporary directory when
// the test failed), and its directory when the test failed and
// WEIR_CHAOS_KEEP_DATA names where.
func startCluster(t *testing.T, ctx context.Context, props map[string]string, lab *netLab, sec *saslSSL) *chaosCluster {
	t.Helper()
	dir := t.TempDir()
	args := []string{"--shutdown-timeout", "5s"}
	if level := os.Getenv("WEIR_CHAOS_LOG_LEVEL"); level != "" {
		args = append(args, "--log-level", level)
	}
	protocol := ""
	if sec != nil {
		if lab != nil {
			t.Fatal("the SASL_SSL cluster's certificate is for 127.0.0.1, not for nodes in network namespaces")
		}
		merged := maps.Clone(sec.props)
		maps.Copy(merged, props) // the test's own properties win
		props = merged
		args, protocol = append(args, sec.args...), "SASL_SSL"
	}
	if len(props) > 0 {
		args = append(args, "--config", writeProps(t, dir, props))
	}
	var c *localcluster.Cluster
	var lastErr error
	for range 4 { // a free port can be taken between the check and the bind
		spec := localcluster.Spec{Nodes: nodes, Binary: weirBin, Args: args, Protocol: protocol}
		if lab != nil {
			// Every node at its own address in its namespace, the same
			// ports everywhere.
			spec.BasePort, spec.Hosts, spec.Netns = 9092, lab.hosts(), lab.namespaces()
		} else {
			spec.BasePort = freeBasePort(t, 2*nodes)
		}
		cdir := filepath.Join(dir, "cluster-"+strconv.Itoa(spec.BasePort))
		var err error
		if c, err = localcluster.Up(ctx, cdir, spec, 30*time.Second); err == nil {
			break
		}
		lastErr = err
		t.Logf("cluster on ports from %d did not start, retrying: %v", spec.BasePort, err)
	}
	if c == nil {
		t.Fatalf("no cluster: %v", lastErr)
	}
	cc := &chaosCluster{Cluster: c, t: t, sec: sec}
	t.Cleanup(func() {
		for n := 1; n <= nodes; n++ {
			cc.signal(n, syscall.SIGCONT) // a stopped process would not stop
		}
		c.StopAll(15 * time.Second)
		if keep := os.Getenv("WEIR_CHAOS_KEEP"); keep != "" || t.Failed() {
			cc.keepLogs(keep)
		}
		if keep := os.Getenv("WEIR_CHAOS_KEEP_DATA"); keep != "" && t.Failed() {
			dst := filepath.Join(keep, filepath.Base(c.Dir))
			if err := os.CopyFS(dst, os.DirFS(c.Dir)); err != nil {
				t.Logf("keeping the cluster directory: %v", err)
			} else {
				t.Logf("cluster directory kept in %s", dst)
			}
		}
	})
	cl, err := kgo.NewClient(cc.clientOpts(kgo.RetryTimeout(5 * time.Second))...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	cc.cl, cc.adm = cl, kadm.NewClient(cl)
	t.Logf("cluster of %d nodes on %s in %s, listeners %s, broker properties %v", nodes, c.Spec.Bootstrap(), c.Dir, cmp.Or(protocol, "PLAINTEXT"), props)

	eventually(t, ctx, 30*time.Second, "topic created", func(ctx context.Context) error {
		mis := "2"
		r, err := cc.adm.CreateTopic(ctx, partitions, nodes, map[string]*string{"min.insync.replicas": &mis}, topic)
		if err == nil && r.Err != nil && !strings.Contains(r.Err.Error(), "TOPIC_ALREADY_EXISTS") {
			err = r.Err
		}
		return err
	})
	cc.waitHealthy(ctx, 60*time.Second)
	if sec != nil {
		cc.refusesPlaintext(ctx)
	}
	return cc
}

func (c *chaosCluster) bootstrap() []string { return strings.Split(c.Spec.Bootstrap(), ",") }

// clientOpts are how a franz-go client reaches the cluster (its seeds
// and, on a SASL_SSL cluster, TLS and SCRAM), then extra.
func (c *chaosCluster) clientOpts(extra ...kgo.Opt) []kgo.Opt {
	opts := []kgo.Opt{kgo.SeedBrokers(c.bootstrap()...)}
	if c.sec != nil {
		opts = append(opts, c.sec.clientOpts()...)
	}
	return append(opts, extra...)
}

// javaProps is the Java client's properties file for this cluster ("" on
// a PLAINTEXT one).
func (c *chaosCluster) javaProps() string {
	if c.sec == nil {
		return ""
	}
	return c.sec.javaProps
}

// layout is a partition's leader and in-sync replicas.
type layout struct {
	leader int32
	isr    []int32
}

// layouts reads every partition's leader and ISR from the cluster, as
// the broker the client picks answers now. Not kadm's Metadata: that one
// answers from the client's metadata cache, which keeps a topic for
// MetadataMinAge (5 s by default), so a check polled from the moment a
// node resumes would read, for 5 s, the ISR its first request saw.
func (c *chaosCluster) layouts(ctx context.Context) ([]layout, error) {
	return topicLayouts(ctx, c.cl, topic)
}

// layoutsFrom asks node n (and no other) for every partition's leader
// and ISR.
func (c *chaosCluster) layoutsFrom(ctx context.Context, n int) ([]layout, error) {
	ls, err := topicLayouts(ctx, c.cl.Broker(n), topic)
	if err != nil {
		return nil, fmt.Errorf("node %d: %w", n, err)
	}
	return ls, nil
}

// topicLayouts sends r a Metadata request for topic name, one of the
// test's topics of `partitions` partitions (a kgo client sends it to a
// broker of its choosing and reads no cache for it), and returns the
// leader and ISR of each of its partitions.
func topicLayouts(ctx context.Context, r kmsg.Requestor, name string) ([]layout, error) {
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(name)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, r)
	if err != nil {
		return nil, err
	}
	if len(resp.Topics) != 1 {
		return nil, fmt.Errorf("metadata of %d topics, want %s", len(resp.Topics), name)
	}
	if err := kerr.ErrorForCode(resp.Topics[0].ErrorCode); err != nil {
		return nil, fmt.Errorf("topic %s: %w", name, err)
	}
	out := make([]layout, partitions)
	seen := make([]bool, partitions)
	for _, p := range resp.Topics[0].Partitions {
		if p.Partition >= 0 && p.Partition < partitions {
			out[p.Partition] = layout{leader: p.Leader, isr: p.ISR}
			seen[p.Partition] = true
		}
	}
	if i := slices.Index(seen, false); i >= 0 {
		return nil, fmt.Errorf("partition %d missing from the metadata of %s", i, name)
	}
	return out, nil
}

// healthy is nil when every partition has a leader and all replicas in
// sync.
func (c *chaosCluster) healthy(ctx context.Context) error {
	ls, err := c.layouts(ctx)
	if err != nil {
		return err
	}
	for p, l := range ls {
		if l.leader < 0 || len(l.isr) != nodes {
			return fmt.Errorf("partition %d: leader %d, ISR %v", p, l.leader, l.isr)
		}
	}
	return nil
}

func (c *chaosCluster) waitHealthy(ctx context.Context, timeout time.Duration) time.Duration {
	return eventually(c.t, ctx, timeout, "every partition led with its full ISR", c.healthy)
}

// recover waits until the cluster is healthy again and says how long
// that took.
func (c *chaosCluster) recover(ctx context.Context, timeout time.Duration) (time.Duration, error) {
	d, err := poll(ctx, timeout, c.healthy)
	if err != nil {
		err = fmt.Errorf("every partition led with its full ISR: %w", err)
	}
	return d, err
}

// controller is the node that logged "controller active" last.
func (c *chaosCluster) controller() int {
	best, bestAt := 0, ""
	for n := 1; n <= nodes; n++ {
		f, err := os.Open(filepath.Join(localcluster.NodeDir(c.Dir, n), "weir.log"))
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			if !strings.Contains(line, `msg="controller active"`) || !strings.HasPrefix(line, "time=") {
				continue
			}
			at, _, _ := strings.Cut(strings.TrimPrefix(line, "time="), " ")
			if at > bestAt { // RFC 3339 in UTC with a fixed width sorts as text
				best, bestAt = n, at
			}
		}
		f.Close()
	}
	return best
}

// pid is node n's process id.
func (c *chaosCluster) pid(n int) (int, error) {
	b, err := os.ReadFile(filepath.Join(localcluster.NodeDir(c.Dir, n), "pid"))
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(strings.TrimSpace(string(b)))
}

func (c *chaosCluster) signal(n int, sig syscall.Signal) error {
	pid, err := c.pid(n)
	if err != nil {
		return err
	}
	if err := syscall.Kill(pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("signal %v to node %d (pid %d): %w", sig, n, pid, err)
	}
	return nil
}

// keepLogs copies every node's log and the Java producer's to dir (a new
// temporary directory if empty) and prints the end of each node's.
func (c *chaosCluster) keepLogs(dir string) {
	if dir == "" {
		var err error
		if dir, err = os.MkdirTemp("", "weir-chaos-logs"); err != nil {
			c.t.Logf("keeping logs: %v", err)
			return
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		c.t.Logf("keeping logs: %v", err)
		return
	}
	for n := 1; n <= nodes; n++ {
		b, err := os.ReadFile(filepath.Join(localcluster.NodeDir(c.Dir, n), "weir.log"))
		dst := filepath.Join(dir, c.t.Name()+"-node-"+strconv.Itoa(n)+".log")
		if err == nil {
			err = os.WriteFile(dst, b, 0o644)
		}
		if err != nil {
			c.t.Logf("keeping node %d's log: %v", n, err)
			continue
		}
		c.t.Logf("node %d log kept in %s", n, dst)
		if c.t.Failed() {
			c.t.Logf("node %d's log ends with:\n%s", n, b[max(0, len(b)-4096):])
		}
	}
	if b, err := os.ReadFile(filepath.Join(c.Dir, "java0.log")); err == nil {
		dst := filepath.Join(dir, c.t.Name()+"-java0.log")
		if err := os.WriteFile(dst, b, 0o644); err != nil {
			c.t.Logf("keeping the Java producer's log: %v", err)
		} else {
			c.t.Logf("the Java producer's log kept in %s", dst)
		}
	}
}

// freeBasePort finds n consecutive loopback ports free right now, below
// the ephemeral range (32768-60999 on Linux): a node restarted after a
// SIGKILL must find its ports unused by some client's outgoing socket.
func freeBasePort(t *testing.T, n int) int {
	t.Helper()
	free := func(base int) bool {
		var held []net.Listener
		defer func() {
			for _, ln := range held {
				ln.Close()
			}
		}()
		for p := base; p < base+n; p++ {
			ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
			if err != nil {
				return false
			}
			held = append(held, ln)
		}
		return true
	}
	for range 100 {
		if base := 20000 + rand.IntN(12000); free(base) {
			return base
		}
	}
	t.Fatalf("no %d consecutive free ports", n)
	return 0
}

// eventually calls check every 100 ms until it returns nil, failing the
// test with its last error once timeout has passed. It returns how long
// the wait took.
func eventually(t *testing.T, ctx context.Context, timeout time.Duration, what string, check func(context.Context) error) time.Duration {
	t.Helper()
	d, err := poll(ctx, timeout, check)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return d
}

// poll calls check every 100 ms until it returns nil and says how long
// that took, or returns check's last error once timeout has passed.
func poll(ctx context.Context, timeout time.Duration, check func(context.Context) error) (time.Duration, error) {
	start := time.Now()
	deadline := start.Add(timeout)
	for {
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err := check(cctx)
		cancel()
		if err == nil {
			return time.Since(start), nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return time.Since(start), fmt.Errorf("not true after %v: %w", timeout, err)
		}
		sleep(ctx, 100*time.Millisecond)
	}
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) {
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-ctx.Done():
	case <-tm.C:
	}
}
