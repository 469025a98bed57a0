// Package localcluster runs a cluster of separate `weir serve` processes
// on one machine, for users trying a cluster (`weir cluster up|kill|stop|
// start`) and for tests, benchmarks and scenarios that need real
// processes (test/chaos, test/cluster, bench/cluster-scale).
//
// # What it owns
//
// The layout of a cluster and the processes of its nodes. Nodes 1..N
// listen on consecutive Kafka ports from a base port, with their raft
// transports on the N ports after those; the first three nodes (or all,
// if fewer) vote in the metadata quorum, the others follow it as
// non-voters (Spec.ServeArgs builds each node's flags). Metrics and
// pprof, when asked for (MetricsBasePort, PprofBasePort), are on
// consecutive ports from their own bases. With Spec.Hosts
// each node has its own address and the same ports, and with Spec.Netns
// it runs in its own network namespace (`ip netns exec`), where a test
// can fault its network (test/chaos). A cluster lives in
// a directory: cluster.json (the Spec: how to start each node), and
// node-N/ per node holding its data, weir.log (the process's output,
// appended across restarts, each start marked) and pid (the running
// process). A node is ready when its log shows `weir listening on` after
// the mark of its latest start.
//
// Pause and Resume freeze and continue a node (SIGSTOP, SIGCONT), the
// fault of a broker that stops answering without closing its sockets.
//
// Up starts every node and stays in charge of them until its owner calls
// StopAll, which stops them the highest id first, each with a controlled
// shutdown (SIGTERM), SIGKILL after a timeout. Kill, Stop and Start act on
// one node of a running cluster from any process, through the pid files;
// a process is running when kill(0) finds it and /proc does not show it
// as a zombie.
//
// # What it does not own
//
// What the nodes do: they are `weir serve` processes of the binary named
// in the Spec, configured only by their flags (Spec.Args adds flags to
// every node; Spec.Protocol makes every node's one listener, and so its
// inter-broker one, SSL, SASL_PLAINTEXT or SASL_SSL through
// `--listen PROTOCOL://host:port`, the TLS and SASL settings coming from
// a --config file in Args). It does not talk Kafka to them, check their
// metadata or wait for leaders or ISRs after a restart; callers poll with
// a client.
// Ports are not checked for being free before the start: a busy port
// shows as a node that exits before it is ready.
//
// # Concurrency
//
// A Cluster is owned by the process that called Up. Each node it starts
// has a goroutine waiting for the process to exit (reaping it); StopAll
// waits for those goroutines, so it must be called once the Cluster is no
// longer needed. The map of those child processes is guarded by a mutex
// held only around map updates, never across a wait or a signal. Across
// processes nothing is locked: two processes acting on the same node at
// once race on its pid file. A node started by Start in another process
// is not reaped by the owner: it outlives the starter, and the owner's
// StopAll stops it through its pid file like any other.
package localcluster
