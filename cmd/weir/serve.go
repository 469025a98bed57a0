package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"weir/internal/auth"
	"weir/internal/auth/scram"
	"weir/internal/broker"
	"weir/internal/config"
	"weir/internal/quorum"
	"weir/internal/server"
)

func runServe(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("serve", "serve [flags]", stderr)
	dataDir := fs.String("data-dir", "./weir-data", "directory holding partition logs and broker state")
	listen := fs.String("listen", "127.0.0.1:9092", "a single listener, host:port (PLAINTEXT) or PROTOCOL://host:port with PROTOCOL one of PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL (port 0 picks a free one); it is also the inter-broker listener, its ssl.* and sasl.* settings come from --config; replaces the config file's listeners when given, and is used when the file has none")
	advertise := fs.String("advertise", "", "host:port clients are told to connect to (default: the inter-broker listener's advertised.listeners entry, else its bound address); other brokers still reach this one at its bound address")
	scramCreds := &scramFlags{}
	fs.Var(scramCreds, "add-scram", "a SCRAM user served to SASL/SCRAM clients when the metadata log has no credential for the user and mechanism (AlterUserScramCredentials, kafka-configs.sh), in kafka-storage's syntax: 'SCRAM-SHA-512=[name=alice,password=alice-secret]' (repeatable)")
	nodeID := fs.Int("node-id", 1, "this broker's node id (node.id)")
	nullStorage := fs.Bool("null-storage", false, "benchmarking only: acknowledge produce without storing anything and answer fetches by repeating the largest produced batch, to measure the client and loopback ceiling")
	nullWrite := fs.Bool("null-storage-write", false, "benchmarking only, with --null-storage: also write each produced batch to a file per partition under the data directory, never synced or read, to measure what keeping the bytes in the page cache costs")
	metricsAddr := fs.String("metrics-listen", "", "host:port serving Prometheus metrics at /metrics (default: off)")
	pprofAddr := fs.String("pprof-listen", "", "profiling only: host:port serving net/http/pprof at /debug/pprof/, with block and mutex profiling on (default: off)")
	confFile := fs.String("config", "", "server.properties-style file with Kafka broker property names; flags override it")
	logLevel := fs.String("log-level", "info", "log level: debug, info, warn or error")
	raftListen := fs.String("raft-listen", "", "host:port of this node's metadata quorum transport (needed with -voters)")
	votersFlag := fs.String("voters", "", "the metadata quorum's voters, id@host:port,... with their raft addresses (controller.quorum.voters; default: this node alone)")
	nonVotersFlag := fs.String("non-voters", "", "the other brokers, id@host:port,... with their raft addresses; they follow the metadata log without voting")
	ctlBootstrap := fs.String("controller-bootstrap", "", "Kafka listener addresses (host:port,...) of the quorum's voters, tried while this node does not know the metadata leader")
	clusterID := fs.String("cluster-id", "", "the cluster id (default: derived from -voters, or random for a single node)")
	raftTimeout := fs.Duration("raft-timeout", quorum.DefaultTimeout, "raft heartbeat, election and lease timeout of a multi-node metadata quorum (controller.quorum.fetch.timeout.ms): how long a leader that stopped answering keeps its term; a leader whose process exited is replaced at once")
	shutdownTimeout := fs.Duration("shutdown-timeout", 30*time.Second, "how long a controlled shutdown (on SIGTERM or Ctrl-C) may take before the broker stops anyway")
	consoleCfg := consoleFlags{}.register(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	voters, err := parsePeers(*votersFlag)
	if err != nil {
		fmt.Fprintf(stderr, "invalid -voters %q: %v\n", *votersFlag, err)
		return errUsage
	}
	nonVoters, err := parsePeers(*nonVotersFlag)
	if err != nil {
		fmt.Fprintf(stderr, "invalid -non-voters %q: %v\n", *nonVotersFlag, err)
		return errUsage
	}
	if _, err := parseMetricsURLs(*consoleCfg.metrics); err != nil {
		fmt.Fprintf(stderr, "invalid -console-metrics %q: %v\n", *consoleCfg.metrics, err)
		return errUsage
	}
	if *raftTimeout < 50*time.Millisecond || *raftTimeout > time.Minute {
		fmt.Fprintf(stderr, "invalid -raft-timeout %v: want 50ms to 1m\n", *raftTimeout)
		return errUsage
	}
	if *nullWrite && !*nullStorage {
		fmt.Fprintln(stderr, "-null-storage-write needs -null-storage")
		return errUsage
	}
	if (len(voters) > 1 || len(nonVoters) > 0) && *raftListen == "" {
		fmt.Fprintln(stderr, "-raft-listen is required with more than one voter or with non-voters")
		return errUsage
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		fmt.Fprintf(stderr, "invalid -log-level %q: want debug, info, warn or error\n", *logLevel)
		return errUsage
	}
	listenProto, listenAddr, err := parseListen(*listen)
	if err != nil {
		fmt.Fprintf(stderr, "invalid -listen %q: %v\n", *listen, err)
		return errUsage
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))

	dir, err := filepath.Abs(*dataDir)
	if err != nil {
		return err
	}
	settings, err := loadSettings(*confFile, fs, *nodeID, listenProto, listenAddr, logger)
	if err != nil {
		return err
	}
	// SCRAM users are the metadata log's (AlterUserScramCredentials);
	// --add-scram serves a user and mechanism the log has none for. The
	// broker is made after the listeners, so the lookup reaches it
	// through b.
	var b *broker.Broker
	deps := auth.Deps{Logger: logger, ScramCredential: func(mechanism, user string) (scram.Credential, bool) {
		if b != nil {
			if c, ok := b.ScramCredential(mechanism, user); ok {
				return c, true
			}
		}
		return scramCreds.lookup(mechanism, user)
	}}
	listeners, secs, err := buildListeners(settings, deps)
	if err != nil {
		return fmt.Errorf("invalid configuration: %w", err)
	}
	cfg := brokerConfig(settings)
	if cfg.InterBrokerDial, err = interBrokerDial(settings); err != nil {
		// A single node never dials another broker: without the
		// inter-broker listener's client credentials it still runs.
		if len(voters) > 1 || len(nonVoters) > 0 {
			return fmt.Errorf("invalid configuration: %w", err)
		}
		logger.Warn("no inter-broker client credentials; a cluster needs them", "err", err)
	}
	cfg.DataDir = dir
	cfg.Logger = logger
	// Listeners reload their keystores and truststores when an operator
	// alters their configs (kafka-configs.sh --entity-type brokers).
	cfg.OnBrokerConfig = func(st *config.Broker) {
		for _, sec := range secs {
			if sec == nil {
				continue
			}
			if err := sec.Reconfigure(st); err != nil {
				logger.Warn("listener security not reloaded; the previous settings stay", "err", err)
			}
		}
	}
	cfg.NullStorage, cfg.NullStorageWrite = *nullStorage, *nullWrite
	cfg.Quorum = broker.QuorumConfig{RaftAddr: *raftListen, Voters: voters, NonVoters: nonVoters, ClusterID: *clusterID, RaftTimeout: *raftTimeout}
	for _, a := range strings.Split(*ctlBootstrap, ",") {
		if a = strings.TrimSpace(a); a != "" {
			cfg.Quorum.ControllerBootstrap = append(cfg.Quorum.ControllerBootstrap, a)
		}
	}
	if len(voters) > 1 || len(nonVoters) > 0 {
		// A cluster whose inter-broker listener uses TLS runs its raft
		// transport over mutual TLS with that listener's certificates.
		server, client, ok, err := auth.InterBrokerTLS(settings)
		if err != nil {
			return fmt.Errorf("invalid configuration: the metadata quorum's transport: %w", err)
		}
		if ok {
			cfg.Quorum.RaftTLS = &quorum.TransportTLS{Server: server, Client: client}
		}
	}
	if len(voters) == 0 && len(nonVoters) == 0 {
		cfg.Quorum.RaftAddr = ""
	}
	if *nullStorage {
		logger.Warn("null storage: produced records are acknowledged and thrown away")
	}
	// Every port is bound before the broker opens its data and joins the
	// metadata quorum: a port in use stops this process before it votes.
	bound, err := bindPorts(listeners, *metricsAddr, *pprofAddr)
	if err != nil {
		return err
	}
	for i := range listeners {
		listeners[i].Bound = bound.kafka[i]
	}
	b, err = broker.New(cfg)
	if err != nil {
		bound.close()
		return err
	}
	maxIdle := settings.Millis(config.ConnectionsMaxIdle)
	if maxIdle <= 0 {
		maxIdle = -1 // connections.max.idle.ms 0 or less: never (the server's 0 is its default)
	}
	srv, err := server.New(server.Config{Listeners: listeners, Dispatcher: b, Logger: logger,
		MaxRequestSize: settings.Int(config.SocketRequestMaxBytes), MaxIdle: maxIdle})
	if err != nil {
		bound.close()
		b.Close()
		return err
	}
	bound.kafka = nil // the server owns them now
	logListeners(logger, srv, secs)
	// The broker registers every listener (advertised.listeners, bound
	// ports filled in); a client is told the endpoints of the listener it
	// connected to, brokers reach each other on the inter-broker one.
	ib := settings.InterBrokerListener().Name
	advertised := advertisedAddr(settings, ib, srv.ListenerAddr(ib))
	var override net.Addr
	if *advertise != "" {
		host, port, err := net.SplitHostPort(*advertise)
		p, perr := strconv.Atoi(port)
		if err != nil || perr != nil {
			b.Close()
			fmt.Fprintf(stderr, "invalid -advertise %q: want host:port\n", *advertise)
			return errUsage
		}
		advertised = &net.TCPAddr{IP: net.ParseIP(host), Port: p}
		override = advertised
	}
	b.SetListeners(brokerListeners(settings, srv, ib, override))

	// One registry: scraped at --metrics-listen and read in process by the
	// console for this node's rates. Collectors run only when read.
	reg := prometheus.NewRegistry()
	reg.MustRegister(b.Collector(), b.CleanerCollector(), srv.Collector(), collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	var metrics *http.Server
	if ln := bound.metrics; ln != nil {
		mux := http.NewServeMux()
		mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
		metrics = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
		metricsDone := make(chan struct{})
		go func() { defer close(metricsDone); metrics.Serve(ln) }()
		defer func() { metrics.Close(); <-metricsDone }()
		fmt.Fprintf(stdout, "weir metrics on http://%s/metrics\n", ln.Addr())
	}

	if bound.pprof != nil {
		defer servePprof(bound.pprof, stdout)()
	}

	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(context.Background()) }()
	if err := b.Start(ctx); err != nil {
		srv.Shutdown(context.Background())
		<-serveErr
		b.Close()
		return err
	}
	fmt.Fprintf(stdout, "weir listening on %s (data in %s)\n", srv.ListenerAddr(ib), dir)
	var con *runningConsole
	stopConsole := func() {
		if con != nil {
			con.stop()
			con = nil
		}
	}
	defer stopConsole()
	if addr, required := consoleCfg.addr(len(voters) <= 1 && len(nonVoters) == 0); addr != "" {
		if con, err = startConsole(addr, required, settings, advertised.String(), int32(cfg.NodeID), reg, consoleCfg, logger, stdout); err != nil {
			srv.Shutdown(context.Background())
			<-serveErr
			b.Close()
			return err
		}
	}
	logger.Info("weir ready", "listen", srv.ListenerAddr(ib).String(), "data_dir", dir, "node", cfg.NodeID, "cluster_id", b.ClusterID())

	select {
	case <-ctx.Done():
	case err := <-serveErr:
		b.Close()
		return err
	}
	stopConsole() // its client would only see the broker go
	logger.Info("controlled shutdown: asking the controller to move this broker's leaderships")
	csCtx, csCancel := context.WithTimeout(context.Background(), *shutdownTimeout)
	if err := b.ControlledShutdown(csCtx); err != nil {
		logger.Warn("controlled shutdown did not finish; stopping anyway", "err", err)
	}
	csCancel()
	logger.Info("shutting down: answering in-flight requests")
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		logger.Warn("shutdown", "err", err)
	}
	<-serveErr
	if err := b.Close(); err != nil {
		return fmt.Errorf("closing logs: %w", err)
	}
	logger.Info("weir stopped")
	return nil
}

