// Package sharestate is the durable side of share groups (KIP-932):
// Kafka's share coordinator, which keeps every share partition's
// delivery state in the replicated internal topic __share_group_state,
// and Kafka's persister, through which a share partition's leader writes
// and reads that state wherever its coordinator runs.
//
// # What it owns
//
// The records of __share_group_state (a kind byte, then a share.StateKey;
// values are share.StateRecord snapshots and deltas, null deletes), their
// admission against each key's fence (state epoch and the data
// partition's leader epoch, so that a deposed leader cannot overwrite
// what its successor read), the group commit of what is queued, the
// replay of a state partition when this node starts leading it, keeping
// the partitions short, and Read/WriteShareGroupState on both ends (the
// sender on the leader's node, HandleRead and HandleWrite on the
// coordinator's). The leader of the state partition a key hashes to is
// that key's coordinator.
//
// # What it does not own
//
// The share partitions' state machines (internal/share) and when they
// write (internal/sharegroup); the topic's creation and placement (the
// controller, asked through Host.EnsureTopic); replication and the
// acknowledgement rule (internal/replica: every append waits with
// Replica.WaitAcked for acks=all); the wire handlers (internal/broker's
// 84 and 85 call HandleRead and HandleWrite).
//
// # Concurrency
//
// Service.Write and Service.Read never block on the network or the log:
// a write returns a Ticket that completes once the record is committed.
// On the coordinator, submit admits an entry under Coordinator.mu (a leaf
// guarding the queue, the loaded partitions and their fences) and queues
// it; one writer goroutine appends each state partition's queued records
// as one batch, waits for their commit with no lock but loadMu held (it
// serialises loads with writes), and completes the tickets in order.
// Remote entries go to a per-node sender goroutine that sends one request
// at a time, in order, holding no lock while it is out. The writer and the
// senders belong to the Service; Close stops them, failing what is still
// queued for another node with COORDINATOR_NOT_AVAILABLE.
package sharestate
