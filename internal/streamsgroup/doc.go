// Package streamsgroup is the state machine of one Kafka Streams group
// (KIP-1071, group.protocol=streams): topology registration and
// validation, members joining, leaving and being fenced by epoch, the
// sticky task assignor (active and standby tasks), reconciliation of each
// member toward its target without ever letting two members process one
// active task, the heartbeat's answers (assignment, Status codes
// STALE_TOPOLOGY, MISSING_SOURCE_TOPICS, INCORRECTLY_PARTITIONED_TOPICS,
// MISSING_INTERNAL_TOPICS, SHUTDOWN_APPLICATION, and the
// endpoint-to-partitions map for interactive queries), the group's
// StreamsGroupDescribe view, and the durable encoding of its state.
//
// # What it owns and what it does not
//
// A Group is pure: Heartbeat, Leave, Remove and RecheckTopics change it
// and return what changed (Changes: the group record and member records
// to write, members to tombstone) and which internal topics the broker
// must create (NewTopic). It reads topics only through TopicView. It does
// not own:
//   - the group id namespace, committed offsets, ListGroups, DescribeGroups
//     and DeleteGroups: internal/group keeps a Group beside its classic and
//     consumer groups, under the same id space and __consumer_offsets
//     partition, and answers those APIs;
//   - time: session and rebalance timeouts are run by the owner, which
//     calls Remove when one expires;
//   - topic creation: the broker creates what Result.Create lists and
//     reports topics changed, upon which the owner calls RecheckTopics.
//
// # Concurrency
//
// None: a Group is used by one owner goroutine (internal/group's shard).
//
// # Left out (Kafka 4.3 has them)
//
//   - Static membership (group.instance.id) is refused with INVALID_REQUEST,
//     as Kafka 4.3 refuses it for streams groups.
//   - Source topic regexes are refused with INVALID_REQUEST ("not supported
//     yet"), as in Kafka.
//   - Warmup tasks are never assigned (members' reports of them are still
//     reconciled; Streams 4.3 itself warns that the streams protocol does
//     not use them); rack- and client-tag-aware standby placement is not
//     done. Standbys go only to tasks of subtopologies with a state store.
//   - Topology updates of a group with other live members are refused
//     ("Topology updates are not supported yet."); a group that is empty,
//     or whose only member rejoins, takes the new topology.
//   - Per-group configuration (streams.num.standby.replicas and friends as
//     group configs): the Config values (the broker's group.streams.*)
//     apply to every group.
//   - Version 1 of the heartbeat and describe (KIP-1331's topology
//     description): Kafka 4.3 clients speak version 0.
package streamsgroup
