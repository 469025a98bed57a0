// Package broker is a Kafka broker's request handling: it implements
// server.Dispatcher with one handler file per API key (NN_name.go), each
// declaring the versions it serves next to its code, so ApiVersions and
// docs/API.md are derived from the handlers, never kept by hand.
//
// # What it owns
//
// The registry of topics and partitions this node serves, projected from
// the replicated metadata image (registry.go): one goroutine applies
// every update of the metadata log in order, opening a replica (a lazy
// log wrapped in an internal/replica Replica) for each partition this
// node replicates, switching it to leader or follower, closing and
// removing those it no longer holds. Request handlers only read the
// registry; changes go to the controller (quorum.go): CreateTopics,
// DeleteTopics, CreatePartitions, config changes (topic, broker and GROUP
// resources), producer-id blocks, ElectLeaders and reassignments are
// validated here and decided by the active controller, and the handler
// answers once this node applied the outcome. Every node runs a node of
// the metadata quorum (internal/kraft): a single node is a quorum of
// one on the same path. The broker's lifecycle (registration, heartbeats,
// controlled shutdown on SIGTERM) and the controller's own APIs
// (BrokerRegistration, BrokerHeartbeat, AlterPartition, ...) are served
// here too (controller_apis.go).
//
// Replication (replication.go): leaders serve followers' Fetch requests
// up to their log end and move the high watermark; followers are fed by
// the replica Manager's fetchers over the Kafka protocol; proposed ISR
// changes go to the controller as AlterPartition through
// internal/alterpartition (replication.go is its Host). Produce appends through
// the replica; acks=all waits for the high watermark. A follower's fetch
// naming a leader epoch this node has not applied yet (it learnt of this
// node's promotion first) is held, not refused, and the metadata loop
// wakes the fetches parked on every partition whose leadership it changed
// once the replica has its new role; a DivergingEpoch answer goes out at
// once. Produce and Fetch
// answers that fail with NOT_LEADER_OR_FOLLOWER carry KIP-951 leader hints
// (leader_hints.go). While this node runs the active controller it also
// fences brokers whose listener refuses connections (kraft.Node.ProbeLiveness), so a
// killed broker's leaderships move in well under a second.
//
// The log cleaner (internal/cleaner, wired in cleaner.go) gets every
// replica's log once it has records below the high watermark (at open,
// or at its first high watermark move) and gives it back before it closes; it
// compacts those of compacted topics, __consumer_offsets among them,
// below the partition's high watermark. __share_group_state is never
// compacted: its coordinator trims it (internal/sharestate).
//
// The group coordinator serves the __consumer_offsets partitions this
// node leads (FindCoordinator answers with the leader of the group's
// partition) and is reloaded when that set changes; other nodes' groups
// get NOT_COORDINATOR. Group offsets are written like acks=all produce.
//
// Transactions are served by internal/txn/coordinator (transactions.go
// is its Host and has __transaction_state created, through
// kraft.AutoTopicCreationManager, on the first FindCoordinator of a
// transactional id); the handlers 22, 24-26, 65 and 66 call it, 28
// verifies with it and calls the group coordinator, 27 writes markers
// through the replicas and completes transactional offsets, 61 reads the
// log's producer state. Each partition's log drives its producer state
// (idempotence, transactions, the last stable offset); a transactional
// Produce is verified with the transaction's coordinator before it is
// appended (KIP-890: internal/txn/verification, which verifyProduce
// calls).
//
// Share groups (KIP-932) are served by internal/sharegroup over
// internal/sharestate (shares.go is their view of this node: topics, led
// partitions, the group coordinator's records, group configs, the
// inter-broker transport); the handlers 76-79, 84, 85 and 90-92 call them,
// and ShareFetch's records are spliced into its encoding here
// (internal/splice).
//
// # What it does not own
//
// Framing, headers and reply ordering (internal/server); batch validation
// and storage (internal/log); the acknowledgement rule (internal/replica:
// Acked, WaitAcked, AppendCommitted); group semantics (internal/group);
// share groups and their state (internal/sharegroup,
// internal/sharestate); transactions (internal/txn,
// internal/txn/coordinator); sequence and epoch rules (internal/producer);
// config names, defaults and validation (internal/config); config
// resources, the settings in force and the controller's config policy
// (internal/configadmin; configs.go is its Host); fault
// injection (internal/fault); compaction (internal/cleaner).
//
// # Concurrency
//
// Serve runs on each connection's reader goroutine, one request at a time
// per connection, so appends from one producer connection keep their
// order. A replica's append wakes the fetches parked on its partition
// once (OnHighWatermark when it moved the high watermark, else OnAppend). Background goroutines, all started by New and stopped by Close:
// the metadata loop, the retention loop, the producer expiry loop, the
// transaction coordinator (closed by Close before the replicas), and in a cluster the liveness
// prober, the ISR shrink loop (replica.ExpireISR) and the ISR change sender
// (alterpartition.Manager.Run); the replica Manager's fetchers. Work that waits (a fetch below MinBytes, an acks=all produce on a
// topic that fsyncs before acknowledging, JoinGroup and SyncGroup) runs on
// a goroutine owned by the Broker, completes a pending reply, and is
// cancelled and waited for by Close. Parked fetches register a waiter on
// every partition they read and are woken by appends; they never poll.
//
// Broker.mu guards the topic maps, each topic's partitions slice and
// config map (replaced, never changed in place). It is taken before a
// log's own lock, never after (see docs/LOCKS.md). Idempotence checks run
// inside the log's append hooks, under the log's lock, atomic with the
// append.
//
// # Fetch without copies
//
// Fetch responses are encoded by kmsg with a unique marker in place of
// each partition's records, then cut at the markers: the records go from
// segment files to the socket as file ranges (sendfile), never through
// user space (internal/splice).
//
// # Null storage (benchmarking only)
//
// With Config.NullStorage a produce is acknowledged without being
// validated or stored (offsets still advance), and a consumer's fetch is
// answered from memory with the partition's largest produced batch
// repeated at rewritten base offsets (internal/nullstore): the ceiling a
// client and loopback reach on this machine, for bench/compare.
package broker
