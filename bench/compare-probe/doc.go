// Command compare-probe is the small helper bench/compare runs beside the
// Java load generator: it times a broker's start-up and creates topics.
//
// # What it owns
//
//   - first-ack: wait for a broker that is being started to accept a
//     produce, and report the time from the broker process's start (read
//     from /proc/PID/stat, so in kernel clock ticks) to the first
//     acknowledged record, with the time the port first accepted a
//     connection on the way.
//   - create-topics: create topics with a partition count and wait until
//     every partition has a leader.
//
// # What it does not own
//
// Load generation and throughput or latency figures: those come from
// Apache Kafka's own ProducerPerformance and ConsumerPerformance so that
// both brokers face the same client. Starting and stopping brokers is the
// script's job.
//
// # Concurrency
//
// Each subcommand runs on the main goroutine; the franz-go client it
// creates is closed before the command returns.
package main
