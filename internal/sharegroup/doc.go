// Package sharegroup serves share groups (KIP-932) on one node: Kafka's
// SharePartitionManager (share sessions, the share partitions this node
// leads, ShareFetch and ShareAcknowledge, parked fetches, acquisition
// lock expiry) together with the share-group side of Kafka's group
// coordinator (ShareGroupHeartbeat and ShareGroupDescribe, group configs,
// the share-group offsets admin APIs). Its entry point is the Manager.
//
// # What it owns
//
// The registry of share groups and share partitions, their sessions and
// timers, the reads of data partitions for acquisition (batch headers
// only; records go out as file ranges or, for a batch acquired in part,
// trimmed copies: trim.go), and when a share partition's state is written
// (every change's record queued in order; a snapshot every SnapshotEvery
// records) and loaded (first use, a failed write, a leadership move).
//
// # Acknowledgements and their durability
//
// An acknowledgement is applied to the share partition in memory at once
// and its record queued to the state store; as in Kafka, the answer that
// reports it (ShareFetch's AcknowledgeErrorCode, ShareAcknowledge's
// ErrorCode) waits until that record is durable, so a success promises
// the records are not delivered again. A ShareFetch acquires its next
// records while its acknowledgements are written.
//
// weir's own consumer may ask for less (wiretag.ShareFetchDeferAcks, on
// its record_limit ShareFetch): the answer goes once the records are
// acquired, without waiting for the acknowledgements' write, which stays
// pending with the member's share session (deferred.go). The member's
// next ShareAcknowledge (a commit), ShareFetch without the tag, or
// session close waits for every pending write first; a write that failed
// is reported on the member's next answer for that partition, and the
// partition is restored from the store at its next use, so the records
// are delivered again. The guarantee for those acknowledgements is
// at-least-once until a request that waits has answered, as it is for
// any acknowledgement when a broker crashes before its write. Requests
// without the tag (every other client's) behave as Kafka's. The deferred
// writes of one partition are gathered for a few milliseconds and written
// as one record (groupcommit.go); a request that needs their outcome
// writes them at once.
//
// # What it does not own
//
//   - The state machines: internal/share (share.Partition, share.Group).
//   - Where state lives: a StateStore (internal/sharestate, Kafka's
//     persister and share coordinator over __share_group_state).
//   - The node: topics, data partitions, the group coordinator's
//     namespace and records, group configs in the metadata log, and the
//     clock come through Host, which internal/broker implements.
//   - The wire: internal/broker's handlers (76-79, 90-92) decode the
//     request, call the Manager and encode its answer; ShareFetch records
//     are spliced into the encoding there (Fetch.Response marks where).
//
// # Concurrency
//
// A share partition is guarded by a mutex rather than owned by a
// goroutine: a node may host hundreds of thousands of share partitions,
// most of them idle, and a mutex costs an idle one nothing. Every share
// partition has a mutex held only for in-memory work: its
// state machine, its parked fetches, its place in the timers. Nothing
// holds it across I/O: the log is read for acquisition with it released
// (the state machine refuses a read another acquisition overtook,
// share.ErrStaleRead, and the read is done again), and loading the state
// from the share coordinator, which may be another node and may take
// seconds, releases it too, marking the partition loading. Other users of
// that partition wait for the load (on a channel, bounded by their
// context); other partitions and groups are not held up
// (TestSlowStateReadStallsNoOtherPartition). Manager.mu guards the
// registry and each share.Group, taken before a partition's mutex; smu
// guards the sessions (with their deferred acknowledgement writes) and is
// taken alone; the writes are waited for after it is released. The timers' goroutine runs lock
// expiries, session timeouts and the release of a closed connection's
// session; arming a timer never blocks. Writes go to the StateStore,
// which never blocks on the network: callers wait for its tickets after
// unlocking. The Manager owns the timers' goroutine; Close stops it.
package sharegroup