// servePprof serves the runtime profiles on addr and turns on block and
// mutex sampling, which cost a little on every contended lock; stop
// closes the listener and waits for it.
func servePprof(ln net.Listener, stdout io.Writer) (stop func()) {
	runtime.SetBlockProfileRate(int((10 * time.Microsecond).Nanoseconds()))
	runtime.SetMutexProfileFraction(10)
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	done := make(chan struct{})
	go func() { defer close(done); hs.Serve(ln) }()
	fmt.Fprintf(stdout, "weir pprof on http://%s/debug/pprof/\n", ln.Addr())
	return func() { hs.Close(); <-done }
}

// loadSettings reads the properties file, if any, lets flags given on the
// command line win over it, and validates the result as Kafka would.
// --listen replaces the file's listeners with one listener of its
// security protocol (named after it, so Kafka's default
// listener.security.protocol.map applies and listener.name.<protocol>.*
// settings in the file are that listener's), which is also the
// inter-broker one; it is that listener when the file names none.
func loadSettings(path string, fs *flag.FlagSet, nodeID int, proto, addr string, logger *slog.Logger) (*config.Broker, error) {
	p := &config.Properties{}
	if path != "" {
		var err error
		if p, err = config.ReadPropertiesFile(path); err != nil {
			return nil, err
		}
	}
	if flagSet(fs, "node-id") {
		p.Set(config.NodeID, strconv.Itoa(nodeID))
	}
	p.SetDefault(config.NodeID, strconv.Itoa(nodeID))
	if _, inFile := p.Get(config.Listeners); flagSet(fs, "listen") || !inFile {
		p.Set(config.Listeners, proto+"://"+addr)
		for _, k := range []string{config.AdvertisedListeners, config.InterBrokerListenerName, config.ControllerListenerNames, config.ListenerSecurityMap} {
			p.Delete(k)
		}
		p.Set(config.SecurityInterBrokerProto, proto)
	}
	settings, warnings, err := config.LoadBroker(p)
	if err != nil {
		return nil, fmt.Errorf("invalid configuration:\n%w", err)
	}
	for _, w := range warnings {
		logger.Warn(w.String())
	}
	return settings, nil
}

