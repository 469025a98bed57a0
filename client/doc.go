// Package client is weir's Go client for Kafka-compatible brokers: a
// Producer, a Consumer and an Admin that speak the Kafka protocol to weir and
// to Apache Kafka alike.
//
// # Quick start
//
// Every constructor takes Kafka's own property names in a map, so settings
// carry over from Java clients unchanged. Only bootstrap.servers is required.
// A property the client does not know, a value of the wrong type or out of
// range fails construction with a *ConfigError naming the key.
//
//	p, err := client.NewProducer(map[string]string{
//		"bootstrap.servers": "127.0.0.1:9092",
//		"compression.type":  "zstd",
//	})
//	if err != nil { ... }
//	defer p.Close(ctx)
//	md, err := p.SendSync(ctx, &client.Record{Topic: "events", Key: []byte("k"), Value: []byte("v")})
//
//	c, err := client.NewConsumer(map[string]string{
//		"bootstrap.servers": "127.0.0.1:9092",
//		"group.id":          "billing",
//		"auto.offset.reset": "earliest",
//	})
//	c.Subscribe([]string{"events"}, nil)
//	for {
//		recs, err := c.Poll(ctx)
//		...
//	}
//
// Example (in example_test.go) is a complete program.
//
// # Producer
//
// Send appends a record to the accumulator and returns a Future; a callback,
// if given, receives the same result. Records wait in per-partition queues of
// batches (batch.size, default 16384 bytes) for up to linger.ms (default 5)
// and are sent by a sender goroutine, at most
// max.in.flight.requests.per.connection (5) requests per broker; a broker
// not yet heard from, or whose requests take several times as long as the
// others' (a slow broker that answers one request at a time), gets one at
// a time, so its batches grow instead of queueing, and the sticky
// partitioner leaves it after batch.size bytes instead of waiting for its
// open batch to fill (slownode.go; weir.producer.adaptive.in.flight=false
// turns this off). Send blocks
// while the topic's metadata is unknown or buffer.memory (32 MiB) is used up,
// for at most max.block.ms. A batch that has no answer within
// delivery.timeout.ms (120 s) fails; failed attempts are retried with
// exponential backoff from retry.backoff.ms to retry.backoff.max.ms with
// ±20% jitter. Flush sends everything queued and waits until every result
// has been delivered, callbacks included; Close does the same
// within its context's deadline and then fails what is left. A batch the
// broker rejects as too large is split and sent again.
//
// Memory: a batch's records are encoded once, into one buffer that starts
// with room for the batch header; uncompressed batches go on the wire from
// that buffer, header filled in place (a rebuild for a new producer id
// copies). Buffers of batch.size batches answered on their first attempt
// are kept for new batches, up to buffer.memory / batch.size of them, as
// the Java client's BufferPool does; a retried batch's buffer is left to
// the garbage collector, since a request that timed out may still hold it.
// Per record the producer keeps one small struct (the Future lives in it,
// its channel made only if Done or Get is called before the result) and
// drops the Record once the result is delivered. The Record's bytes are
// referenced, not copied, until then.
//
// Idempotence is on by default, as in Java: the producer asks the broker for
// a producer id (InitProducerId), numbers each partition's batches, keeps a
// retried batch's sequence and sends a retry only when it is the oldest
// batch of its partition in flight, so records land once and in order. If
// the broker's sequence state and the producer's disagree
// (OUT_OF_ORDER_SEQUENCE_NUMBER or UNKNOWN_PRODUCER_ID for the oldest batch
// in flight, as when a new topic's first batch fails while the next is
// accepted), the producer takes a new producer id and retries, as Java does
// with an epoch bump: nothing is lost, though those two batches may land in
// the other order. Idempotence turns itself off, as in Java, when acks is
// not all or more than five requests may be in flight, unless
// enable.idempotence=true was set explicitly (then the combination is a
// ConfigError). If the broker does not
// serve InitProducerId the producer logs a warning and continues without
// idempotence, unless it was explicitly enabled. compression.type takes
// none, gzip, snappy, lz4 or zstd; snappy is written in the chunked framing
// the Java client uses (weir.compression.snappy.framing=raw writes one raw
// block instead). Decoding accepts both. compression.gzip.level,
// compression.lz4.level and compression.zstd.level set the levels.
//
// # Transactions
//
// With transactional.id the producer writes in transactions, as Java's
// does: InitTransactions (once: fences earlier producers with the same id
// and completes what they left open), then BeginTransaction, Send,
// optionally SendOffsetsToTransaction with a consumer's GroupMetadata
// (read-process-write: the offsets commit with the records), and
// CommitTransaction or AbortTransaction. A Send outside a transaction
// fails with ErrTransactionState. A record that fails makes the
// transaction abortable (CommitTransaction returns ErrTransactionAbortable
// and commits nothing); a producer fenced by a newer one, or whose
// transaction its coordinator aborted for transaction.timeout.ms, gets
// ErrProducerFenced and can only be closed. The protocol is KIP-890's
// when the cluster finalizes transaction.version 2 (partition leaders add
// partitions to the transaction, Produce v12, every commit or abort bumps
// the epoch, offsets go straight to TxnOffsetCommit v5), else the classic
// one (AddPartitionsToTxn before a partition's first batch,
// AddOffsetsToTxn, Produce v11 at most); weir.transaction.classic=true
// forces the classic one. Consumers with isolation.level=read_committed
// read only committed transactions, up to each partition's last stable
// offset.
//
// # Partitioning
//
// The rules, and their defaults, are the Java producer's:
//   - A record with Partition set goes there.
//   - partitioner.class picks a partitioner: RoundRobinPartitioner, the
//     KIP-480 sticky DefaultPartitioner or UniformStickyPartitioner (Java
//     class names or short names), or a name registered with WithPartitioner
//     for your own partitioner.Partitioner. A partitioner that implements
//     partitioner.BatchAware is told, once per record, when its choice needs
//     a new batch (KIP-480's onNewBatch).
//   - Otherwise a keyed record goes to murmur2(key) modulo the partition
//     count, bit for bit the Java client's mapping, unless
//     partitioner.ignore.keys=true.
//   - Everything else takes the built-in uniform sticky path of KIP-794: the
//     producer stays on one partition until batch.size bytes were appended
//     to it, counted as the growth of the batch's encoded size (record
//     framing, headers, compression estimate, the header of each new batch),
//     switching only once every batch in the queue is full or twice
//     batch.size was reached. With partitioner.adaptive.partitioning.enable
//     (default true) the next partition is drawn with odds that fall as its
//     queue of waiting batches grows; partitioner.availability.timeout.ms
//     (default 0, off) leaves out partitions whose broker has had data it
//     could not take for that long. weir.partitioner.adaptive.weighting
//     (batches, the Java rule; bytes; bytes-inverse) weights by queued bytes
//     instead. Package partitioner documents the algorithms and their
//     measured trade-offs.
//
// TestKIP794Experiment runs the real producer against simulated brokers on
// a fake clock, one broker slowed, and checks the effects KIP-794 reports
// (go test -run KIP794 -v ./client/). Its output on this code:
//
//	broker 0 gets +20 ms per request, 1 MB/s offered, linger.ms=0 (byte shares, broker 0 first)
//	  KIP-480 sticky        88.2%  5.9%  5.9%
//	  uniform sticky        42.4% 30.2% 27.4%   p99 156 ms
//	  adaptive (batches)    42.7% 27.6% 29.6%   p99 143 ms
//	  adaptive, bytes       38.4% 29.9% 31.7%   p99 143 ms
//	  adaptive, bytes-inv   38.3% 30.8% 30.9%   p99 143 ms
//	broker 0 at a third of the others' bandwidth, 2 MB/s offered
//	  uniform sticky        40.9% 29.2% 29.9%   p99 48.9 s (the slow broker's backlog)
//	  adaptive (batches)    15.9% 41.9% 42.3%   p99 0.62 s
//	  adaptive, bytes       15.9% 42.5% 41.6%   p99 0.62 s
//	  adaptive, bytes-inv   15.8% 42.1% 42.0%   p99 0.74 s
//
// Uniform's slow-broker share sits above a third because of Java's
// deferred switch (KAFKA-14156): a partition that cannot send keeps its open
// batch, so its stint runs on until that batch fills. When a broker really
// cannot keep up, every weighting finds the same split; when it is only
// slower to answer, queues hold zero or one batch, the batch count cannot
// tell a half-empty open batch from a full one, and the byte weightings
// spread load better (38% against 43% to the slow broker).
//
// # Leader changes (KIP-951)
//
// When a Produce or Fetch response says NOT_LEADER_OR_FOLLOWER or
// FENCED_LEADER_EPOCH and names the current leader with an epoch newer than
// the cached one, and the leader's address is known (from the response's
// node endpoints or the cached brokers), the client moves the partition at
// once and a full metadata refresh follows in the background. The failed
// batch is retried on the new leader without backoff; a later failure at the
// same leader epoch backs off as usual. Hints with an older epoch or a leader
// without an address are ignored.
//
// # Consumer
//
// Subscribe joins a group: group.protocol=classic (the default) runs the
// JoinGroup/SyncGroup protocol with the assignors listed in
// partition.assignment.strategy (RangeAssignor, RoundRobinAssignor,
// CooperativeStickyAssignor; the cooperative protocol is used when every
// listed assignor supports it); group.protocol=consumer runs KIP-848, where
// the broker assigns (group.remote.assignor picks its assignor). Assign reads
// fixed partitions without membership. Poll returns records as they arrive;
// rebalance callbacks (RebalanceListener) and auto-commit
// (enable.auto.commit, every auto.commit.interval.ms) run inside Poll, on the
// caller's goroutine. CommitSync, Committed, Seek, SeekToBeginning,
// SeekToEnd, Position, Pause and Resume work as in Java.
// isolation.level=read_committed skips aborted transactional records and
// control batches. A member that does not call Poll for
// max.poll.interval.ms leaves the group, and its next Poll reports the
// partitions lost (OnLost) and rejoins. A Consumer is used from one
// goroutine at a time.
//
// # Share consumer (KIP-932)
//
// NewShareConsumer joins a share group (group.id) through
// ShareGroupHeartbeat; several members may read one partition, and each
// record is handed to one member at a time under an acquisition lock.
// Poll returns ShareRecords with their DeliveryCount. With
// share.acknowledgement.mode=implicit (the default) everything a Poll
// returned is accepted by the next Poll, CommitSync, CommitAsync or Close;
// with explicit, Acknowledge marks each record AckAccept, AckRelease (it
// comes back, to any member) or AckReject (never delivered again).
// Acknowledgements ride on the next ShareFetch to the partition's leader,
// or go in a ShareAcknowledge on commit. Close closes every share session,
// which releases whatever the member still holds.
//
// In both modes Poll returns as soon as a leader's answer brings records:
// the other leaders' fetches that may wait (fetch.max.wait.ms, sent once
// every leader was found empty) stay in flight, one per leader at most,
// and what they bring is kept for a later Poll, as the Java consumer
// hands each leader's answer over as it comes. Before, a Poll waited for
// every leader's answer, and share case 4's trickle over six leaders had
// p99 end-to-end latency near fetch.max.wait.ms (EXPERIMENTS.md).
// TestSharePollDoesNotWaitForOtherLeaders checks it against two in-memory
// leaders, one of which never answers. A commit sends its
// acknowledgements at once to every leader with no fetch in flight; it
// waits for a fetch in flight (at most fetch.max.wait.ms) only when that
// leader has acknowledgements to send or to confirm, as Kafka's consumer
// does (TestShareCommitDoesNotWaitForOtherLeaders). Close waits for every
// fetch in flight.
//
// share.acquire.mode=record_limit makes max.poll.records a strict cap: the
// records the member holds (acquired, not yet acknowledged) never exceed
// it. The Java client then fetches from one broker per Poll in turn, each
// fetch waiting fetch.max.wait.ms, so one busy broker among empty ones is
// read only between long idle waits. This client goes back to the leader
// that just filled its fetch, with the whole cap, for up to 64 Polls in a
// row before turning to the next leader with records (at once when the
// leader gave less than asked: it has no backlog left); with weir's backlog
// hints it serves the leader with the most records waiting, or, when
// none has max.poll.records waiting, every leader with some, the cap split
// in proportion to their backlogs. Every other
// leader gets a one-record probe at most every 50 ms meanwhile (without
// hints only an empty one), and a request waits
// only when the round before asked every leader and found nothing, so no
// Poll waits for an empty leader while another has records. Acknowledgements
// for a leader the round does not fetch from are sent, and answered,
// before the round acquires anything. share.go describes the policy.
// Its record_limit fetches carry a tagged field (wiretag.ShareFetchAllLeaders)
// saying that it asks every leader at once, so weir brokers keep such a
// fetch's MaxWaitMs rather than answer it early for the sake of consumers
// that ask one broker at a time; other brokers ignore the tag.
// They also carry wiretag.ShareFetchDeferAcks
// (weir.share.acknowledgement.defer=true, the default): a weir broker
// answers once the next records are acquired, without waiting for the
// acknowledgements the fetch carries to be written to
// __share_group_state, and keeps that write pending with the share
// session. Until a request that waits for it has been answered, those
// acknowledgements are at-least-once (a failed write is reported on the
// next answer and its records are delivered again). CommitSync,
// CommitAsync and Close send a ShareAcknowledge to every leader with such
// writes, which the broker answers once they are durable, so they still
// return only when everything acknowledged is durable, and return (or
// pass to CommitAsync's callback) any deferred failure.
// TestShareRecordLimitNoStallTwoLeaders (go test -run ShareRecordLimit -v
// ./client/) runs it against two in-memory leaders, one with 200 records
// and one empty, max.poll.records=10, fetch.max.wait.ms=500: 200 records
// in 22 Polls and about 100 ms (the first waits for the assignment), the
// slowest Poll under 1 ms, one fetch to the empty leader and none that
// waits. Rotating one waiting fetch per Poll would have spent 20 × 500 ms
// on the empty leader. TestShareRecordLimitTwoBusyLeaders checks the cap
// and the turns with two busy leaders; TestIntegrationShareNoStall checks
// the wait rule against `weir serve`.
//
// # Admin
//
// CreateTopics, DeleteTopics, ListTopics, DescribeTopics, CreatePartitions,
// DescribeConfigs, AlterConfigs (incremental), ListGroups, DescribeGroups,
// DeleteGroups, ListOffsets and DescribeCluster.
//
// # Metrics
//
// Producer.Metrics returns a snapshot: bytes written per broker (Java's
// outgoing-byte-total), records and bytes acknowledged per partition, queued
// batches per partition, average batch size, sticky partition switches,
// availability exclusions, KIP-951 leader moves and record send latency
// (average, p50, p99, p99.9, max).
//
// # Testing against weir and Apache Kafka
//
// go test ./client/ builds cmd/weir, starts `weir serve` on a free port and
// runs the integration tests against it (-short skips them). To run the same
// tests against Apache Kafka 4.3 instead:
//
//	scripts/apache-kafka start --dir /tmp/ak --port 39092
//	WEIR_TEST_BOOTSTRAP=127.0.0.1:39092 go test -count=1 -run Integration ./client/
//	scripts/apache-kafka stop --dir /tmp/ak
//
// # Structure and concurrency
//
// The core (core.go) owns one connection per broker
// (internal/wire: framing, correlation ids, ApiVersions negotiation,
// pipelined requests answered in order; a connection with nothing sent or
// awaited for connections.max.idle.ms, 9 minutes by default as in Kafka's
// clients, is closed and opened again on next use) and the metadata cache, an
// immutable snapshot swapped atomically and refreshed by one goroutine.
// The producer adds one sender goroutine; appenders lock only the queue of
// the partition they append to, and response handling runs on the
// connection's reader goroutine. The consumer adds a heartbeat goroutine
// per group membership; a share consumer adds one heartbeat goroutine, a
// goroutine per ShareFetch in flight (at most one per leader; a fetch may
// outlive the Poll that sent it, a commit waits for it only when its
// leader has acknowledgements, Close waits for it, and Close
// cancels it only if its own context ends first), and CommitAsync on a
// goroutine Close waits for. Close stops every goroutine a client started and
// waits for it. Times come from an injected clock so the producer can run
// step by step in tests.
//
// Lock order in the producer: a partition queue's lock, then Producer.mu,
// then the buffer pool's and the metrics' leaf locks; the partitioner's own
// locks (see package partitioner) nest under a queue lock. Producer.mu is
// never held while taking a queue lock. In the core, core.mu is a
// leaf except that a dial in manual mode releases it around the dial. In the
// consumer, Consumer.mu is a leaf; group state has its own leaf mutex.
//
// Not done yet: transactions (transactional.id), fetch sessions (every
// fetch is a full fetch). TLS and SASL (PLAIN, SCRAM, OAUTHBEARER) are
// configured with the Java client's security.protocol, sasl.* and ssl.*.
package client
