package localcluster

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Spec is how to run a cluster; it is stored in the directory.
type Spec struct {
	Nodes    int    `json:"nodes"`
	BasePort int    `json:"base_port"`
	Host     string `json:"host"`
	Binary   string `json:"binary"`
	// Args are extra flags for every node's `weir serve`.
	Args []string `json:"args,omitempty"`
	// MetricsBasePort, if set, is node 1's metrics port; node N serves
	// /metrics on MetricsBasePort+N-1.
	MetricsBasePort int `json:"metrics_base_port,omitempty"`
	// PprofBasePort, if set, is node 1's profiling port; node N serves
	// net/http/pprof on PprofBasePort+N-1 (profiling only).
	PprofBasePort int `json:"pprof_base_port,omitempty"`
	// Console, if set, is where node 1 serves the web console, reading
	// every node's metrics (MetricsBasePort) for its rates.
	Console string `json:"console,omitempty"`
	// Hosts, if set, gives each node its own address (node N:
	// Hosts[N-1]); every node then uses the same ports, BasePort for
	// Kafka and BasePort+1 for raft.
	Hosts []string `json:"hosts,omitempty"`
	// Netns, if set, runs each node in a network namespace (node N in
	// Netns[N-1], through `ip netns exec`), which holds its address:
	// tests cut nodes off from each other there.
	Netns []string `json:"netns,omitempty"`
	// NodeArgs, if set, are extra flags for one node each (node N:
	// NodeArgs[N-1]), after Args.
	NodeArgs [][]string `json:"node_args,omitempty"`
	// Protocol, if set, is the security protocol of every node's one
	// listener (PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL; empty is
	// PLAINTEXT), which is also the inter-broker listener: other brokers,
	// forwarded requests and the registration with the controller reach a
	// node through it. Its TLS and SASL settings are the nodes' (a
	// --config file in Args). The raft transport is not a Kafka listener
	// and stays plain TCP.
	Protocol string `json:"protocol,omitempty"`
}

// Protocols are the security protocols a Spec's Protocol may name.
var Protocols = []string{"PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"}

// MaxNodes bounds a local cluster.
const MaxNodes = 32

const specFile = "cluster.json"

// Validate checks a spec.
func (s Spec) Validate() error {
	switch {
	case s.Nodes < 1 || s.Nodes > MaxNodes:
		return fmt.Errorf("localcluster: --nodes must be between 1 and %d, got %d", MaxNodes, s.Nodes)
	case s.BasePort < 1 || s.BasePort+2*s.Nodes-1 > 65535:
		return fmt.Errorf("localcluster: ports %d..%d are not all valid", s.BasePort, s.BasePort+2*s.Nodes-1)
	case s.Binary == "":
		return errors.New("localcluster: no weir binary")
	case s.MetricsBasePort < 0 || s.MetricsBasePort > 0 && s.MetricsBasePort+s.Nodes-1 > 65535:
		return fmt.Errorf("localcluster: metrics ports %d..%d are not all valid", s.MetricsBasePort, s.MetricsBasePort+s.Nodes-1)
	case s.PprofBasePort < 0 || s.PprofBasePort > 0 && s.PprofBasePort+s.Nodes-1 > 65535:
		return fmt.Errorf("localcluster: pprof ports %d..%d are not all valid", s.PprofBasePort, s.PprofBasePort+s.Nodes-1)
	case len(s.Hosts) != 0 && len(s.Hosts) != s.Nodes:
		return fmt.Errorf("localcluster: %d hosts for %d nodes", len(s.Hosts), s.Nodes)
	case len(s.Netns) != 0 && len(s.Netns) != s.Nodes:
		return fmt.Errorf("localcluster: %d network namespaces for %d nodes", len(s.Netns), s.Nodes)
	case len(s.NodeArgs) != 0 && len(s.NodeArgs) != s.Nodes:
		return fmt.Errorf("localcluster: flags for %d nodes, %d nodes", len(s.NodeArgs), s.Nodes)
	case len(s.Netns) != 0 && len(s.Hosts) == 0:
		return errors.New("localcluster: nodes in network namespaces need their own hosts")
	case s.Protocol != "" && !slices.Contains(Protocols, s.Protocol):
		return fmt.Errorf("localcluster: security protocol %q: want one of %s", s.Protocol, strings.Join(Protocols, ", "))
	}
	if s.Console != "" {
		if _, _, err := net.SplitHostPort(s.Console); err != nil {
			return fmt.Errorf("localcluster: console address %q: %v", s.Console, err)
		}
	}
	return nil
}

