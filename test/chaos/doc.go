// Package chaos is the loss test of partition replication: a three-node
// weir cluster of real processes (internal/localcluster, the weir binary
// built once per test run), a topic of 6 partitions with replication
// factor 3 and min.insync.replicas 2, idempotent acks=all producers that
// send unique values ("ID-SEQ") round robin over the partitions — two
// franz-go clients in process (kgo0 with franz-go's defaults, kgo1 with
// a 250 ms MetadataMinAge instead of 5 s, to tell the client's metadata
// refresh pacing from the broker's failover in the stall figures) and, when kafka-clients 4.3.0 is in .cache
// (scripts/apache-kafka fetch) and javac is on PATH, the Java client
// (java/ChaosProducer.java, compiled by the test) — and a franz-go
// consumer reading the topic from the start while faults are injected.
//
// TestKillLoop SIGKILLs, every few seconds, the leader of a random
// partition (or, one round in four, the node running the controller),
// restarts it after 0.5–2 s and waits until every partition has a leader
// and its full ISR before the next round. TestPauseLoop freezes the
// leader of a random partition (or the controller) with SIGSTOP for 7 s,
// longer than replica.lag.time.max.ms (3 s in that test's
// server.properties), then SIGCONTs it; it also requires that in at
// least one round the frozen node left the ISR of a partition it follows.
// Each round logs how long after the fault (the SIGCONT, the restart,
// the heal) every partition had a leader and its full ISR, as a broker
// answers a Metadata request sent for each check: not from the admin
// client's metadata cache, which keeps a topic for 5 s (MetadataMinAge)
// and so made a node back in the ISR within milliseconds read as back
// 5.0x s after resuming whenever the first check came before it.
//
// TestKillLoopSASLSSL (security_test.go) is the kill loop on a cluster
// whose every node serves one SASL_SSL listener (localcluster's
// Spec.Protocol, `weir serve --listen SASL_SSL://...`), which is also its
// inter-broker listener: replication, forwarded requests and the
// registration with the controller go over TLS with SCRAM-SHA-512, the
// brokers authenticating as their own user and checking each other's
// certificate against a CA the test makes (internal/auth/authtest). Every
// client connects so: the franz-go producers, the live consumer, the admin
// client and the final read over TLS with the clients' SCRAM-SHA-512 user,
// and the Java producer with security.protocol=SASL_SSL, sasl.jaas.config
// and a PEM truststore (a client properties file,
// java/ChaosProducer.java's sixth argument). Once the cluster is up, a
// plaintext ApiVersions to each node must go unanswered. The metadata
// quorum's raft transport runs over mutual TLS with the brokers'
// certificates (internal/quorum's TestTLSQuorum checks that a peer
// without a trusted certificate gets no answer).
// Short form 4 rounds, long form 50, or WEIR_CHAOS_SASL_KILL_ROUNDS.
//
// After the loop the producers flush, the cluster heals, a fresh
// consumer reads every partition from offset 0 to its high watermark and
// Check (ledger.go) proves that every acknowledged record is in the log
// exactly once at the partition and offset it was acknowledged with, that
// no value is there twice, that nothing unsent is there, that every
// record the live consumer read is still there at the same offset, and
// that each producer's acknowledged records on a partition are in send
// order; every producer that ran must have had records acknowledged. The
// test logs the ack stall of each round (the longest gap in
// acknowledgements on any partition after the fault, per client family):
// a measurement, never an assertion.
//
// TestExactlyOnceLoop (eos_test.go) is the exactly-once test: two
// read-process-write copy loops (franz-go GroupTransactSessions:
// read_committed group consumers whose transactional producers commit
// the group's offsets in each transaction) copy eos-in to eos-out while
// an idempotent producer keeps writing eos-in and a read_committed
// consumer reads eos-out. A copy loop aborts a transaction any of whose
// records failed (kgo.AbortingFirstErrPromise, as franz-go's own
// exactly-once example: franz-go fails records it has not sent on some
// errors, and committing anyway commits offsets without their copies).
// Every round SIGKILLs a node: one round in three the transaction
// coordinator of a copy loop, otherwise the current leader of an input
// or output partition (asked with a Metadata request of its own, not
// from a client's cache), restarted after 0.5-2 s. Afterwards
// the input producer stops and flushes (a batch for a partition whose
// leader was just killed can wait seconds in the client for its new
// leader, so the input's end is only known then), the loops catch up
// (the group's committed offsets reach every input partition's end and
// pass every acknowledged input record), every output partition's last
// stable offset must reach its high watermark (no hanging transaction),
// and CheckExactlyOnce (eos.go) proves, from the offsets the stopped
// loops committed, that every input record below them is in the output
// exactly once, that none at or past them is there or left uncopied, and
// that every record the live read_committed consumer saw is committed
// at that offset (no aborted record was ever visible). A failed run
// says where the missing copies are in a read_uncommitted read of the
// output. Short form 5 rounds, long form (WEIR_CHAOS_LONG=1) 30, or
// WEIR_CHAOS_EOS_ROUNDS.
//
// TestNetworkFaultLoop (network_test.go) puts every node in its own
// network namespace (netlab_test.go: veth pairs on a bridge, nftables
// rules in the node's namespace) and, each round, cuts the victim off
// from the other nodes (both ways, or only what it receives), drops a
// share of its packets with them, or delays every byte of its
// connections with them (nftables DNAT through delaying proxies in the
// root namespace: this kernel has no netem), for 4 to 7 s, then heals:
// every partition must have a leader and its full ISR, and every node
// name the same controller, within a minute. The clients reach every
// node throughout, so a cut-off leader keeps being sent acks=all writes;
// the check proves none of them was acknowledged and lost. Short form 4
// rounds (one of each fault), long form 24. It needs root and nftables
// (scripts/chaos and scripts/test install it) and skips, saying so,
// without them.
//
// Short form (the default, in scripts/test): 8 kill rounds and 3 pause
// rounds, about a minute each, and 4 SASL_SSL kill rounds, about 35 s.
// Long form: WEIR_CHAOS_LONG=1 (50 kill rounds, 50 SASL_SSL kill rounds,
// 12 pause rounds), or set WEIR_CHAOS_KILL_ROUNDS,
// WEIR_CHAOS_SASL_KILL_ROUNDS and WEIR_CHAOS_PAUSE_ROUNDS. WEIR_CHAOS_SEED repeats a run's choice of
// victims, WEIR_CHAOS_KEEP=DIR keeps the nodes' logs and the Java
// producer's (its client log at INFO: retries, epoch bumps, sequence
// errors; kept in a temporary directory when a test fails),
// WEIR_CHAOS_KEEP_DATA=DIR the cluster's directory (every node's
// partition logs, for inspection with internal/log) when a test failed,
// WEIR_CHAOS_LOG_LEVEL=debug (or info, warn, error) the nodes' log level
// (`weir serve --log-level`; info by default),
// WEIR_CHAOS_EOS_KGO_LOG=PATH the exactly-once copy loops' franz-go logs
// at INFO (PATH.eos-copy-N: transactions begun and ended, failed
// records, rejoins),
// WEIR_CHAOS_JAVA=0
// leaves the Java producer out. scripts/chaos runs either form in one
// command and saves the output under bench/out/ (git ignores it), or
// where --out or WEIR_BENCH_OUT says.
package chaos
