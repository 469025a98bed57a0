// Package cleaner compacts the logs of topics whose cleanup.policy
// includes compact: it keeps the latest record of each key, removes
// tombstones once delete.retention.ms has passed since the cleaning that
// first kept them, removes the batches of aborted transactions and, in
// time, their markers, and never renumbers an offset. It is Kafka's log
// cleaner, with Kafka's settings and semantics.
//
// # What it owns
//
//   - The planner (plan.go): for each compacted log, the dirty range a
//     round may clean (from the cleaner's checkpoint up to the first
//     segment holding the active segment, the high watermark or last
//     stable offset, the recovery point, or a record younger than
//     min.compaction.lag.ms), its dirty ratio, and whether
//     max.compaction.lag.ms has passed; and which log to clean next (the
//     dirtiest of those past min.cleanable.dirty.ratio or the lag). Pure
//     functions, tested with transcripts (testdata/plan.txt).
//   - A round (clean.go): the key map of the dirty range, then every
//     closed segment below the round's end rewritten in groups of at most
//     segment.bytes, each group swapped in as one segment by the log.
//   - The bounded key map (keymap.go): 16-byte entries (a 96-bit key hash
//     and a 32-bit offset delta) within each worker's share of
//     log.cleaner.dedupe.buffer.size, growing on demand.
//   - Transaction decisions (txn.go): which batches were aborted, when a
//     marker may go, from the Transactions interface (the log's own
//     aborted-transaction index and last stable offset by default).
//   - The workers (cleaner.go): log.cleaner.threads goroutines owned by
//     the Cleaner, log.cleaner.backoff.ms between looks when nothing is
//     dirty, one shared I/O throttle (log.cleaner.io.max.bytes.per.second),
//     and the checkpoint file cleaner-offset-checkpoint in each log
//     directory (checkpoint.go, Kafka's format).
//   - The workers' CPU priority (priority.go, weir.log.cleaner.nice):
//     with a positive nice each worker locks an OS thread of its own and
//     gives it that nice value and the lowest best-effort I/O priority,
//     so that the kernel runs the broker's produce and fetch paths first
//     when they and a round want the same core. A worker that stops puts
//     its thread's priority back before unlocking it; where it cannot,
//     the thread stays locked and ends with the worker (the runtime parks
//     the main thread for good instead), so no broker goroutine ever runs
//     at the cleaner's priority. Where the priority is refused the
//     workers run as they are, logged once.
//   - Its Prometheus metrics (metrics.go).
//
// # What it does not own
//
// Files: the log (internal/log) reads its closed segments for it, writes
// the cleaned segment and swaps it in atomically (internal/log/swap.go),
// and refuses keyless records on compacted topics. Retention of
// compact,delete topics stays the broker's retention pass over the log.
// Which partitions exist, their high watermark, producer state and
// transactions come from the broker through Partition's hooks.
//
// # Concurrency
//
// Each worker owns its key map and buffers and cleans one partition at a
// time; a partition is cleaned by one worker at most (busy, under
// Cleaner.mu). Cleaner.mu guards the partition registry, checkpoints in
// memory and metric state and is never held across a call into a log or
// any I/O: views are taken, and rounds run, without it. Checkpoint files
// are written under ckMu, which is taken before Cleaner.mu, never after.
// A round takes the log's lock only for the in-memory copies and swaps
// the log makes; appends to the active segment never wait for it. Remove
// cancels a round of the partition in progress and waits for it to stop;
// Close stops and waits for every worker.
package cleaner