// MetricsAddr is node n's metrics listener ("" without MetricsBasePort).
func (s Spec) MetricsAddr(n int) string {
	if s.MetricsBasePort == 0 {
		return ""
	}
	return net.JoinHostPort(s.host(), strconv.Itoa(s.MetricsBasePort+n-1))
}

// KafkaAddr is node n's Kafka listener; RaftAddr its raft transport.
func (s Spec) KafkaAddr(n int) string {
	if len(s.Hosts) > 0 {
		return net.JoinHostPort(s.Hosts[n-1], strconv.Itoa(s.BasePort))
	}
	return net.JoinHostPort(s.host(), strconv.Itoa(s.BasePort+n-1))
}

func (s Spec) RaftAddr(n int) string {
	if len(s.Hosts) > 0 {
		return net.JoinHostPort(s.Hosts[n-1], strconv.Itoa(s.BasePort+1))
	}
	return net.JoinHostPort(s.host(), strconv.Itoa(s.BasePort+s.Nodes+n-1))
}

func (s Spec) host() string {
	if s.Host == "" {
		return "127.0.0.1"
	}
	return s.Host
}

// listen is node n's --listen: its Kafka address, after its security
// protocol when the spec names one.
func (s Spec) listen(n int) string {
	if s.Protocol == "" {
		return s.KafkaAddr(n)
	}
	return s.Protocol + "://" + s.KafkaAddr(n)
}

// Bootstrap is the bootstrap string of every node.
func (s Spec) Bootstrap() string {
	addrs := make([]string, s.Nodes)
	for i := range addrs {
		addrs[i] = s.KafkaAddr(i + 1)
	}
	return strings.Join(addrs, ",")
}

func (s Spec) peers(from, to int) string {
	var out []string
	for n := from; n <= to; n++ {
		out = append(out, strconv.Itoa(n)+"@"+s.RaftAddr(n))
	}
	return strings.Join(out, ",")
}

// ServeArgs are node n's `weir serve` arguments.
func (s Spec) ServeArgs(dir string, n int) []string {
	voters := min(s.Nodes, 3)
	args := []string{"serve",
		"--node-id", strconv.Itoa(n),
		"--listen", s.listen(n),
		"--data-dir", NodeDir(dir, n),
	}
	if s.Nodes > 1 {
		var ctl []string
		for v := 1; v <= voters; v++ {
			ctl = append(ctl, s.KafkaAddr(v))
		}
		args = append(args, "--raft-listen", s.RaftAddr(n), "--voters", s.peers(1, voters),
			"--controller-bootstrap", strings.Join(ctl, ","))
		if s.Nodes > voters {
			args = append(args, "--non-voters", s.peers(voters+1, s.Nodes))
		}
	}
	if m := s.MetricsAddr(n); m != "" {
		args = append(args, "--metrics-listen", m)
	}
	if s.PprofBasePort != 0 {
		args = append(args, "--pprof-listen", net.JoinHostPort(s.host(), strconv.Itoa(s.PprofBasePort+n-1)))
	}
	if n == 1 && s.Console != "" {
		args = append(args, "--console-listen", s.Console)
		var others []string
		for o := 2; o <= s.Nodes && s.MetricsBasePort != 0; o++ {
			others = append(others, strconv.Itoa(o)+"="+s.MetricsAddr(o))
		}
		if len(others) > 0 {
			args = append(args, "--console-metrics", strings.Join(others, ","))
		}
	} else if s.Nodes == 1 {
		args = append(args, "--console-listen", "off") // only where asked
	}
	args = append(args, s.Args...)
	if len(s.NodeArgs) > 0 {
		args = append(args, s.NodeArgs[n-1]...)
	}
	return args
}

