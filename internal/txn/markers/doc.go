// Package markers is a partition leader's side of WriteTxnMarkers (Kafka's
// ReplicaManager/KafkaApis path for the markers a transaction coordinator
// sends when a transaction ends): each named partition this broker leads
// gets the COMMIT or ABORT control batch of the producer's transaction,
// appended under the partition's producer-state check (producer epoch,
// coordinator epoch, transaction version), and the answer goes once every
// appended marker is committed (acks=all). For a __consumer_offsets
// partition the group coordinator then commits or drops the producer's
// pending offsets before the answer, so that the producer's next
// transaction cannot commit offsets first.
//
// # What it owns
//
// The order of a request's work and its answer: every partition answered,
// in the request's order; a partition not led here answered with the
// lookup's code (UNKNOWN_TOPIC_OR_PARTITION, NOT_LEADER_OR_FOLLOWER), a
// refused marker with the producer state's code (INVALID_PRODUCER_EPOCH,
// TRANSACTION_COORDINATOR_FENCED, ...), a marker not committed within
// Timeout with REQUEST_TIMED_OUT.
//
// # What it does not own
//
// Finding partitions and leading them, the log and the producer state
// (Host and Partition: the broker), the group coordinator's pending
// offsets (Host.CompleteTransaction), and running the wait off the
// request's goroutine (the broker's async reply).
//
// Concurrency: Write runs on the request's goroutine and returns; the
// wait it returns runs once, on whatever goroutine the caller picks, and
// owns the answer until it returns.
package markers
