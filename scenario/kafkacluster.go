package scenario

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"weir/internal/delayproxy"
	"weir/scenario/spec"
)

// kafkaCluster is Apache Kafka 4.3 run from the Maven Central jars
// through scripts/apache-kafka: one KRaft process per node (the first
// three broker and controller, the others brokers only), each behind a
// delayproxy whose address it advertises, so that a slow_broker fault
// slows it as weir's serial delay slows a weir broker.
type kafkaCluster struct {
	script  string
	dir     string
	nodes   int
	args    [][]string // each node's start arguments, kept for restarts
	proxies []*delayproxy.Proxy
}

func startKafka(ctx context.Context, f *spec.File, cfg RunConfig, dir string) (runCluster, error) {
	root, err := repoRoot(cfg)
	if err != nil {
		return nil, err
	}
	k := &kafkaCluster{script: filepath.Join(root, "scripts", "apache-kafka"), dir: filepath.Join(dir, "kafka"), nodes: f.Cluster.Brokers}
	if out, err := exec.CommandContext(ctx, k.script, "fetch").CombinedOutput(); err != nil {
		return nil, fmt.Errorf("scenario: scripts/apache-kafka fetch: %v\n%s", err, tail(out, 2000))
	}
	n := f.Cluster.Brokers
	base, err := freePortRange(3 * n)
	if err != nil {
		return nil, err
	}
	port := func(n int) int { return base + n - 1 }            // the broker's own listener
	cport := func(n int) int { return base + k.nodes + n - 1 } // its controller listener
	pport := func(n int) int { return base + 2*k.nodes + n - 1 }
	voters := min(n, 3)
	var vs []string
	for v := 1; v <= voters; v++ {
		vs = append(vs, fmt.Sprintf("%d@127.0.0.1:%d", v, cport(v)))
	}
	rf := strconv.Itoa(min(n, 3))
	id := make([]byte, 16)
	rand.Read(id)
	cid := strings.TrimLeft(base64.RawURLEncoding.EncodeToString(id), "-")
	for i := 1; i <= n; i++ {
		p, err := delayproxy.Listen(fmt.Sprintf("127.0.0.1:%d", pport(i)), fmt.Sprintf("127.0.0.1:%d", port(i)), cfg.Logger)
		if err != nil {
			k.Close()
			return nil, err
		}
		k.proxies = append(k.proxies, p)
		roles := "broker,controller"
		listeners := fmt.Sprintf("PLAINTEXT://127.0.0.1:%d,CONTROLLER://127.0.0.1:%d", port(i), cport(i))
		if i > voters {
			roles, listeners = "broker", fmt.Sprintf("PLAINTEXT://127.0.0.1:%d", port(i))
		}
		args := []string{"start", "--dir", k.nodeDir(i), "--port", strconv.Itoa(port(i)), "--controller-port", strconv.Itoa(cport(i)),
			"--heap", f.Cluster.KafkaHeap, "--timeout", "180", "--cluster-id", cid}
		for _, kv := range []string{
			"node.id=" + strconv.Itoa(i), "process.roles=" + roles, "controller.quorum.voters=" + strings.Join(vs, ","),
			"listeners=" + listeners, fmt.Sprintf("advertised.listeners=PLAINTEXT://127.0.0.1:%d", pport(i)),
			"offsets.topic.replication.factor=" + rf, "transaction.state.log.replication.factor=" + rf,
			"share.coordinator.state.topic.replication.factor=" + rf,
		} {
			args = append(args, "--prop", kv)
		}
		k.args = append(k.args, args)
	}
	// The nodes start together: a controller waits for a quorum.
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := 1; i <= n; i++ {
		wg.Go(func() { errs[i-1] = k.run(ctx, k.args[i-1]...) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		k.Close()
		return nil, err
	}
	return k, nil
}

func (k *kafkaCluster) nodeDir(n int) string { return filepath.Join(k.dir, "node-"+strconv.Itoa(n)) }

func (k *kafkaCluster) run(ctx context.Context, args ...string) error {
	out, err := exec.CommandContext(ctx, k.script, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("scenario: scripts/apache-kafka %s: %v\n%s", args[0], err, tail(out, 3000))
	}
	return nil
}

func (k *kafkaCluster) Bootstrap() string {
	var addrs []string
	for _, p := range k.proxies {
		addrs = append(addrs, p.Addr())
	}
	return strings.Join(addrs, ",")
}

func (k *kafkaCluster) check(n int32) error {
	if n < 1 || int(n) > k.nodes {
		return fmt.Errorf("scenario: broker %d is not in the cluster (1 to %d)", n, k.nodes)
	}
	return nil
}

func (k *kafkaCluster) Act(ctx context.Context, action string, n int32, stopTimeout time.Duration) error {
	if err := k.check(n); err != nil {
		return err
	}
	dir := k.nodeDir(int(n))
	switch action {
	case spec.FaultPause, spec.FaultResume:
		b, err := os.ReadFile(filepath.Join(dir, "broker.pid"))
		if err != nil {
			return err
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil {
			return err
		}
		sig := syscall.SIGSTOP
		if action == spec.FaultResume {
			sig = syscall.SIGCONT
		}
		return syscall.Kill(pid, sig)
	case spec.FaultKill:
		return k.run(ctx, "stop", "--dir", dir, "--kill")
	case spec.FaultStop:
		return k.run(ctx, "stop", "--dir", dir, "--timeout", seconds(stopTimeout))
	case spec.FaultStart:
		return k.run(ctx, k.args[n-1]...)
	case spec.FaultRestart:
		if err := k.run(ctx, "stop", "--dir", dir, "--timeout", seconds(stopTimeout)); err != nil {
			return err
		}
		return k.run(ctx, k.args[n-1]...)
	}
	return fmt.Errorf("scenario: %s is not a process fault", action)
}

// seconds writes d as whole seconds, at least 1, for scripts/apache-kafka.
func seconds(d time.Duration) string {
	return strconv.Itoa(max(1, int(d.Round(time.Second)/time.Second)))
}

// slow sets broker n's proxy delays: Produce (key 0) and Fetch (key 1).
func (k *kafkaCluster) slow(_ context.Context, n int32, produce, fetch time.Duration) error {
	if err := k.check(n); err != nil {
		return err
	}
	k.proxies[n-1].SetDelay(0, produce)
	k.proxies[n-1].SetDelay(1, fetch)
	return nil
}

// Close stops every node at once (one at a time, the last controllers
// would wait for a quorum that is gone), then the proxies.
func (k *kafkaCluster) Close() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	for i := range k.args {
		wg.Go(func() {
			if k.run(ctx, "stop", "--dir", k.nodeDir(i+1), "--timeout", "30") != nil {
				k.run(context.Background(), "stop", "--dir", k.nodeDir(i+1), "--kill")
			}
		})
	}
	wg.Wait()
	for _, p := range k.proxies {
		p.Close()
	}
}

// repoRoot is the checkout the runner works from (scripts/, scenario/java).
func repoRoot(cfg RunConfig) (string, error) {
	dir, err := findJavaDir(cfg.JavaDir)
	if err != nil {
		return "", err
	}
	return filepath.Abs(filepath.Join(dir, "..", ".."))
}