// NodeDir is node n's directory.
func NodeDir(dir string, n int) string { return filepath.Join(dir, "node-"+strconv.Itoa(n)) }

// Load reads the spec of the cluster in dir.
func Load(dir string) (Spec, error) {
	b, err := os.ReadFile(filepath.Join(dir, specFile))
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return Spec{}, fmt.Errorf("localcluster: no cluster in %s (start one with weir cluster up)", dir)
		}
		return Spec{}, err
	}
	var s Spec
	if err := json.Unmarshal(b, &s); err != nil {
		return Spec{}, fmt.Errorf("localcluster: %s: %w", specFile, err)
	}
	return s, s.Validate()
}

func save(dir string, s Spec) error {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, specFile), b, 0o644)
}

// Cluster is a running cluster owned by Up.
type Cluster struct {
	Dir  string
	Spec Spec

	mu       sync.Mutex
	children map[int]*exec.Cmd // processes this process started and must reap
	wg       sync.WaitGroup
}

// Up writes the spec, starts every node and returns once each answers
// (or ctx ends or timeout passes, after stopping what it started). A
// directory holding a cluster already must be started with the same
// spec, on its existing data.
func Up(ctx context.Context, dir string, spec Spec, timeout time.Duration) (*Cluster, error) {
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	if old, err := Load(dir); err == nil && (old.Nodes != spec.Nodes || old.BasePort != spec.BasePort) {
		return nil, fmt.Errorf("localcluster: %s holds a cluster of %d nodes from port %d; use the same --nodes and --base-port or another directory", dir, old.Nodes, old.BasePort)
	}
	for n := 1; n <= spec.Nodes; n++ {
		if pid, ok := runningPID(dir, n); ok {
			return nil, fmt.Errorf("localcluster: node %d of %s is already running (pid %d)", n, dir, pid)
		}
	}
	if err := save(dir, spec); err != nil {
		return nil, err
	}
	c := &Cluster{Dir: dir, Spec: spec, children: map[int]*exec.Cmd{}}
	marks := make([]int64, spec.Nodes+1)
	for n := 1; n <= spec.Nodes; n++ {
		mark, err := c.spawn(n)
		if err != nil {
			c.StopAll(10 * time.Second)
			return nil, err
		}
		marks[n] = mark
	}
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for n := 1; n <= spec.Nodes; n++ {
		if err := waitReady(wctx, dir, n, marks[n]); err != nil {
			c.StopAll(10 * time.Second)
			return nil, err
		}
	}
	return c, nil
}

// spawn starts node n; it returns the size of its log before the start,
// where waitReady looks for the ready line.
func (c *Cluster) spawn(n int) (int64, error) {
	cmd, mark, err := startNode(c.Dir, c.Spec, n)
	if err != nil {
		return 0, err
	}
	c.mu.Lock()
	c.children[n] = cmd
	c.mu.Unlock()
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		cmd.Wait()
		c.mu.Lock()
		if c.children[n] == cmd {
			delete(c.children, n)
		}
		c.mu.Unlock()
	}()
	return mark, nil
}

