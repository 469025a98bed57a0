// Package scenario runs reproducible experiments and reports them: the
// scenario files of `weir scenario run` (scenarios/*.yaml, format in
// scenario/spec and scenarios/README.md), and the older share-drain tool.
//
// # weir scenario run: a scenario file
//
// RunFile runs each variant of a resolved file on a fresh cluster:
//
//   - runcluster.go starts it (`weir cluster up` in process,
//     internal/localcluster) or takes an external one's bootstrap, and
//     acts on its processes for the faults (pause, resume, kill, stop,
//     start, restart, failover);
//   - run.go creates the topics (replicas placed as written), sets broker
//     and share-group configs, makes the clients, applies the faults at
//     0 s, then runs the phases: backlog (producers only, until a record
//     budget is spent), drain (consumers only, until every acknowledged
//     record is consumed and nothing is in flight), steady, explore
//     (explore.go: bisection on the total rate against a p99 target,
//     draining between tries);
//   - clients.go runs weir's clients in process (producers paced by
//     their schedule and distributor, workload.go; consumers with
//     simulated processing), javaworkers.go Kafka's Java client in one
//     JVM per producer or consumer entry (scenario/java, built per
//     kafka-clients version);
//   - meter.go counts what they report per partition, with latency
//     histograms (histogram.go, the same buckets as the Java drivers'),
//     and a ledger of distinct records consumed; faults.go applies the
//     faults (slow broker through weir.fault.*.response.delay.ms, configs,
//     leadership moves and reassignments through the admin APIs);
//   - every sampling interval the sampler takes a Tick (per-partition
//     produced, consumed and backlog, latency percentiles, bytes sent to
//     each broker, leaders) and prints the seed tool's console line;
//     leadership changes and faults become events; runreport.go writes
//     the JSON and a self-contained HTML page of SVG charts whose lines
//     carry their data (internal/console/svgcheck reads them back); a
//     per-partition chart draws the busiest maxLegend-1 partitions and
//     the sum of the rest (chartedPartitions), since a line per
//     partition made a 100,000-partition run's page a gigabyte.
//
// Concurrency: RunFile is synchronous. Per variant it owns one goroutine
// per in-process client instance, one per JVM driver (control) plus its
// reader, the sampler and the fault runner, and stops all of them, the
// JVMs and the cluster before it returns. The meter has one mutex, held
// for counter updates; the runner's mutex guards its ticks, events and
// phase start times.
//
// # share-drain: the share-group fetch-wait case 2
//
// `weir scenario share-drain` reproduces "case 2" of the seed post on
// pathological fetch waits with share.acquire.mode=record_limit
// (../shared/seeds/004_*; issue 8): one share consumer drains a backlog
// skewed across 12 partitions, with no producer running.
//
//  1. Create the topic (12 partitions by default) and set the group's
//     share.auto.offset.reset to earliest (a share group starts at the
//     latest offset otherwise and would see nothing of the backlog).
//  2. Load the backlog with the weir producer in big batches: ZipfSplit
//     decides how many records each partition gets, as a producer picking
//     each record's partition from a Zipf distribution would (alpha 2:
//     partition 0 gets 64%, partition 1 16%, partition 11 0.44%). The
//     counts are printed; the same --seed gives the same counts.
//  3. Drain it with ONE share consumer, implicit acknowledgement, until
//     every (partition, offset) has been delivered or --timeout passes:
//     --client java runs KafkaShareConsumer from kafka-clients 4.3.0 in a
//     JVM (scenario/java, built with Maven, offline from ~/.m2 when it
//     can), --client weir runs client.ShareConsumer in process. Both use
//     the given share.acquire.mode, max.poll.records and fetch.max.wait.ms.
//  4. Sample the cumulative delivery count once a second, or every
//     --sample-interval (a ticker here, a reporter thread in the JVM), and
//     write the CSV, the HTML page, a JSON record and the summary.
//
// --broker-config k=v sets a dynamic broker config as a cluster default
// for the run and deletes it afterwards; scenarios/share-case2 uses it to
// drain with weir's broker-side help for record_limit consumers
// (weir.share.fetch.elsewhere.wait.ms) turned off. --cpuprofile and
// --memprofile (Config.CPUProfile, MemProfile) profile the weir client
// during the drain only, the load excluded; the broker is profiled
// through `weir serve --pprof-listen`.
//
// `weir scenario share-report` puts several runs (their JSON and CSV) in
// one markdown table with two charts; scenarios/share-case2 runs the whole
// comparison.
//
// # What it measures
//
// The drain rate over time. The seed's Java record_limit consumer sends
// one ShareFetch per poll, to one broker at a time in turn, each allowed
// to wait fetch.max.wait.ms (500 ms) when it has nothing. Once the light
// partitions are drained, every poll of a drained broker costs 500 ms, so
// the rate falls from a peak to a plateau of about
// max.poll.records × busy brokers / (busy brokers × RTT + idle brokers ×
// 0.5 s) — the seed's ~2K rec/s with two busy brokers of three — and
// lower still when only one broker has records left. This needs the
// partitions' leaders on several brokers: on a single broker there is no
// "other broker" to wait on, and the collapse does not show.
// batch_optimized (concurrent fetches to every broker) is the reference
// drain time; client.ShareConsumer in record_limit mode should stay near
// its peak and drain within about 1.2× that time (client/share.go
// explains its fetch policy).
//
// # Reading the output
//
// The CSV has one line per sample: time_s (seconds since the consumer was
// created, group join included), records (delivered since the previous
// sample, one sampling interval earlier) and cumulative. Deliveries are
// counted, so a redelivered record counts twice; the summary separates
// distinct records from duplicates, and a correct run shows 0 duplicates.
//
// The summary gives:
//   - peak rate: the highest rate over a sample covering at least half
//     the sampling interval;
//   - min after peak: the lowest rate between the peak and the last full
//     sample, the depth of any collapse;
//   - plateaus: runs of 5 or more samples whose rates stay within a factor
//     1.5 of each other (PlateauBand), with their median; for a drain
//     longer than two minutes, runs of 3 or more 20-second sums, because a
//     consumer stuck waiting on empty brokers delivers in bursts that make
//     one-second rates jump between 0 and thousands. A healthy drain shows
//     one plateau near the peak, the seed's collapse two or three steps
//     down;
//   - drain time: from the first to the last record delivered, measured
//     by the driver to the millisecond, so the group join is not counted.
//
// The HTML page shows the summary, the rate on a linear and on a log axis
// (inline SVG, no scripts), the parameters and the backlog per partition.
// Numbers from a 2-core machine shared with builds are noisy: compare runs
// made side by side, and repeat them.
//
// # Concurrency
//
// Run is synchronous. It owns one sampler goroutine (weir client) or one
// JVM subprocess (java client) per drain and stops it before returning:
// the JVM gets SIGTERM when the drain's context ends and SIGKILL 10 s
// later.
package scenario
