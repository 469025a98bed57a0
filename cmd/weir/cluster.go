package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"weir/internal/localcluster"
)

// runCluster is `weir cluster up|kill|stop|start`: a cluster of separate
// weir serve processes on this machine (internal/localcluster).
func runCluster(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	const synopsis = `cluster <up|kill|stop|start> [flags]

  up     --nodes N --dir D [--base-port P]   start N nodes, print the bootstrap string, stop them all on Ctrl-C
  kill   --dir D N                           SIGKILL node N (1..N) of the running cluster
  stop   --dir D N                           stop node N gracefully (controlled shutdown)
  start  --dir D N                           start node N again on its data; returns once it answers`
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" {
		fmt.Fprintf(stderr, "Usage: weir %s\n", synopsis)
		if len(args) == 0 {
			return errUsage
		}
		return nil
	}
	sub, rest := args[0], args[1:]
	switch sub {
	case "up":
		return clusterUp(ctx, rest, stdout, stderr)
	case "kill", "stop", "start":
		return clusterNode(ctx, sub, rest, stdout, stderr)
	}
	fmt.Fprintf(stderr, "weir cluster: unknown subcommand %q\n\nUsage: weir %s\n", sub, synopsis)
	return errUsage
}

func clusterUp(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("cluster up", "cluster up --nodes N --dir D [flags] [-- weir serve flags]", stderr)
	nodes := fs.Int("nodes", 3, "number of broker processes (the first three vote in the metadata quorum)")
	dir := fs.String("dir", "", "directory holding the cluster's data and logs (required)")
	basePort := fs.Int("base-port", 9092, "Kafka port of node 1; node N listens on base+N-1, raft transports on the ports after those")
	timeout := fs.Duration("timeout", 60*time.Second, "how long to wait for every node to answer")
	consoleAddr := fs.String("console-listen", "", "host:port where node 1 serves the web console (default: off); every node then serves metrics on the ports after the raft ones, for the console's rates")
	metricsBase := fs.Int("metrics-base-port", 0, "node 1's metrics port; node N serves /metrics on base+N-1 (default: off, or the ports after the raft ones with --console-listen)")
	pprofBase := fs.Int("pprof-base-port", 0, "profiling only: node 1's pprof port; node N serves /debug/pprof/ on base+N-1 (default: off)")
	var extra []string
	for i, a := range args {
		if a == "--" {
			args, extra = args[:i], args[i+1:]
			break
		}
	}
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *dir == "" {
		fmt.Fprintln(stderr, "weir cluster up: --dir is required")
		return errUsage
	}
	bin, err := os.Executable()
	if err != nil {
		return err
	}
	abs, err := filepath.Abs(*dir)
	if err != nil {
		return err
	}
	spec := localcluster.Spec{Nodes: *nodes, BasePort: *basePort, Binary: bin,
		Args: append([]string{"--shutdown-timeout", "5s"}, extra...)}
	if *consoleAddr != "" {
		spec.Console, spec.MetricsBasePort = *consoleAddr, *basePort+2**nodes
	}
	if *metricsBase != 0 {
		spec.MetricsBasePort = *metricsBase
	}
	spec.PprofBasePort = *pprofBase
	if err := spec.Validate(); err != nil {
		fmt.Fprintf(stderr, "weir cluster up: %v\n", err)
		return errUsage
	}
	c, err := localcluster.Up(ctx, abs, spec, *timeout)
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, spec.Bootstrap())
	if spec.Console != "" {
		fmt.Fprintf(stderr, "weir cluster: web console on http://%s/\n", spec.Console)
	}
	fmt.Fprintf(stderr, "weir cluster: %d nodes running in %s; Ctrl-C stops them all\n", spec.Nodes, abs)
	<-ctx.Done()
	fmt.Fprintln(stderr, "weir cluster: stopping every node")
	c.StopAll(30 * time.Second)
	return nil
}

func clusterNode(ctx context.Context, sub string, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("cluster "+sub, "cluster "+sub+" --dir D N", stderr)
	dir := fs.String("dir", "", "the cluster's directory (required)")
	timeout := fs.Duration("timeout", 60*time.Second, "how long to wait for the node")
	// The node number may come before or after the flags.
	var pos []string
	var flags []string
	for _, a := range args {
		if !strings.HasPrefix(a, "-") && (len(flags) == 0 || !needsValue(flags[len(flags)-1])) {
			pos = append(pos, a)
		} else {
			flags = append(flags, a)
		}
	}
	if err := parseFlags(fs, flags); err != nil {
		return err
	}
	if *dir == "" || len(pos) != 1 {
		fmt.Fprintf(stderr, "Usage: weir cluster %s --dir D N\n", sub)
		return errUsage
	}
	n, err := strconv.Atoi(pos[0])
	if err != nil || n < 1 {
		fmt.Fprintf(stderr, "weir cluster %s: node %q is not a number from 1\n", sub, pos[0])
		return errUsage
	}
	switch sub {
	case "kill":
		err = localcluster.Kill(*dir, n)
	case "stop":
		err = localcluster.Stop(*dir, n, *timeout)
	case "start":
		err = localcluster.Start(ctx, *dir, n, *timeout)
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "node %d: %s\n", n, map[string]string{"kill": "killed", "stop": "stopped", "start": "running"}[sub])
	return nil
}

// needsValue reports whether a flag given as "-name" (without "=value")
// takes the next argument as its value.
func needsValue(flag string) bool {
	name := strings.TrimLeft(flag, "-")
	return !strings.Contains(name, "=") && (name == "dir" || name == "timeout")
}
