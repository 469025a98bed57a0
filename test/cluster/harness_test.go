package cluster

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"weir/internal/localcluster"
	"weir/internal/testport"
)

var weirBin string

func TestMain(m *testing.M) { os.Exit(run(m)) }

// run builds the weir binary the clusters run into a temporary directory,
// runs the tests and removes the directory.
func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "weir-cluster-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	weirBin = filepath.Join(dir, "weir")
	if out, err := exec.Command("go", "build", "-o", weirBin, "weir/cmd/weir").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building weir: %v\n%s", err, out)
		return 1
	}
	return m.Run()
}

// testCluster is a cluster of weir serve processes owned by one test.
type testCluster struct {
	*localcluster.Cluster
	t *testing.T
}

// startCluster starts nodes weir processes on free ports and kills them
// when the test ends, keeping their logs (and printing their tails) if
// it failed. prepare, if given, runs on the cluster's directory before
// the nodes start (to mount a file system on a node's directory, say).
func startCluster(t *testing.T, ctx context.Context, nodes int, prepare ...func(dir string, spec *localcluster.Spec)) *testCluster {
	t.Helper()
	var lastErr error
	for range 4 { // a free port can be taken between the check and the bind
		spec := localcluster.Spec{Nodes: nodes, BasePort: freeBasePort(t, 2*nodes), Binary: weirBin,
			Args: []string{"--shutdown-timeout", "5s"}}
		dir := t.TempDir()
		for _, p := range prepare {
			p(dir, &spec)
		}
		c, err := localcluster.Up(ctx, dir, spec, 30*time.Second)
		if err != nil {
			lastErr = err
			t.Logf("cluster on ports from %d did not start, retrying: %v", spec.BasePort, err)
			continue
		}
		tc := &testCluster{Cluster: c, t: t}
		t.Cleanup(func() {
			// SIGKILL, not StopAll's controlled shutdowns: the last two
			// voters of a stopping cluster each wait out their
			// --shutdown-timeout, which would double a test's time.
			for _, n := range localcluster.Running(c.Dir, c.Spec) {
				if err := localcluster.Kill(c.Dir, n); err != nil {
					t.Errorf("killing node %d at the end: %v", n, err)
				}
			}
			c.StopAll(15 * time.Second) // reaps the processes
			if t.Failed() {
				tc.keepLogs()
			}
		})
		t.Logf("cluster of %d nodes on %s in %s", nodes, spec.Bootstrap(), dir)
		return tc
	}
	t.Fatalf("no cluster: %v", lastErr)
	return nil
}

// freeBasePort finds n consecutive loopback ports free right now, below
// the kernel's ephemeral range (32768 and up on Linux), so an outgoing
// connection cannot take a port a restarted node needs.
func freeBasePort(t *testing.T, n int) int { return testport.Run(t, n) }

// keepLogs copies every node's log out of the test's temporary directory
// and prints the end of each.
func (c *testCluster) keepLogs() {
	keep, err := os.MkdirTemp("", "weir-cluster-logs")
	if err != nil {
		c.t.Logf("keeping logs: %v", err)
		return
	}
	for n := 1; n <= c.Spec.Nodes; n++ {
		src := filepath.Join(localcluster.NodeDir(c.Dir, n), "weir.log")
		dst := filepath.Join(keep, "node-"+strconv.Itoa(n)+".log")
		if err := copyFile(dst, src); err != nil {
			c.t.Logf("keeping %s: %v", src, err)
			continue
		}
		c.t.Logf("node %d log kept in %s; its last lines:\n%s", n, dst, tail(dst, 40))
	}
}

func copyFile(dst, src string) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	return os.WriteFile(dst, b, 0o644)
}

func tail(path string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return err.Error()
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if len(lines) > n {
			lines = lines[1:]
		}
	}
	return strings.Join(lines, "\n")
}

// addr is node n's Kafka listener.
func (c *testCluster) addr(n int) string { return c.Spec.KafkaAddr(n) }

// live lists the nodes whose process runs.
func (c *testCluster) live() []int { return localcluster.Running(c.Dir, c.Spec) }

// bootstrap lists the Kafka listeners of the given nodes.
func (c *testCluster) bootstrap(nodes []int) []string {
	var out []string
	for _, n := range nodes {
		out = append(out, c.addr(n))
	}
	return out
}

// kill SIGKILLs node n.
func (c *testCluster) kill(n int) {
	c.t.Helper()
	if err := localcluster.Kill(c.Dir, n); err != nil {
		c.t.Fatalf("kill node %d: %v", n, err)
	}
}

// stop stops node n with a controlled shutdown.
func (c *testCluster) stop(n int) {
	c.t.Helper()
	if err := localcluster.Stop(c.Dir, n, 30*time.Second); err != nil {
		c.t.Fatalf("stop node %d: %v", n, err)
	}
}

// start starts node n again on its data.
func (c *testCluster) start(ctx context.Context, n int) {
	c.t.Helper()
	if err := c.StartNode(ctx, n, 30*time.Second); err != nil {
		c.t.Fatalf("start node %d: %v", n, err)
	}
}

// activations returns the "controller active" lines of node n's log:
// when it became the active controller.
func (c *testCluster) activations(n int) []string {
	f, err := os.Open(filepath.Join(localcluster.NodeDir(c.Dir, n), "weir.log"))
	if err != nil {
		c.t.Logf("reading node %d's log: %v", n, err)
		return nil
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if strings.Contains(sc.Text(), "controller active") {
			out = append(out, sc.Text())
		}
	}
	return out
}

// eventually calls check every 100 ms until it returns nil, failing the
// test with its last error once timeout has passed. It returns how long
// the wait took.
func eventually(t *testing.T, ctx context.Context, timeout time.Duration, what string, check func(context.Context) error) time.Duration {
	t.Helper()
	start := time.Now()
	deadline := start.Add(timeout)
	for {
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err := check(cctx)
		cancel()
		if err == nil {
			return time.Since(start)
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			t.Fatalf("%s: not true after %v: %v", what, timeout, err)
		}
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func testContext(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// without returns nodes less n.
func without(nodes []int, n int) []int {
	return slices.DeleteFunc(slices.Clone(nodes), func(m int) bool { return m == n })
}