// startNode starts node n in its own process group (so a terminal's
// Ctrl-C reaches only the owner) with its output appended to weir.log.
func startNode(dir string, spec Spec, n int) (*exec.Cmd, int64, error) {
	nd := NodeDir(dir, n)
	if err := os.MkdirAll(nd, 0o755); err != nil {
		return nil, 0, err
	}
	logf, err := os.OpenFile(filepath.Join(nd, "weir.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, 0, err
	}
	defer logf.Close()
	st, err := logf.Stat()
	if err != nil {
		return nil, 0, err
	}
	fmt.Fprintf(logf, "--- node %d starting at %s\n", n, time.Now().Format(time.RFC3339Nano))
	cmd := exec.Command(spec.Binary, spec.ServeArgs(dir, n)...)
	if len(spec.Netns) > 0 {
		// ip netns exec execs weir in the namespace: the pid is weir's.
		cmd = exec.Command("ip", append([]string{"netns", "exec", spec.Netns[n-1], spec.Binary}, spec.ServeArgs(dir, n)...)...)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, 0, fmt.Errorf("localcluster: start node %d: %w", n, err)
	}
	if err := os.WriteFile(filepath.Join(nd, "pid"), []byte(strconv.Itoa(cmd.Process.Pid)+"\n"), 0o644); err != nil {
		cmd.Process.Kill()
		return nil, 0, err
	}
	return cmd, st.Size(), nil
}

// readyLine is what `weir serve` prints once it serves clients.
const readyLine = "weir listening on "

// waitReady waits until node n's log shows the ready line after mark.
func waitReady(ctx context.Context, dir string, n int, mark int64) error {
	path := filepath.Join(NodeDir(dir, n), "weir.log")
	for {
		if ok, err := logHasAfter(path, mark, readyLine); err != nil {
			return err
		} else if ok {
			return nil
		}
		if _, running := runningPID(dir, n); !running {
			return fmt.Errorf("localcluster: node %d exited before it was ready; see %s", n, path)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("localcluster: node %d not ready: %w; see %s", n, ctx.Err(), path)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func logHasAfter(path string, mark int64, needle string) (bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return false, err
	}
	defer f.Close()
	if _, err := f.Seek(mark, 0); err != nil {
		return false, err
	}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if strings.Contains(sc.Text(), needle) {
			return true, nil
		}
	}
	return false, nil
}

// runningPID returns node n's pid if that process is alive.
func runningPID(dir string, n int) (int, bool) {
	b, err := os.ReadFile(filepath.Join(NodeDir(dir, n), "pid"))
	if err != nil {
		return 0, false
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 {
		return 0, false
	}
	return pid, alive(pid)
}

// alive reports whether pid runs and is not a zombie.
func alive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	proc := "/proc/" + strconv.Itoa(pid)
	stat, err := os.ReadFile(proc + "/stat")
	if statAlive(stat, err, procMounted()) {
		return true
	}
	// A zombie's first thread exited, but its others may still be exiting
	// and hold the files they share: its listening sockets stay bound, and
	// a node restarted at once would find its ports in use. It is gone
	// once it is the only thread left.
	tasks, err := os.ReadDir(proc + "/task")
	return err == nil && len(tasks) > 1
}

// procMounted reports whether this system lists processes in /proc.
func procMounted() bool {
	_, err := os.Stat("/proc/self/stat")
	return err == nil
}

// statAlive judges a process that kill(0) found from its /proc stat line
// (or the error reading it). A process whose entry is gone although /proc
// is there was reaped between the two looks: a node SIGKILLed a moment
// before reads as a zombie, then as nothing, never as running. Without
// /proc, kill(0) is all there is to go on.
func statAlive(stat []byte, err error, proc bool) bool {
	if err != nil {
		return !(proc && errors.Is(err, fs.ErrNotExist))
	}
	s := string(stat)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2] != 'Z'
	}
	return true
}

// Kill SIGKILLs node n and waits until it is gone.
func Kill(dir string, n int) error { return signalNode(dir, n, syscall.SIGKILL, 10*time.Second) }

// Stop SIGTERMs node n (a controlled shutdown) and waits until it exits.
func Stop(dir string, n int, timeout time.Duration) error {
	return signalNode(dir, n, syscall.SIGTERM, timeout)
}

// Pause stops node n's process (SIGSTOP) and returns once the kernel
// shows it stopped: the node neither answers nor times anything out, as
// a long garbage-collection pause or a frozen VM would. Resume continues
// it (SIGCONT).
func Pause(dir string, n int) error {
	pid, err := nodePID(dir, n)
	if err != nil {
		return err
	}
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		return fmt.Errorf("localcluster: pause node %d: %w", n, err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for procState(pid) != 'T' {
		if time.Now().After(deadline) {
			return fmt.Errorf("localcluster: node %d (pid %d) not stopped 10s after SIGSTOP", n, pid)
		}
		time.Sleep(5 * time.Millisecond)
	}
	return nil
}

// Resume continues a paused node n.
func Resume(dir string, n int) error {
	pid, err := nodePID(dir, n)
	if err != nil {
		return err
	}
	if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
		return fmt.Errorf("localcluster: resume node %d: %w", n, err)
	}
	return nil
}

