// Package share holds the share-group (KIP-932, with KIP-1206 acquire
// modes and KIP-1222 renew) state machines of the broker: the delivery
// state of one share partition, its durable encoding, and share-group
// membership with the "simple" assignor. Everything here is pure: no
// goroutines, no locks, no clock, no I/O, no logging. Time comes in as an
// argument; records to persist come out as values.
//
// # What it owns
//
// Partition is one share partition (group, topic, partition): the
// share-partition start offset (SPSO), the end offset (SPEO) and, between
// them, the state of every offset: available, acquired by a member until a
// deadline, acknowledged, or archived, each with its delivery count. It is
// kept as a list of runs (stretches of offsets in one state), so whole
// batches cost one entry whatever their size.
//
//   - Acquire hands available records to a member under a lock of
//     share.record.lock.duration.ms (30 s): released and expired records
//     first, then records past the SPEO, within the batches the caller
//     read from the log and below the high watermark. MaxRecords is a soft
//     cap in batch_optimized mode (the log batch that reaches it is
//     completed) and a strict one in record_limit mode (batches are split).
//     share.partition.max.record.locks (2000 in Kafka 4.3) caps the window
//     the same way. Kafka 4.2's isolation of troubled records is kept: a
//     record on its last attempt goes out alone, and batches delivered at
//     least half the limit times go out in halving pieces.
//   - Acknowledge applies ACCEPT, RELEASE, REJECT, GAP and RENEW by offset
//     ranges, all or nothing per partition, with Kafka's errors
//     (INVALID_REQUEST for malformed batches or offsets past the SPEO,
//     INVALID_RECORD_STATE for offsets the member does not hold).
//   - Expire ends locks at their deadline; ReleaseMember hands back what a
//     departed member held (delivery count taken back, as Kafka does);
//     a record whose delivery ends at share.delivery.count.limit (5) is
//     archived. The SPSO moves over the acknowledged and archived prefix.
//   - AdvanceLogStart follows retention; Reset serves
//     AlterShareGroupOffsets; InitialStartOffset resolves
//     share.auto.offset.reset (latest, earliest, by_duration:ISO-8601).
//   - Stats and Lag give the metrics and DescribeShareGroupOffsets' lag.
//
// StateRecord is the durable form: a snapshot (SPSO, state epoch, every
// offset in flight as StateBatches, like WriteShareGroupState) or a delta
// (the final state of the offsets one operation changed, and the SPSO).
// Every mutating call returns the delta to persist (the zero record when
// nothing durable changed). Restore rebuilds a Partition from the records
// in write order: acquired records come back as if their lock expired, so
// nothing acknowledged is delivered again and nothing goes past the
// delivery count limit. MergeDeltas folds consecutive deltas into one
// that restores the same way (an owner's group commit). StateKey names
// the partition a record belongs to.
// The encodings are versioned and their decoders fuzzed. wire.go maps a
// StateRecord to and from the inter-broker ReadShareGroupState (a
// snapshot) and WriteShareGroupState (a delta) partitions, and Fence is a
// share coordinator's state and leader epoch check (the broker's store
// applies its own form of it). Fold merges a partition's records into the
// one snapshot a coordinator hands to a new leader.
//
// Group is one share group's membership as ShareGroupHeartbeat drives it
// (member ids chosen by clients, member and group epochs, session timeout
// 45 s, heartbeat interval 5 s, leave with epoch -1, group.share.max.size)
// and what ShareGroupDescribe reports. Assign is the assignment: each
// topic's partitions are given to ceil(S/P) of its S subscribers each,
// members' counts differ by at most one, the current assignment is kept
// where that allows. With fewer members than partitions every partition
// has one member; with more, partitions are shared. Share groups revoke
// nothing: a member moves to its target on its next heartbeat.
//
// # What it does not own
//
//   - The wire: share sessions (ShareSessionEpoch, forgotten topics,
//     group.share.max.share.sessions), version checks (RENEW needs v2 and
//     share.renew.acknowledge.enable), and turning errors into response
//     fields. Group takes and returns kmsg heartbeat and describe types;
//     everything else uses this package's types.
//   - Waiting: min bytes, max wait and the purgatory of parked ShareFetch
//     requests. CanAcquire and NextDeadline tell the owner when waiting
//     is pointless and when to wake up.
//   - The log (the owner reads batches and passes their offsets, marking
//     aborted transactional data Skip under read_committed), the store of
//     state records, topic metadata, ACLs, coordinator routing, metrics
//     export and logging.
//
// # Concurrency
//
// A Partition or a Group has no lock of its own: its owner serialises
// every call, in the order requests arrived. Results hold no reference
// into the owner's state.
//
// # How the node drives it
//
// internal/sharegroup owns every Partition behind a mutex of its own
// taken only for in-memory work (never across a log read or a state
// read, which may go to another node), and every Group under its
// registry mutex; its doc says why a mutex rather than a goroutine per
// partition: hundreds of thousands of idle share partitions cost no
// goroutine, and a slow state read stalls only the users of its own
// partition. For a share partition:
//
//  1. Load: read the partition's records from the state store (keyed by
//     StateKey) and Restore. With none, resolve the start offset with
//     ParseOffsetReset and InitialStartOffset, call New, and persist its
//     Snapshot before serving, so a restart does not resolve "latest"
//     again. Call SetLeaderEpoch with the partition's leader epoch. A new
//     leader after a leadership change does the same from the replicated
//     store.
//  2. ShareFetch: apply the piggy-backed acknowledgements first
//     (Acknowledge). Then, if CanAcquire(now), read the log from
//     NextFetchOffset(now) up to the request's byte limits and the high
//     watermark, and call Acquire with the batches read; return the log
//     batches holding the Acquired ranges and the ranges as
//     AcquiredRecords, and Config().LockDuration as
//     AcquisitionLockTimeoutMs.
//     Otherwise park the fetch; wake it when the high watermark moves or
//     an acknowledgement, release or expiry makes CanAcquire true
//     (KAFKA-19227).
//  3. Persist what comes back. Acknowledgement deltas must be durable
//     before the response reports success: a success is a promise that
//     the records are not delivered again. Acquisitions are not
//     persisted, as in Kafka, which writes share state only on
//     acknowledgement, release and expiry: the broker writes
//     StateRecord.WithoutLocks of an Acquire's delta, which keeps what
//     else the acquisition changed (expired locks, archived offsets, the
//     start offset) and drops the locks. A crash then forgets the
//     deliveries in flight: their records come back with the delivery
//     count they had before, so one delivery is counted twice and a
//     record on its last attempt may be delivered once more than the
//     limit. Expiry and release deltas are persisted too, and can be
//     written lazily: Restore ends every lock anyway. Deltas of many
//     partitions can share one append (group commit). After a few
//     hundred deltas (Kafka's
//     share.coordinator.snapshot.update.records.per.snapshot is 500)
//     persist a Snapshot; the store may then drop the key's older records.
//     If a write fails, discard the Partition and Restore it from the
//     store: its memory may be ahead of what is durable.
//  4. Timers: after each call arm one timer at NextDeadline; when it
//     fires call Expire(now), persist, and wake parked fetches. Every call
//     that takes now treats overdue locks as ended (Acquire and
//     ReleaseMember end them), so a late timer is harmless.
//  5. Membership: on a leave (a successful heartbeat with epoch -1) or a
//     fencing (Group.Expire), send ReleaseMember to the owners of every
//     share partition of the group, as Kafka's share group listener does.
//     Arm the group's session timer at Group.NextDeadline.
//  6. Admin: AlterShareGroupOffsets and DeleteShareGroupOffsets need
//     Group.Empty (NON_EMPTY_GROUP otherwise); alter calls Reset and
//     persists the snapshot (a new state epoch makes older records stale),
//     delete drops the key's records and the Partition.
//     DescribeShareGroupOffsets reports StartOffset and Lag(high
//     watermark). Retention and DeleteRecords call AdvanceLogStart.
//
// # Differences from Kafka, and what is left out
//
//   - Offsets between log batches (compacted away) and aborted batches are
//     archived when an acquisition passes over them and are not part of
//     AcquiredRecords; Kafka acquires them and waits for GAP
//     acknowledgements. Available offsets in flight that a read finds
//     missing from the log are archived, as Kafka does.
//   - In record_limit mode only the records handed out are tracked, not
//     the rest of the split batch, so the window counts a little less
//     than Kafka's against the record lock cap. Records inside the window
//     are re-acquired without regard to the cap's remaining room (Kafka
//     counts them against it when there is room).
//   - by_duration with no record that recent starts at the latest offset.
//   - The assignor follows Kafka's rule (sharing, balance, stickiness)
//     but not its exact choices, so the same group may get a different,
//     equally balanced assignment. Rack-aware assignment, the "assignable
//     partition" check (share state initialised) and
//     share.assignment.interval.ms (assignments are computed on the
//     heartbeat that sees the epoch move) are left out.
//   - Dead-letter queues (4.4), share sessions and the share coordinator's
//     own records (a broker-internal API) are not here.
package share
