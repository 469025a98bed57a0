// Package brokermetrics is the broker's Prometheus collector: what a
// scrape of /metrics reads of a broker node's state, at scrape time,
// through a narrow Source the broker implements.
//
// # What it owns
//
// The metric families and their names (weir_broker_*, weir_partition_*,
// weir_share_partition_*, weir_share_fetch_*, weir_group_*,
// weir_fetch_*), which docs, the console (internal/console) and tests
// name: hosted and led partitions and the data directory's state; per
// hosted partition its log end offset, high watermark, log start
// offset, size and fsyncs (only once it has been written: a million
// never-written partitions would make a scrape hundreds of megabytes);
// the share partitions' KIP-932 counters and parked ShareFetches; the
// group coordinator's counters; the fetch session cache (Kafka's
// FetchSessionCache metrics) and the Fetch requests by kind.
//
// # What it does not own
//
// The state itself: the broker's topic registry, the logs
// (internal/log), share groups (internal/sharegroup), groups
// (internal/group) and fetch sessions (internal/fetchsession) keep
// their own counters; the collector only reads them. The cleaner and
// the server have collectors of their own. It never imports
// internal/broker.
//
// The broker wires it so:
//
//	reg.MustRegister(brokermetrics.New(source)) // source implements Source
//
// # Concurrency
//
// A Collector holds no state: each Collect calls the Source, which must
// be safe to call from the scraping goroutine at any time (the broker
// takes its registry lock only to list the hosted partitions, and
// releases it before reading them).
package brokermetrics