// procState is the state letter of pid in /proc (R, S, T, Z, ...), 0
// when it cannot be read.
func procState(pid int) byte {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	s := string(stat)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2]
	}
	return 0
}

// nodePID is the pid of running node n of the cluster in dir.
func nodePID(dir string, n int) (int, error) {
	spec, err := Load(dir)
	if err != nil {
		return 0, err
	}
	if n < 1 || n > spec.Nodes {
		return 0, fmt.Errorf("localcluster: node %d does not exist (nodes are 1..%d)", n, spec.Nodes)
	}
	pid, ok := runningPID(dir, n)
	if !ok {
		return 0, fmt.Errorf("localcluster: node %d is not running", n)
	}
	return pid, nil
}

func signalNode(dir string, n int, sig syscall.Signal, timeout time.Duration) error {
	pid, err := nodePID(dir, n)
	if err != nil {
		return err
	}
	if err := syscall.Kill(pid, sig); err != nil {
		return fmt.Errorf("localcluster: signal node %d: %w", n, err)
	}
	deadline := time.Now().Add(timeout)
	for alive(pid) {
		if time.Now().After(deadline) {
			return fmt.Errorf("localcluster: node %d (pid %d) still running after %v", n, pid, timeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return nil
}

// Start starts node n of a cluster again on its existing data and
// returns once it answers. The process is not this process's to reap: it
// outlives it, and Up's owner stops it with the others.
func Start(ctx context.Context, dir string, n int, timeout time.Duration) error {
	spec, err := Load(dir)
	if err != nil {
		return err
	}
	if n < 1 || n > spec.Nodes {
		return fmt.Errorf("localcluster: node %d does not exist (nodes are 1..%d)", n, spec.Nodes)
	}
	if pid, ok := runningPID(dir, n); ok {
		return fmt.Errorf("localcluster: node %d is already running (pid %d)", n, pid)
	}
	cmd, mark, err := startNode(dir, spec, n)
	if err != nil {
		return err
	}
	cmd.Process.Release()
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return waitReady(wctx, dir, n, mark)
}

// StartNode is Start for the owner of the cluster: it reaps the process.
func (c *Cluster) StartNode(ctx context.Context, n int, timeout time.Duration) error {
	if n < 1 || n > c.Spec.Nodes {
		return fmt.Errorf("localcluster: node %d does not exist (nodes are 1..%d)", n, c.Spec.Nodes)
	}
	if pid, ok := runningPID(c.Dir, n); ok {
		return fmt.Errorf("localcluster: node %d is already running (pid %d)", n, pid)
	}
	mark, err := c.spawn(n)
	if err != nil {
		return err
	}
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return waitReady(wctx, c.Dir, n, mark)
}

// Running lists the nodes whose process is alive.
func Running(dir string, spec Spec) []int {
	var out []int
	for n := 1; n <= spec.Nodes; n++ {
		if _, ok := runningPID(dir, n); ok {
			out = append(out, n)
		}
	}
	return out
}

// StopAll stops every running node, the highest id first, each with a
// controlled shutdown (SIGTERM) while the others still form a quorum;
// the last voters cannot commit theirs and stop after their
// --shutdown-timeout. A node still running after timeout is SIGKILLed.
// It then reaps the processes this one started.
func (c *Cluster) StopAll(timeout time.Duration) {
	for n := c.Spec.Nodes; n >= 1; n-- {
		if _, ok := runningPID(c.Dir, n); !ok {
			continue
		}
		if err := Stop(c.Dir, n, timeout); err != nil {
			Kill(c.Dir, n)
		}
	}
	c.wg.Wait()
}
