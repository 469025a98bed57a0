// Package metadata is the cluster metadata of a multi-broker weir: the
// records the controller writes to the replicated metadata log, their
// binary encoding, and the image every broker builds by applying them.
//
// # What it owns
//
//   - Records (records.go): broker registration (id, incarnation, epoch,
//     endpoints, rack, fencing state), fence, unfence, controlled
//     shutdown and unregistration; topic creation (name, 16-byte id) and
//     removal; partition creation and change (replicas, ISR, leader,
//     leader and partition epochs, replicas a reassignment adds and
//     removes, leader recovery state); topic and broker config set and
//     delete; producer-id blocks; ACLs (Kafka's AccessControlEntryRecord
//     and its removal), users' SCRAM credentials per mechanism (salt,
//     stored and server keys, iterations; never a password) and client
//     quotas per entity (user, client id, both, or IP; names or the
//     <default>). Kinds and versions are part of the format (codec.go
//     documents it).
//   - Batches: EncodeBatch/DecodeBatch frame many records, with a CRC32C,
//     as one metadata log entry that applies atomically. The decoder never
//     panics and never allocates more than its input justifies, whatever
//     the bytes (fuzzed).
//   - The image (image.go): an immutable snapshot of brokers, topics by
//     name and by id, partitions, configs and the producer-id high-water
//     mark, at a metadata log offset, with counters of offline, not
//     preferred and reassigning partitions; and (security.go) the ACLs,
//     SCRAM credentials and client quotas. The ACL and quota sets are
//     replaced, never modified, by a batch that changes them, so their
//     pointers identify their content: internal/authz and internal/quota
//     keep their indexes under them.
//   - Apply (apply.go): Image.Apply(offset, records) returns a new image
//     and a Delta, or an error and nothing (ErrInvalidRecord: the batch is
//     refused whole). It checks every record against the image, so no
//     sequence of records, hostile or buggy, builds an image that breaks
//     the partition invariants (validState). Delta.Local tells one broker
//     which partitions it now leads, follows or must stop.
//   - Snapshots (snapshot.go): WriteSnapshot writes an image as the
//     records that rebuild it; ReadSnapshot loads them back, with the
//     checks of Apply, into an equal image (fuzzed).
//
// # Scale
//
// Topics, names and configs live in persistent hash tries (hamt.go), a
// topic's partitions in chunks of 16 (chunk.go). Apply copies only the
// path to what a batch touches: one topic header and chunk table per
// touched topic, one chunk per touched chunk, a few trie nodes. Within a
// batch the builder changes its own copies in place (nodes are tagged
// with the builder that made them), so a batch that moves 30,000 leaders
// copies each touched chunk once and never the whole image. A chunk
// stores its partitions without pointers, their replica lists in one
// arena, so the garbage collector scans one object per 16 partitions and
// a partition with three replicas costs about 60 bytes
// (BenchmarkImageMemory).
//
// # What it does not own
//
// What ACLs, credentials and quotas mean: internal/authz decides with
// ACLs, the SASL server checks SCRAM proofs against credentials, and
// internal/quota enforces quotas; quota keys and ACL codes are only
// range-checked here. Deciding anything: which records to write is the controller's job
// (internal/controller), and the controller is the only writer. Raft and
// the log: the integration proposes encoded batches to the replicated
// log, applies committed entries with Apply, and feeds Delta to the
// broker's replica manager. Persisting snapshots: WriteSnapshot writes to
// whatever the raft snapshot store gives it. Config values are opaque
// strings here; internal/config validates and interprets them.
//
// # Concurrency
//
// The package starts no goroutines and holds no locks. Images are
// immutable and safe to share: the owner of the applied state (the raft
// FSM) is the only caller of Apply, in log order, and publishes each new
// image through an atomic pointer; readers load the pointer and use that
// image for as long as they like, never seeing a half-applied batch.
// WriteSnapshot may run on an old image while newer batches are applied.
// A Builder is single-owner; the images it returns are not.
package metadata
