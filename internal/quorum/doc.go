// Package quorum runs one node of the replicated metadata log on
// hashicorp/raft: a small set of voters (1 or 3) elects a leader, which
// the controller runs on; every other broker follows the log as a
// non-voter. A single node is a one-voter quorum on the same code path.
//
// # What it owns
//
// The raft node: its transport (TCP on its own address, or mutual TLS
// when Config.TLS is set: tls.go), its durable log
// and stable store (raft-wal in the node's directory), its snapshot store
// (files), bootstrap of the first configuration, membership changes and
// leadership observation. Entries are opaque bytes; the state machine
// that gives them meaning (the metadata image) is supplied by the caller
// as an FSM.
//
// Its timing: raft's timeouts are 2 s (Kafka's fetch timeout) so that a
// loaded machine keeps its leader. hashicorp/raft's pre-vote (a follower
// that stops hearing the leader asks the others before it bumps the term,
// and they refuse while they hear it) and its leader lease (check-quorum:
// a leader that hears no follower for the lease steps down) are on. A
// voter also watches for the cases where waiting out the timeouts is
// pointless (elect.go): a leader whose raft port refuses connections (its
// process is gone) and a quorum with no leader since the node opened;
// then the reachable voters take turns, in id order, starting an election
// at once. A closing leader hands leadership over first. A follower
// learns of a commit from the leader's next append, which raft sends
// when an entry is added or, idle, every CommitTimeout (100 to 200 ms):
// so a proposal's commit is followed at once by a barrier entry (nudge,
// at most one every nudgeGap), and entries reach the followers' state
// machines one round trip after they commit. The leader's idle appends name the
// newest entry's term, which raft reads through a one-entry cache in
// memory (recentEntries), not from the log. A dial to a peer whose port
// refuses connections (its process down or restarting) tries again every
// 25 ms for up to 30 s before it fails (stream.go; Close stops that
// first): raft backs off after each failed append, doubling up to 10 s,
// and a node down for a minute, refusing at once each time, otherwise
// waited up to 10 s after its return before its leader sent it anything.
//
// # What it does not own
//
// What an entry means, how state is encoded in a snapshot, or who may
// propose: the controller proposes on the leader; Propose elsewhere fails
// with ErrNotLeader naming the leader.
//
// # Concurrency
//
// hashicorp/raft calls FSM.Apply, Snapshot and Restore from its own
// goroutines, one at a time. Propose is safe from any goroutine and
// returns once the entry is committed and applied on this node. A
// multi-node voter runs one more goroutine, the election watch; its
// state (electionWatch) is a pure state machine it owns alone; and a
// leader one while it sends barriers (nudgeLoop). Close stops every
// goroutine the node started and waits for them.
package quorum
