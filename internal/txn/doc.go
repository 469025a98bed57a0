// Package txn is the transaction coordinator's state machine: Kafka's
// TransactionCoordinator, TransactionStateManager and TransactionMetadata
// rules for every transactional id of one __transaction_state partition,
// and the codec of that topic's records. It behaves like Apache Kafka
// 4.3's coordinator, error codes included, for both transaction
// protocols: the classic one and KIP-890's (transaction.version 2: the
// epoch bumped at every EndTxn, partitions added by their leaders).
//
// Everything here is pure: no goroutines, no locks, no clock, no I/O.
// Time comes in as an argument (milliseconds); records to write, markers
// to send and answers to deliver come out as values
// (internal/txn/coordinator is the service that does the I/O).
//
// # What it owns
//
// Partition holds, per transactional id: the producer id, the previous and
// next producer ids, the epoch and the last epoch, the timeout, the state
// (Empty, Ongoing, PrepareCommit, PrepareAbort, CompleteCommit,
// CompleteAbort, and the transient Dead and PrepareEpochFence), the
// partitions of the open transaction, its start and last-update times, the
// transaction version its client used, and the transition in flight.
//
//   - InitProducerID: a new id at epoch 0; the epoch bumped for a known
//     transactional id (fencing the previous producer); a new producer id
//     when the epochs run out; KIP-360 recovery with ProducerId and
//     ProducerEpoch (a retry gets the same epoch, a zombie
//     PRODUCER_FENCED); an open transaction aborted first with a fencing
//     epoch bump and the request answered CONCURRENT_TRANSACTIONS;
//     INVALID_TRANSACTION_TIMEOUT above transaction.max.timeout.ms.
//   - AddPartitions (AddPartitionsToTxn v0-5 and AddOffsetsToTxn) and
//     Verify (v4+'s VerifyOnly batches: TRANSACTION_ABORTABLE for a
//     partition not in the transaction).
//   - EndTxn under both protocols: version 2 bumps the epoch and answers
//     it (EndTxn v5), tells retries from the next transaction by the
//     epoch, accepts an abort with nothing open, and moves to the next
//     producer id at epoch 0 when the bump exhausts the epochs.
//   - The markers: a prepared transaction asks for a marker per
//     partition; MarkersWritten takes the outcomes (retry, done, given up
//     as Kafka does) and writes CompleteCommit or CompleteAbort once none
//     is left.
//   - AbortTimedOut (transaction.timeout.ms: the producer fenced by an
//     epoch bump, as Kafka's periodic check does) and Expire
//     (transactional.id.expiration.ms: a tombstone).
//   - Describe and List (DescribeTransactions, ListTransactions with
//     state, producer id, duration and pattern filters).
//   - Load: Replay of the partition's records, then Loaded completes
//     every transaction found prepared by asking for its markers again.
//
// Outputs also carry Events (txn_committed, txn_aborted, txn_timed_out,
// txn_fenced, txn_id_expired) for the owner's metrics and logs.
//
// A transition is prepared (the state is marked pending, so that
// concurrent requests get CONCURRENT_TRANSACTIONS), its record handed out
// as a Write, and installed only when Appended reports it committed;
// requests are answered then. A failed write drops the pending transition
// and answers with Kafka's mapping of the append error
// (COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR, ...).
//
// record.go encodes TransactionLogKey and TransactionLogValue (versions 0
// and 1, flexible, with tagged fields) byte for byte as Kafka 4.3 does
// (record_test.go holds Kafka's own encodings); the decoders are fuzzed.
// PartitionFor is Kafka's abs(String.hashCode) % partitions.
//
// # What it does not own
//
// Routing (NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS for partitions
// not led or still loading), the wire (kmsg requests, version-dependent
// error codes such as INVALID_PRODUCER_EPOCH for old clients), producer
// ids (an injected IDSource), appending records, sending markers and
// waiting: the coordinator service does all of that. Two-phase commit
// (KIP-939, InitProducerId v6) is not served; its NextProducerEpoch field
// is decoded and kept.
//
// # Concurrency
//
// A Partition has no lock: one goroutine owns it and makes every call.
// Outputs hold no reference into its state.
//
// # Differences from Kafka
//
//   - Marker errors Kafka treats as fatal (CORRUPT_MESSAGE and the like)
//     and unknown ones are retried instead of stopping the coordinator.
//   - A record a Kafka coordinator never writes (state Dead or
//     PrepareEpochFence, or one that does not decode) is skipped at load
//     with an error, where Kafka would fail the load.
package txn
