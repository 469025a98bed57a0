// Command cluster-scale measures a local cluster of three `weir serve`
// processes (internal/localcluster) holding many partitions: the time to
// create them through CreateTopics, the memory they cost each broker (per
// partition and per hosted replica), idle CPU, Metadata request latency,
// a controlled shutdown of a broker leading a third of them, and a
// controller failover after a SIGKILL of the node running the controller;
// then it prints the figures against their targets (idle CPU of the
// cluster under 10 % of a core, heap per never-written hosted replica
// under 300 B, a controlled shutdown committed in under 1 s and exited in
// under 5 s, failover under 1 s). With -target kafka it measures three
// Apache Kafka 4.3 KRaft brokers (kafka.go, through scripts/apache-kafka)
// the same way as far as Kafka allows: the JVM's used heap after a full
// collection stands for the live heap, and there is no failover (one
// controller). bench/cluster-scale/run drives it; README.md there has the
// command and the results.
//
// # What it owns
//
// Each scenario (a partition count and a replication factor) runs on a
// fresh cluster directory under --dir, which it removes afterwards
// unless --keep. It starts the nodes with --metrics-listen and
// --pprof-listen on free ports (read back from each node's weir.log), so
// it can read the live heap after a forced collection
// (/debug/pprof/heap?debug=1&gc=1), time a /metrics scrape, and take CPU
// and heap profiles of the nodes while a figure is measured; the broker
// that stops is recorded with perf(1) when there is one, since its own
// profile would end with it. Process figures (RSS, CPU ticks, run-queue
// wait, open files, threads) come from /proc, a weir node's goroutine
// count from /debug/pprof/goroutine.
//
// Every line of output is either a comment (#) or a measurement
//
//	M <scenario> <metric> <value> <unit>
//
// and a table of the scenarios is printed at the end.
//
// # What it does not own
//
// Building the weir binary (the script does). It never touches a
// cluster it did not start: the base port must be free. A broker that
// does not exit after SIGTERM, or a failover that does not complete, is
// reported (goroutines dumped, logs kept) rather than fixed.
//
// # Concurrency
//
// One goroutine runs the scenarios; CPU profiles are fetched on
// goroutines joined before the figure that they cover is printed. Every
// process it starts is stopped (SIGKILL) before the scenario ends, also
// on an interrupt.
package main
