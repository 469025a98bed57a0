package scenario

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"weir/client"
	"weir/internal/config"
	"weir/internal/localcluster"
	"weir/scenario/spec"
)

// runCluster is the cluster a run uses: one it started (weir) or one it
// was given (external).
type runCluster interface {
	Bootstrap() string
	// Act applies a process fault (spec.FaultPause ... spec.FaultRestart)
	// to broker n.
	// Act applies a process fault to node n; stop and restart give the
	// node stopTimeout to exit before killing it.
	Act(ctx context.Context, action string, n int32, stopTimeout time.Duration) error
	// slow makes broker n answer each connection's produce and fetch
	// requests one after another, each this much late (0: not at all).
	slow(ctx context.Context, n int32, produce, fetch time.Duration) error
	// Close stops what the run started.
	Close()
}

// weirSpec is the local cluster a weir scenario runs on: the file's
// brokers from port base, with the run's extra serve flags and pprof
// ports.
func weirSpec(f *spec.File, cfg RunConfig, base int) localcluster.Spec {
	return localcluster.Spec{Nodes: f.Cluster.Brokers, BasePort: base, Binary: cfg.WeirBinary,
		Args: cfg.ServeArgs, PprofBasePort: cfg.PprofBasePort}
}

// startCluster starts the cluster a resolved file asks for under dir.
func startCluster(ctx context.Context, f *spec.File, cfg RunConfig, dir string) (runCluster, error) {
	switch f.Cluster.Kind {
	case spec.KindExternal:
		return externalCluster(f.Cluster.Bootstrap), nil
	case spec.KindWeir:
		if cfg.WeirBinary == "" {
			return nil, errors.New("scenario: no weir binary to start the cluster with")
		}
		base, err := freePortRange(2 * f.Cluster.Brokers)
		if err != nil {
			return nil, err
		}
		cdir := filepath.Join(dir, "cluster")
		if err := os.MkdirAll(cdir, 0o755); err != nil {
			return nil, err
		}
		c, err := localcluster.Up(ctx, cdir, weirSpec(f, cfg, base), 2*time.Minute)
		if err != nil {
			return nil, err
		}
		return &weirCluster{c: c, bootstrap: c.Spec.Bootstrap(), logger: cfg.Logger}, nil
	case spec.KindKafka:
		return startKafka(ctx, f, cfg, dir)
	default:
		return nil, fmt.Errorf("scenario: unknown cluster kind %q", f.Cluster.Kind)
	}
}

type externalCluster string

func (e externalCluster) Bootstrap() string { return string(e) }
func (e externalCluster) Close()            {}
func (e externalCluster) Act(context.Context, string, int32, time.Duration) error {
	return errors.New("scenario: an external cluster's processes are not the runner's to act on")
}

// slow on an external cluster sets weir's fault configs: it is taken to
// be weir.
func (e externalCluster) slow(ctx context.Context, n int32, produce, fetch time.Duration) error {
	return slowWeir(ctx, string(e), nil, n, produce, fetch)
}

// weirCluster is `weir cluster up` run in process (internal/localcluster).
type weirCluster struct {
	c         *localcluster.Cluster
	bootstrap string
	logger    *slog.Logger
}

func (w *weirCluster) Bootstrap() string { return w.bootstrap }

// Close kills the nodes: the run is over and its data thrown away, and a
// controlled shutdown of every node one by one (the last voters waiting
// out their quorum) would add tens of seconds to each variant.
func (w *weirCluster) Close() {
	for _, n := range localcluster.Running(w.c.Dir, w.c.Spec) {
		localcluster.Kill(w.c.Dir, n)
	}
	w.c.StopAll(30 * time.Second)
}

func (w *weirCluster) slow(ctx context.Context, n int32, produce, fetch time.Duration) error {
	return slowWeir(ctx, w.bootstrap, w.logger, n, produce, fetch)
}

// slowWeir sets weir.fault.produce.response.delay.ms and
// weir.fault.fetch.response.delay.ms (serial per connection) on broker n.
func slowWeir(ctx context.Context, bootstrap string, log *slog.Logger, n int32, produce, fetch time.Duration) error {
	opts := []client.Option{}
	if log != nil {
		opts = append(opts, client.WithLogger(log))
	}
	adm, err := client.NewAdmin(map[string]string{"bootstrap.servers": bootstrap}, opts...)
	if err != nil {
		return err
	}
	defer adm.Close()
	p, f := strconv.FormatInt(produce.Milliseconds(), 10), strconv.FormatInt(fetch.Milliseconds(), 10)
	return adm.AlterConfigs(ctx, client.BrokerResource, strconv.Itoa(int(n)),
		client.AlterConfigOp{Name: config.FaultProduceResponseMs, Value: &p},
		client.AlterConfigOp{Name: config.FaultFetchResponseMs, Value: &f})
}

func (w *weirCluster) Act(ctx context.Context, action string, n int32, stopTimeout time.Duration) error {
	node := int(n)
	switch action {
	case spec.FaultPause:
		return localcluster.Pause(w.c.Dir, node)
	case spec.FaultResume:
		return localcluster.Resume(w.c.Dir, node)
	case spec.FaultKill:
		return localcluster.Kill(w.c.Dir, node)
	case spec.FaultStop:
		return localcluster.Stop(w.c.Dir, node, stopTimeout)
	case spec.FaultStart:
		return w.c.StartNode(ctx, node, 2*time.Minute)
	case spec.FaultRestart:
		if err := localcluster.Stop(w.c.Dir, node, stopTimeout); err != nil {
			return err
		}
		return w.c.StartNode(ctx, node, 2*time.Minute)
	}
	return fmt.Errorf("scenario: %s is not a process fault", action)
}

// freePortRange finds n consecutive free loopback ports below the
// ephemeral range (32768), so no client's outgoing connection takes one
// between this probe and the cluster's bind.
func freePortRange(n int) (int, error) {
	for range 500 {
		base := 20000 + rand.IntN(12000-n)
		var held []net.Listener
		ok := true
		for p := base; p < base+n; p++ {
			l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p))
			if err != nil {
				ok = false
				break
			}
			held = append(held, l)
		}
		for _, l := range held {
			l.Close()
		}
		if ok {
			return base, nil
		}
	}
	return 0, fmt.Errorf("scenario: no %d consecutive free ports", n)
}
