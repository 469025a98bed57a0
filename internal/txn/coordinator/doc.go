// Package coordinator is a node's transaction coordinator service: it
// loads the __transaction_state partitions the node leads into
// internal/txn's state machines, serves the transactional APIs from them,
// writes their records, sends their transaction markers and drives their
// timers. It lives apart from internal/txn so that the state machine
// stays pure (no goroutine, clock or I/O can reach it) and from
// internal/broker so that the broker's handlers stay thin.
//
// # What it owns
//
//   - The requests: InitProducerId (with or without a transactional id),
//     AddPartitionsToTxn v0-5 (v4+ batches, VerifyOnly), AddOffsetsToTxn,
//     EndTxn (v5: transaction version 2), DescribeTransactions and
//     ListTransactions, kmsg in and out, with Kafka's version-dependent
//     codes (INVALID_PRODUCER_EPOCH for clients that predate
//     PRODUCER_FENCED). NOT_COORDINATOR for a transactional id whose
//     partition this node does not lead, COORDINATOR_LOAD_IN_PROGRESS
//     while it loads.
//   - Loading: when this node starts leading a partition (Elected, or
//     LeadershipChanged seeing it), its log is replayed into a new
//     txn.Partition on a loader goroutine; the partition then serves, and
//     every transaction found prepared is completed by sending its markers
//     again. Losing the leadership (Resigned) unloads it: requests waiting
//     for its writes get NOT_COORDINATOR.
//   - Writing: one writer goroutine per loaded partition appends the
//     records the state machine issues, in order, every write queued while
//     the previous append waited going into the next batch (group commit),
//     through Replica.AppendCommitted (acks=all), fenced by the
//     coordinator epoch (the partition's leader epoch).
//   - Markers: a router places each transaction's markers with its
//     partitions' leaders; one goroutine per destination node sends
//     everything queued for it as one WriteTxnMarkers request at a time
//     and reports each partition's outcome; the state machine retries
//     (NOT_LEADER_OR_FOLLOWER and the like, after retry.backoff.ms, the
//     leader looked up again) until every partition has its marker, then
//     writes CompleteCommit or CompleteAbort.
//   - The partition leader's side of KIP-890 (Kafka's
//     AddPartitionsToTxnManager): VerifyTransaction and VerifyForProduce
//     ask a transaction's coordinator, in one batched AddPartitionsToTxn
//     v5 per coordinator node at a time, whether a partition is in the
//     transaction (Produce v3-11, TxnOffsetCommit v0-4) or to add it
//     (Produce v12+, TxnOffsetCommit v5+), and map the answer as Kafka's
//     produce path and group coordinator do (ProduceError,
//     TxnOffsetCommitError).
//   - Routing: CoordinatorNode is the node FindCoordinator names for a
//     transactional id (its partition's leader, through the Host).
//   - Timers: every transaction.abort.timed.out.transaction.cleanup.interval.ms
//     timed-out transactions are aborted; every
//     transaction.remove.expired.transaction.cleanup.interval.ms idle
//     transactional ids expire.
//
// # What it does not own
//
// The state machine and the record format (internal/txn); the topic's
// creation (the broker, through kraft.AutoTopicCreationManager, when
// CoordinatorNode finds no topic on the first FindCoordinator of a
// transactional id: DefaultTopicPartitions and friends, TopicConfigs);
// which Produce batches need verifying and the guards they are appended
// under (internal/txn/verification, which calls VerifyForProduce);
// replication and the commit rule (internal/replica); writing markers
// into partitions (the broker's WriteTxnMarkers handler and
// internal/log); producer ids (the Host's allocator); FindCoordinator's
// other key types; authorization.
//
// # Concurrency
//
// Partition i belongs to shard i % Shards, whose one goroutine owns its
// state machines, the requests waiting on them and their slots; callers
// queue closures and wait on a channel or their context. A shard never
// blocks: writes go to the partition's writer and markers to the sender
// through unbounded queues (a mutex each, a leaf). Loaders, writers, the
// router and the per-node senders hold no lock while they do I/O and
// report back by queueing a closure on the shard; results meant for a
// partition that was unloaded or reloaded meanwhile are dropped. The
// verifier has one goroutine per coordinator node it asked, sending one
// request at a time. Every goroutine belongs to the Coordinator: Close
// stops them and waits.
package coordinator
