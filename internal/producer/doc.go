// Package producer is the broker's idempotent-producer state: which
// producer ids exist, and, per partition, each producer's epoch and latest
// sequences, so that a retried batch is acknowledged instead of written
// twice and a batch out of order is refused.
//
// # What it owns
//
// State is one partition's table: producer id -> epoch, the metadata of
// the producer's last five batches (sequences, offsets, max timestamp)
// and the timestamp of its latest batch. Check decides, before an append,
// whether a client's batch is new (append it), a duplicate (acknowledge it
// with the original offsets, see DuplicateError) or refused with the
// Kafka error a Kafka 4.x broker would give; Record applies a written
// batch. Rebuild replays the batch headers of the log (log.Log.ScanHeaders)
// so that a restarted broker, or a follower after truncation, recognises
// duplicates and enforces sequences as before. ExpireProducers forgets
// producers idle for producer.id.expiration.ms, measured from the batch
// timestamps, as Kafka does.
//
// Allocator hands out producer ids for InitProducerId (API 22) from blocks
// that a Reserver guarantees are never handed out twice; FileReserver
// keeps a single node's high-water mark on disk. InitProducerID holds the
// request semantics, including the answer to a transactional id
// (ErrTransactionsUnsupported).
//
// # What it does not own
//
// Transactions: no transaction coordinator, markers, last stable offset or
// aborted-transaction index. Transactional batches are refused with
// INVALID_TXN_STATE. Choosing response fields and error codes for the wire
// is the produce and InitProducerId handlers' job; this package's errors
// wrap the kerr value to use. Scheduling expiry (every
// producer.id.expiration.check.interval.ms) and snapshots of the state
// (Kafka writes them to shorten the replay at startup; we replay the
// headers from the log start) are not here either.
//
// # Concurrency
//
// State has no lock of its own. Check and Record run inside the log's
// AppendOptions.Guard and Appended hooks (State.Guard and State.Appended
// have their signatures), under the partition's append lock, so they are
// serialised with each other and atomic with the append. Every other call
// on a State (ExpireProducers, Rebuild, Reset, Entry, Entries, Len) must
// be serialised with the partition's appends by its owner too, for
// instance by running it on the goroutine that appends to the partition or
// under a lock the owner holds around log.Append: the log's own lock is
// not reachable from outside the hooks. log.AppendReplicated takes no
// hooks, so a follower must Record the batches it copies itself (for
// instance by scanning their headers from the old log end) to have a
// current state when it becomes leader.
//
// Allocator and FileReserver are shared by all partitions and safe for
// concurrent use; the allocator holds its mutex while it reserves a new
// block, one fsync per block.
package producer
