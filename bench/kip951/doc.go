// Command kip951 is the Go helper of bench/kip951/run, which measures a
// three-node weir cluster while partition leadership moves: produce
// latency with and without KIP-951 leader hints, single-partition acks=all
// throughput at RF 3 against RF 1, and how long acknowledgements stall
// when a broker is SIGKILLed under load.
//
// # What it owns
//
//   - topic: create a topic (partitions, replication factor, configs) and
//     wait until every broker's metadata names a leader for each partition.
//   - hints: set weir.leader.hints.enable cluster-wide (IncrementalAlterConfigs
//     on the BROKER resource with an empty name) and wait until every broker
//     describes the new value.
//   - move: move the leadership of every partition of a topic: reverse each
//     replica list (AlterPartitionReassignments, same replicas, new order),
//     then a preferred-leader ElectLeaders; wait until every broker's
//     metadata names the new leaders; print how many moved and the times.
//   - ackgap: produce at a steady rate with franz-go (acks=all), SIGKILL the
//     leader of a partition every few seconds through `weir cluster kill`,
//     restart it, and report per kill the longest time without any
//     acknowledgement, the longest per-partition gap and the slowest record.
//
// # What it does not own
//
// Starting the cluster and the Java load generator (the script does), and
// the tables (the script and README).
//
// # Concurrency
//
// Each subcommand runs on the main goroutine. ackgap adds one sender
// goroutine it waits for; franz-go's callbacks write only their own
// record's slot, read after the client is flushed and closed.
package main
