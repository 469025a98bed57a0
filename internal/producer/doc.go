// Package producer is the broker's producer state: which producer ids
// exist, and, per partition, each producer's epoch, latest sequences,
// coordinator epoch and ongoing transaction, so that a retried batch is
// acknowledged instead of written twice, a batch out of order or outside
// its transaction is refused, and the log knows where transactions start.
//
// # What it owns
//
// State is one partition's table: producer id -> epoch, the metadata of
// the producer's last five batches (sequences, offsets, max timestamp),
// the timestamp of its latest batch, the coordinator epoch of its latest
// marker and the first offset of its ongoing transaction. Check and
// CheckVerified decide, before an append, whether a client's batch is new
// (append it), a duplicate (acknowledge it with the original offsets, see
// DuplicateError) or refused with the Kafka error a Kafka 4.x broker would
// give; a transactional batch needs a verified transaction (KIP-890 part
// 1: StartVerification and CheckGuarded, or CheckVerified where the
// coordinator added the partition itself or verification is off) unless
// it continues the producer's ongoing one. CheckMarker checks a WriteTxnMarkers marker
// (epoch rules of the classic protocol and of KIP-890's transaction
// version 2, coordinator fencing). Apply applies a written batch: it
// starts and ends transactions and reports the completed ones.
//
// State implements log.ProducerState: a log opened with it as
// Options.Producers applies every batch it writes (leader, marker,
// follower copy), restores it at open from its newest snapshot
// (AppendSnapshot/LoadSnapshot, all five batches per producer) plus a
// replay, and rebuilds it after a truncation; the log derives the last
// stable offset and the aborted-transaction index from it. Rebuild
// replays the log's headers and markers (log.Log.ScanMarkers) into a State
// kept outside a log. ExpireProducers forgets producers idle for
// producer.id.expiration.ms, measured from the batch timestamps, that have
// no ongoing transaction, as Kafka does.
//
// Allocator hands out producer ids for InitProducerId (API 22) from blocks
// that a Reserver guarantees are never handed out twice; FileReserver
// keeps a single node's high-water mark on disk. InitProducerID holds the
// request semantics, including the answer to a transactional id
// (ErrTransactionsUnsupported).
//
// # What it does not own
//
// The transaction coordinator (internal/txn) and verification (the broker
// asks it, and passes the answer as CheckVerified); the last stable offset,
// the aborted-transaction index and the snapshot files (internal/log).
// Choosing response fields and error codes for the wire is the handlers'
// job; this package's errors wrap the kerr value to use.
//
// Expiration schedules expiry: every
// producer.id.expiration.check.interval.ms it calls ExpireProducers on
// each partition the node holds (log.Log.ExpireProducers, through the
// Expirer interface), one round at a time on the clock's timer; Close
// stops it and waits for a round under way.
//
// Verification (KIP-890 part 1): StartVerification, called through
// log.Log.WithProducers before the broker asks the coordinator, returns a
// VerificationGuard; the append then runs GuardWith(guard). A marker for
// the producer ends its verification, so a yes answered before an abort
// cannot let a batch open a transaction the coordinator no longer knows
// (Kafka's guard against that race). Verifications are not snapshotted
// and expire with producer.id.expiration.ms.
//
// A State holds only a pointer to its settings (16 bytes; the states of
// a broker share one Options through NewStateWith) until its first write (an
// idempotent producer's batch, a snapshot with producers, a
// verification): a broker hosting many partitions that no idempotent
// producer writes pays nothing more for them.
//
// # Concurrency
//
// State has no lock of its own. The checks run inside the log's
// AppendOptions.Guard hook (State.Guard, VerifiedGuard and MarkerGuard
// have its signature), under the partition's append lock, so they are
// atomic with the append; a log with the State as Options.Producers calls
// everything else under the same lock (Apply, snapshots, Describe and
// ExpireProducers through log.Log.DescribeProducers and ExpireProducers).
// Other calls (Entry, Entries, Len) must be serialised with the
// partition's appends by its owner. A State kept outside a log instead
// (the older wiring: Appended hook, Record for a follower's copies,
// Rebuild after truncation) must not also be given to the log.
//
// Allocator and FileReserver are shared by all partitions and safe for
// concurrent use; the allocator holds its mutex while it reserves a new
// block, one fsync per block.
package producer
