// Package broker is a Kafka broker's request handling: it implements
// server.Dispatcher with one handler file per API key (NN_name.go), each
// declaring the versions it serves next to its code, so ApiVersions and
// docs/API.md are derived from the handlers, never kept by hand.
//
// # What it owns
//
// The topics of this node (names, ids, partition counts, config
// overrides, persisted in meta.json in the data directory until the
// replicated metadata log replaces it), one partition value per partition
// (its log, high watermark, leader epoch, idempotent-producer state and
// parked fetches), the internal __consumer_offsets topic that backs the
// group coordinator's store, the producer-id allocator and the broker
// configuration in force (static properties plus dynamic overrides,
// replaced atomically on change).
//
// Share groups (KIP-932) are served here too (76-79, 90-92 and the GROUP
// config resource): membership and share-partition state come from
// internal/share; the broker keeps share sessions, parks ShareFetch long
// polls on the same partition waiters as Fetch, and persists share state
// in the internal topic __share_group_state through one writer goroutine
// (share*.go).
//
// # What it does not own
//
// Framing, headers and reply ordering (internal/server); batch validation
// and storage (internal/log); group semantics (internal/group); sequence
// and epoch rules (internal/producer); config names, defaults and
// validation (internal/config).
//
// # Concurrency
//
// Serve runs on each connection's reader goroutine, one request at a time
// per connection, so appends from one producer connection keep their
// order. Work that waits (a fetch below MinBytes, an acks=all produce on a
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
// user space (fetch_body.go).
package broker
