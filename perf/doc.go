// Package perf is the load generator behind `weir perf`: a producer test
// that prints what Kafka's ProducerPerformance prints (progress lines and a
// summary with average, maximum and percentile latencies) and a consumer
// test in the shape of ConsumerPerformance. It drives weir's Go client, so
// it works against any Kafka-compatible broker.
//
// When a target throughput is set, each record has an intended send time
// (start + i/rate) and its latency is measured from that time, not from
// when Send was called: a stalled broker then shows up in the latency
// percentiles instead of silently lowering the offered load (no
// coordinated omission). Unthrottled, latency runs from Send to the
// acknowledgement, as Kafka's tool measures it.
// Percentiles come from at most 500,000 latencies: with more records every
// n-th result is kept, as Kafka's tool samples; average and maximum count
// every record.
//
// With a transactional id the producer test sends in transactions
// committed every transaction duration (ProducerPerformance's
// --transactional-id and --transaction-duration-ms) and reports the commit
// latencies. Copy is the end-to-end exactly-once test: a read_committed
// group consumer and a transactional producer copy a topic, each
// transaction committing the copied records with the group's offsets; it
// reports records per second and commit latencies.
//
// Everything is bounded by the record count the caller gives and by its
// context; the only goroutine besides the caller's is the client's own.
package perf