func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// brokerConfig maps the Kafka broker properties onto the broker's
// settings.
func brokerConfig(s *config.Broker) broker.Config {
	cfg := broker.DefaultConfig()
	cfg.Settings = s
	cfg.NodeID = s.NodeID()
	cfg.Rack = s.Rack()
	cfg.AutoCreateTopics = s.Bool(config.AutoCreateTopics)
	cfg.NumPartitions = s.Int(config.NumPartitions)
	cfg.OffsetsPartitions = s.Int(config.OffsetsTopicPartitions)
	cfg.RetentionCheckInterval = s.Millis(config.LogRetentionCheckInterval)
	if d := s.Millis(config.GroupInitialRebalance); d > 0 {
		cfg.Group.InitialRebalanceDelay = d
	} else {
		cfg.Group.NoInitialRebalanceDelay = true
	}
	cfg.Group.MinSessionTimeout = s.Millis(config.GroupMinSessionTimeout)
	cfg.Group.MaxSessionTimeout = s.Millis(config.GroupMaxSessionTimeout)
	cfg.Group.MaxGroupSize = int(s.Int(config.GroupMaxSize))
	cfg.Group.ConsumerSessionTimeout = s.Millis(config.GroupConsumerSession)
	cfg.Group.ConsumerHeartbeatInterval = s.Millis(config.GroupConsumerHeartbeat)
	cfg.Group.Streams.SessionTimeout = s.Millis(config.GroupStreamsSession)
	cfg.Group.Streams.HeartbeatInterval = s.Millis(config.GroupStreamsHeartbeat)
	cfg.Group.Streams.NumStandbyReplicas = int(s.Int(config.GroupStreamsStandbys))
	cfg.Group.Streams.MaxSize = int(s.Int(config.GroupStreamsMaxSize))
	return cfg
}

// parsePeers reads "id@host:port,..." (Kafka's controller.quorum.voters
// form).
func parsePeers(s string) ([]quorum.Peer, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var peers []quorum.Peer
	seen := map[int32]bool{}
	for _, part := range strings.Split(s, ",") {
		id, addr, ok := strings.Cut(strings.TrimSpace(part), "@")
		if !ok {
			return nil, fmt.Errorf("%q is not id@host:port", part)
		}
		n, err := strconv.ParseInt(id, 10, 32)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("%q: the node id must be a non-negative integer", part)
		}
		if _, _, err := net.SplitHostPort(addr); err != nil {
			return nil, fmt.Errorf("%q: %v", part, err)
		}
		if seen[int32(n)] {
			return nil, fmt.Errorf("node %d is listed twice", n)
		}
		seen[int32(n)] = true
		peers = append(peers, quorum.Peer{ID: int32(n), Addr: addr})
	}
	return peers, nil
}
