// Command weir is the weir broker and its tools in one binary:
//
//	weir serve      a broker (embedded single node by default; a cluster node with --voters)
//	weir topic      create, list, describe, delete or alter topics
//	weir produce    lines from stdin to a topic
//	weir consume    records of a topic to stdout, alone or in a consumer group
//	weir perf       produce and consume load tests with the flags and output of Kafka's perf tools
//	weir cluster    a local cluster of weir serve processes: up, kill, stop, start
//	weir scenario   reproducible experiments (share-drain, share-report)
//	weir version    the version
//
// `weir <command> --help` lists a command's flags.
//
// # What it owns
//
// The command line and the wiring, nothing else. Each file is one
// command: it parses flags (Kafka's property names where Kafka's tools
// have them, given with --property, --producer-props or
// --consumer-props), builds the packages that do the work and maps their
// errors to exit codes: 0 on success or --help, 2 for a usage error
// (already explained on stderr), 1 for any other error, printed as
// "weir COMMAND: error".
//
// serve.go wires a node: it reads the server.properties file (--config)
// with flags taking precedence (internal/config), builds the broker
// (internal/broker) and its Kafka listener (internal/server), and serves
// Prometheus metrics (--metrics-listen) and pprof (--pprof-listen) when
// asked. It prints "weir listening on ADDR (data in DIR)" on stdout once
// the broker serves; internal/localcluster, the bench scripts and the
// real-process tests wait for that line, so it must not change. On
// SIGTERM or Ctrl-C it runs a controlled shutdown (leaderships move
// first, bounded by --shutdown-timeout), then lets requests in flight be
// answered and closes the logs.
//
// # What it does not own
//
// The broker, the client, the load generator and the experiments live in
// internal/broker (and the packages below it), client, perf, scenario and
// internal/localcluster; no logic of theirs belongs here. weir perf writes
// its results to stdout only; weir scenario writes files only where --out
// names them, so neither leaves results in the working tree unasked.
//
// # Concurrency
//
// main runs one command on its goroutine with a context that SIGINT and
// SIGTERM cancel. serve adds one goroutine per listener (Kafka, metrics,
// pprof); each is closed and waited for before serve returns.
package main
