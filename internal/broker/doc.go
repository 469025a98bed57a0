// Package broker is a Kafka broker's request handling and the wiring of
// one node: it implements server.Dispatcher with one handler file per API
// key (NN_name.go), each declaring the versions it serves next to its
// code, so ApiVersions and docs/API.md are derived from the handlers.
// docs/DESIGN.md walks the Produce, Fetch and ShareFetch paths step by
// step and maps every file.
//
// # What it owns
//
// The registry of topics and partitions this node serves, projected from
// the replicated metadata image (registry.go): one goroutine applies each
// update of the metadata log in order, opening a replica (a lazy log in
// an internal/replica Replica) for each partition this node replicates,
// handing roles to the replica Manager and closing what it no longer
// holds. Handlers only read the registry; changes (topics, partitions,
// configs, producer-id blocks, elections, reassignments) are checked here,
// decided by the active controller and answered once this node applied
// them. Each node joins the metadata quorum (quorum.go, kraft.Join): a
// single node is a quorum of one on the same path.
//
// The rest is wiring, each service behind the Host this package
// implements: replication and ISR changes (internal/replica,
// internal/alterpartition; replication.go), the request gate
// (internal/admission: ACLs and quotas), config resources
// (internal/configadmin; configs.go), groups (internal/group; groups.go,
// offsets_store.go), share groups and their state (internal/sharegroup,
// internal/sharestate; shares.go), transactions (internal/txn/coordinator
// and internal/txn/verification; transactions.go), compaction
// (internal/cleaner; cleaner.go), metrics (internal/brokermetrics),
// zero-copy Fetch and ShareFetch bodies (internal/splice) and the
// benchmark-only null storage (internal/nullstore). Produce and Fetch
// answers failing with NOT_LEADER_OR_FOLLOWER carry KIP-951 leader hints
// (leader_hints.go).
//
// # What it does not own
//
// Framing, headers and reply ordering (internal/server); batch validation
// and storage (internal/log); the acknowledgement rule (internal/replica:
// Acked, WaitAcked, AppendCommitted); sequence and epoch rules
// (internal/producer); config names, defaults and validation
// (internal/config); the metadata quorum and the controller (internal/kraft,
// internal/controller); fault injection (internal/fault).
//
// # Concurrency
//
// Serve runs on each connection's reader goroutine, one request at a time
// per connection, so appends from one producer connection keep their
// order. Work that waits (a fetch below MinBytes, an acks=all produce,
// JoinGroup, SyncGroup) runs on a goroutine owned by the Broker, completes
// a pending reply, and is cancelled and waited for by Close; parked
// fetches are woken by their partitions (appends, high watermark and log
// start moves, leadership and ISR changes), never by polling. Background
// goroutines, all started by New or Start and stopped by Close: the
// metadata loop, retention, producer expiry, the transaction coordinator,
// and in a cluster the liveness prober, replica.ExpireISR and
// alterpartition.Manager.Run; the replica Manager's fetchers.
//
// Broker.mu guards the topic maps, each topic's partitions slice and
// config map (replaced, never changed in place). It is taken before a
// log's own lock, never after (docs/LOCKS.md).
package broker
