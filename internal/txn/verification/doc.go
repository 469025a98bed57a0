// Package verification is a partition leader's side of KIP-890 for
// Produce: before a transactional batch is appended, the leader asks the
// transaction's coordinator whether the partition is in the producer's
// transaction (Produce v3-11, verify only) or to add it (Produce v12+,
// transaction version 2), and appends under a guard that refuses the
// batch if the transaction ended meanwhile. Without that check a batch of
// an aborted or timed-out transaction could open a transaction no
// coordinator knows, which would hold the partition's last stable offset
// forever.
//
// # What it owns
//
//   - Produce: which partitions of a Produce request need asking (a
//     partition whose transaction is ongoing here at the batch's epoch
//     needs none: producer.State.StartVerification), one
//     Coordinator.VerifyForProduce call for all of them bounded by the
//     request's timeout, and each partition's Guard: the append guard the
//     answer calls for (the verification guard for a verify-only check,
//     the epoch check alone under transaction version 2) or the error the
//     partition is answered with (the coordinator's code, already mapped
//     to a Produce code by the coordinator: INVALID_TXN_STATE,
//     TRANSACTION_ABORTABLE, NOT_ENOUGH_REPLICAS, INVALID_PRODUCER_EPOCH;
//     REQUEST_TIMED_OUT when the request's timeout ended first;
//     INVALID_RECORD when one request's batches come from two producers).
//
// # What it does not own
//
// Batching the questions per coordinator node, sending AddPartitionsToTxn
// and mapping its codes for the Produce version (Kafka's
// AddPartitionsToTxnManager: internal/txn/coordinator, VerifyForProduce);
// the producer state and its guards (internal/producer); looking up
// topics and partitions, leadership and the append itself (the broker's
// Produce handler, through Host and Partition);
// transaction.partition.verification.enable (the caller passes it).
//
// # Concurrency
//
// Produce runs on the caller's goroutine and starts none; it waits for
// the coordinator's answer or the context. Partition.WithProducers
// serialises StartVerification with the partition's appends.
package verification
