// Package log is a partition's durable log: Kafka v2 record batches stored
// byte for byte as received, once the broker has stamped their offsets.
//
// # What it owns
//
// A directory per partition holding segments. A segment is a .log file of
// consecutive batches named after its base offset (20 zero-padded digits),
// plus a sparse offset index (.index) and a time index (.timeindex) that
// are rebuilt from the .log whenever they are missing or do not check out.
// A checkpoint file records the recovery point (everything below it was
// fsynced), the log start offset and the high watermark the replica last
// noted (NoteHighWatermark; NotedHighWatermark reads it, the replica's
// only copy; CheckpointedHighWatermark reads back the checkpoint's on
// open). The on-disk format and the recovery rule are written down in
// docs/DESIGN.md.
//
// Append validates a batch (sizes, magic 2, CRC-32C, record structure,
// count and offset deltas, timestamps, decompressing gzip, snappy, lz4 and
// zstd batches to check them but storing them unchanged), assigns offsets,
// and writes it; a rejected batch leaves the log untouched and the error
// wraps the Kafka error code to answer with. Read returns file ranges that
// a fetch can send with sendfile. The log also answers timestamp lookups,
// truncates to an offset (for replication), deletes whole segments for
// retention.ms / retention.bytes and DeleteRecords, and rolls segments by
// segment.bytes and segment.ms.
//
// # Transactions
//
// Control batches (transaction markers: ControlType COMMIT or ABORT in the
// key, the coordinator epoch in the value, both version 0, as Kafka
// writes them) are written by the partition leader with AppendMarker
// (WriteTxnMarkers) and copied by followers with AppendReplicated like
// any batch; a client's Append of a control batch is refused. ValidateBatch
// decodes a control batch's marker into BatchInfo.Marker, ParseMarker does
// it for a stored batch, MarkerBatch builds one.
//
// With Options.Producers (making a ProducerState; internal/producer's
// State) the log keeps the partition's producer state in step with its
// batches; a never-written lazy log makes it at its first append or the
// first call of Producers, so an idle partition holds none. The log
// applies every batch written (leader, marker, follower), so the state
// knows each producer's ongoing transaction and its first offset. From it
// the log derives:
//
//   - LastStableOffset(hw): the smallest of hw, the first offset of every
//     ongoing transaction and of every completed one whose marker hw has
//     not passed. read_committed reads stop there (ReadIsolated), and
//     ListOffsets latest with read_committed answers it.
//   - An aborted-transaction index per segment (AbortedTxn entries:
//     producer id, first offset, marker offset, last stable offset once
//     aborted; the .txnindex file in Kafka's format), appended when an
//     abort marker is written, in the segment holding the marker, written
//     with the segment's other indexes, truncated with the log, deleted
//     with the segment, trusted below the recovery point and rebuilt by a
//     replay above it.
//   - Producer snapshots (.snapshot files at rolls and Close), so that
//     recovery and truncation replay only the batches after the newest
//     usable snapshot; without one the whole log is replayed.
//
// What a cleaner (compaction) asks: AbortedTransactions(from, to) lists
// the aborted transactions whose records lie in [from, to) (drop a
// producer's transactional records from FirstOffset until its marker at
// LastOffset); ScanMarkers walks batch headers with each control batch's
// decoded marker (markers are where IsControl is set; a marker must be
// kept until the delete horizon, and cleaning stops below
// LastStableOffset). A cleaned segment (swap.go) keeps the AbortedTxn
// entries of the segments it replaces whose marker it kept (offsets do
// not change under compaction); the others' records went with their
// marker.
//
// # Compaction
//
// A log whose Config.Compact is set (cleanup.policy includes compact)
// refuses records without a key. For the cleaner (internal/cleaner) the
// log offers CleanerView (its closed segments, copied under the lock),
// EachCleanableBatch (their batches, read without it), BatchFilter (a
// batch rewritten with the records a cleaner keeps: same codec and
// offsets, a delete horizon when it keeps a tombstone) and
// NewCleanedSegment, whose Commit swaps a cleaned segment in for a group
// of closed ones atomically on disk (swap.go: .cleaned, .swap, rename;
// Open finishes or drops a swap cut short). Offsets are never
// renumbered: batches in a segment may leave gaps, which reads, recovery
// and followers (AppendReplicated) accept.
//
// # What it does not own
//
// The high watermark (callers pass it to reads and retention), the
// producer checks (the Guard hook of AppendOptions runs the idempotence
// and transaction checks under the append lock; the ProducerState's rules
// are internal/producer's), topic configuration parsing, and scheduling of
// retention checks.
//
// # Durability
//
// By default the log relies on the page cache, as Kafka does: data is
// fsynced when a segment is sealed, every flush.ms, once flush.messages
// records are unflushed, about once a second while unsynced data is left
// (BackgroundSync; off, exactly Kafka's defaults), and at Close.
// CloseAll closes many logs with the filesystem synced three times in
// place of each log's own fsyncs (its segment, indexes, producer snapshot,
// checkpoint and directory): the data and indexes are synced before any
// checkpoint is written, the checkpoints are written to temporary files
// and synced before any is renamed into place, so that no checkpoint
// names data a crash could still take.
//
// With SyncBeforeAck the caller waits in WaitDurable before
// acknowledging; concurrent waiters share one fsync (group commit), so the
// cost of durability falls as load rises.
//
// # Block reservation
//
// Once the active segment holds 1 MiB it keeps blocks reserved past its
// end (Preallocate, fallocate with the file size unchanged; as much as it
// holds, at most 16 MiB) so that appends do not wait on the filesystem's
// block allocation while writeback holds the file; sealing and Close give
// the rest back. docs/DESIGN.md has the measurement behind it.
//
// With Preallocate the active segment also writes zeros ahead of its end
// once it holds 128 KiB, 128 KiB at a time (fill), so that appends of a
// few KiB overwrite pages already in the page cache instead of adding them
// one by one: half the CPU of such an append. The file's size is then up
// to 128 KiB past the log's end; sealing and Close cut it back, and
// recovery cuts the zeros a killed process left as it cuts a torn tail.
//
// # Many partitions
//
// A broker may hold far more partitions than it writes to. Two options keep
// an idle partition cheap. Options.Syncer shares one Syncer, a fixed pool
// of goroutines, among all logs instead of a goroutine and a ticker per
// log; a log costs it nothing while it has no background work. Options.Lazy
// makes Open of a directory that does not exist create nothing: the log
// reads as empty at offset 0, and the directory and first segment appear
// with the first append (its checkpoint and the directories' fsyncs with
// the first flush, which does them before anything counts durable: not
// on the append's path), so a never-written partition holds no file, no
// goroutine and only its in-memory struct: the Log's few fields, reading
// a shared empty body; its own body (segments, durability, transactions,
// syncer bookkeeping) comes with the first append. Logs opened with one
// Options.Env share their logger, clock and Syncer, logs with equal
// settings share one Config (and, with one Env, one pointer to it and the
// Env, which a log holds as one field; a topic config change keeps them
// shared), and a topic's logs share their directory's prefix, so a
// never-written log costs 64 bytes of heap (BenchmarkManyLogs, with an
// Env of its own: 144). A caller that keeps a pointer per partition can
// keep none of those: the blank log of a log's settings (Log.Blank,
// blank.go) reads as every never-written log of that Env and settings
// does and is never written, so it can stand for them until the caller
// opens a partition's log again to write it (internal/replica does).
//
// # Open files
//
// A segment's .log file is a handle of a Files cache (files.go), shared
// by the logs of an Env (Options.Files; by default one per process, as
// the descriptor limit is): at most half of RLIMIT_NOFILE's soft limit
// (which Go raises to the hard limit at start; weir.log.max.open.files
// overrides it) are open at once, and the file of an idle segment is
// closed, by a clock over the open handles, and reopened on its next use.
// The index, time index and aborted-transaction index files are opened
// only to be written or loaded, so a partition with data costs at most
// one descriptor per segment, an idle one none, and a broker may host
// more partitions than it has descriptors. Never closed: a handle pinned
// by an append, a sync, a truncation or a read doing I/O in the log; one
// whose file a read handed out as a FileRange within the last 30 s (a
// client's request timeout: the fetch sends it after Read returned), as
// long as the bound can be kept without it, and within the last second in
// any case; one of a deleted or cleaned-away segment (its name is gone, so it closes
// when its delete delay ends, as before). Closing loses nothing: the
// segment's synced mark stays, and the next flush reopens the file to
// fsync it (fsync covers the file, whatever descriptor wrote it); zeros
// and blocks reserved ahead of the end are the file's and are trimmed
// through whichever descriptor is open. An open, an index or a
// checkpoint write that meets EMFILE or ENFILE closes idle files and
// tries once more; if it still fails the request fails with a retriable
// error, and OnIOError is not told: running out of descriptors is no
// disk failure.
//
// # Concurrency
//
// Appends, truncation and retention serialise on one mutex held only for
// in-memory updates and the write(2) of the batch; validation runs before
// it is taken. Reads copy segment views under the mutex and do their I/O
// without it: index entries below a published length are never rewritten
// (truncation copies), and deleted segments keep their files open for
// FileDeleteDelay so that ranges already handed out stay readable.
// Truncation, retention, DeleteRecords, Close and the cleaner's swap also
// serialise on segMu, taken before the mutex; the swap renames files with
// segMu held and the mutex free, so appends never wait for it.
//
// Background work (the fsyncs for WaitDurable, flush.ms, flush.messages
// and sealed segments, their index writes, the periodic checkpoint,
// closing files of deleted segments) is done by the log's Syncer in passes that never
// overlap for one log. Who owns the goroutines: a Syncer made with
// NewSyncer owns its pool, and its creator closes it after the logs that
// use it; a log opened without one owns a private one-goroutine Syncer,
// started at Open (or at the first append of a lazy log) and stopped by
// Close. Log.Close detaches the log from its Syncer, waiting for a pass in
// progress, before the final flush. Flushes of one log (passes, Flush,
// Close) are serialised by its flushMu. Lock order: flushMu, segMu (a
// flush takes it only around its index writes, so that no retention,
// truncation or swap changes the files it writes; nothing takes flushMu
// holding segMu), Log.mu, then a segment file handle's mu, then the
// Files cache's mu (the cache's sweep takes a handle's mu only with
// TryLock), and the Syncer's mu, which is a leaf; the
// Syncer never takes a log's lock while holding its own. Checkpoint writes, which are rare, happen with the log's
// mutex held so that they land in the order the state changed.
package log
