// Package group is the broker's group coordinator: classic consumer groups
// (JoinGroup, SyncGroup, Heartbeat, LeaveGroup), consumer-protocol groups
// (KIP-848: ConsumerGroupHeartbeat, ConsumerGroupDescribe), streams groups
// (KIP-1071: StreamsGroupHeartbeat, StreamsGroupDescribe), committed
// offsets (OffsetCommit, OffsetFetch, OffsetDelete, and TxnOffsetCommit
// inside transactions) and group administration (DescribeGroups,
// ListGroups, DeleteGroups). It behaves like Apache Kafka's group
// coordinator, error codes included, so that unmodified Kafka clients work
// against it.
//
// # What it owns and what it does not
//
// It owns all group and offset state and its durable encoding (records.go).
// It does not own:
//   - the wire: the broker decodes requests, calls a Coordinator method
//     with the kmsg request, and encodes the response it gets back;
//   - routing: FindCoordinator, NOT_COORDINATOR for groups another broker
//     coordinates, and ACLs (DescribeGroups' AuthorizedOperations is left
//     at its default for the broker to fill);
//   - storage: records go to a Store, which the broker backs with its
//     __consumer_offsets log (MemStore in tests). The coordinator answers
//     a request only after the records it produced are appended;
//   - topics: a Topics view the broker implements over its metadata; the
//     broker calls TopicsChanged when topics come, go or grow (consumer
//     groups are then reassigned and offsets of deleted topics dropped).
//
// # Concurrency model
//
// Groups are hashed over a fixed number of shards (Config.Shards). Each
// shard has one owner goroutine (shard.run) that alone reads and writes its
// groups, offsets and timers; nothing in a shard is locked. Every public
// method turns its request into a closure queued on the shard's channel and
// waits for the answer, so requests for one group are applied in arrival
// order and never race. The closures are built only by the typed methods of
// Coordinator; the queue is internal.
//
// JoinGroup and SyncGroup may have to wait for other members. Their closure
// then parks a reply function in the member (joinWaiter, syncWaiter) and
// returns at once, leaving the loop free; a later event (another member's
// join, the leader's sync, a timer) answers it. The caller waits on a
// one-slot channel or its context, whichever comes first, so the broker
// runs these calls off its request path. An abandoned waiter is harmless:
// its answer lands in a buffered channel nobody reads.
//
// Timers (session timeouts, rebalance and join timeouts, the initial
// rebalance delay, revocation timeouts, the offset expiry sweep) come from
// the injected Clock. A firing timer only queues an op; the op checks that
// the timer is still the current one for its key, so a rescheduled or
// cancelled timer that fires late does nothing. With a ManualClock, tests
// decide exactly when time passes.
//
// Store.Append runs on the owner goroutine, so a slow store delays the
// shard's other groups. This trades throughput under a slow log for a
// simple, obviously ordered state machine; shards bound the blast radius.
//
// Close stops every shard; parked joins and syncs get NOT_COORDINATOR, as
// when Kafka unloads a coordinator.
//
// # Transactional offsets
//
// TxnOffsetCommit writes a group's offsets as a transactional batch of
// the producer (TxnStore.AppendTxn) after Kafka 4.3's generation and member
// checks; they stay pending, by producer id, until the broker reports the
// transaction's marker in the group's __consumer_offsets partition
// (CompleteTransaction; Config.PartitionOf maps groups to partitions). A
// COMMIT makes them committed unless a plain commit of the partition was
// written after them; an ABORT drops them. Meanwhile OffsetFetch with
// RequireStable answers UNSTABLE_OFFSET_COMMIT for the partition, its
// committed offset does not expire and its group is not deleted by
// expiry. OffsetDelete and DeleteGroups drop pending offsets with the
// committed ones. Replay rebuilds them from the records Store.Replay marks
// Transactional and resolves them with the Control records (markers)
// that follow.
//
// # Classic groups
//
// States Empty, PreparingRebalance, CompletingRebalance, Stable (Dead
// groups are simply removed). JoinGroup v4+ hands dynamic members their id
// with MEMBER_ID_REQUIRED; static members (group.instance.id, v5+) that
// restart take over their old id's place and assignment, without a
// rebalance when the group is Stable and its protocol choice holds (v9+
// tells the leader to skip the assignment). The first rebalance of an
// empty group waits group.initial.rebalance.delay.ms, extended while new
// members keep arriving, within the rebalance timeout. The group's
// metadata and assignment are persisted when the group is created, when
// the leader's SyncGroup completes a generation, when a static member is
// replaced, and when the group becomes empty.
//
// # Consumer-protocol groups
//
// A heartbeat that changes membership, subscriptions or subscribed topics
// bumps the group epoch; the target assignment is then recomputed at once
// by the "uniform" (default, sticky and balanced) or "range" server
// assignor. Members reconcile toward it with incremental revocation
// (reconcile.go): a partition changes hands only after its previous holder
// stopped reporting it, so no partition is ever held by two members. A
// member that does not revoke within its rebalance timeout, or stops
// heartbeating for group.consumer.session.timeout.ms, is fenced. Static
// members may leave with epoch -2 and come back under a new member id.
// Subscription regexes (v1) are Go RE2 patterns matched against whole topic
// names, internal topics excluded. As in Kafka, a regex is resolved for the
// whole group by a heartbeat, to the topics that heartbeat's principal may
// DESCRIBE (Client.Describable), and the resolution is stored and shared by
// every member subscribed to it until a later heartbeat resolves again:
// when a member brings a new regex, after topics changed, or
// RegexRefreshInterval after the last time (regex.go). Commits with a member epoch older than
// the member's are accepted for partitions it held at that epoch
// (KIP-1251).
//
// # Streams groups
//
// A streams group's membership, topology and task assignment are
// internal/streamsgroup's pure state machine (group.streams); this package
// gives it its place in the id namespace, stores its values as records of
// types 5 and 6, runs its session (Config.Streams.SessionTimeout) and
// revocation timers, and reconfigures it when TopicsChanged is called.
// StreamsGroupHeartbeat returns, beside the answer, the repartition and
// changelog topics the group lacks, for the broker to create. Offsets of
// a streams group are committed by members at their current epoch only
// (OffsetCommit v9+; STALE_MEMBER_EPOCH, or ILLEGAL_GENERATION for
// TxnOffsetCommit). Like consumer groups, an empty streams group gives
// way to a JoinGroup or a ConsumerGroupHeartbeat, an empty group of
// another protocol to a streams group, and a live one answers the other
// protocols with INCONSISTENT_GROUP_PROTOCOL or GROUP_ID_NOT_FOUND.
//
// # Left out
//
//   - Online migration between protocols: an empty group switches protocol
//     freely, but a classic JoinGroup to a consumer-protocol group with
//     members gets INCONSISTENT_GROUP_PROTOCOL, and a ConsumerGroupHeartbeat
//     to a live classic group gets GROUP_ID_NOT_FOUND (Kafka can convert
//     such groups member by member).
//   - Rack-aware assignment: RackId is stored and described, not used.
//   - Share groups (another package's business).
//   - Per-group configuration overrides (consumer.session.timeout.ms and
//     friends as group configs): the Config values apply to every group.
//   - Prometheus metrics: Stats exposes the counters for the broker to
//     export.
//   - The persisted state does not record which topics a consumer group
//     was subscribed to (only what its regexes resolved to); after a
//     restart each group's target is recomputed and the epoch bumped only
//     if it changed.
//   - If Store.Append fails during a consumer heartbeat the member is told
//     so but the in-memory change stays; the durable state catches up with
//     the next successful write of that member.
package group
