// Package assign holds the classic consumer group's client-side assignors:
// range, round robin and cooperative sticky, under the names the Java
// client registers them with ("range", "roundrobin", "cooperative-sticky").
//
// # What it owns, what it does not
//
// Pure functions from the group's members (subscriptions, owned partitions,
// generations) and the partition count of each topic to a plan: member ->
// topic -> partitions. The group leader runs one inside the consumer; the
// encoding of member metadata and assignments, the join/sync protocol and
// the revocation callbacks are the client package's.
//
// Range and round robin follow the Java assignors' orderings exactly, so a
// weir leader and a Java leader produce the same plan for the same group.
// Cooperative sticky keeps every valid owned partition it can while
// balancing counts to within one among members with the same subscription,
// and never hands a partition to a new owner in the same rebalance that
// takes it from the old one: that partition stays unassigned until the
// owner has revoked it and the follow-up rebalance runs (the cooperative
// protocol's two phases). It is not a transcription of Java's
// AbstractStickyAssignor; plans may differ from Java's in which partitions
// move, not in balance or stickiness guarantees.
//
// # Concurrency
//
// Stateless; safe for concurrent use.
package assign
