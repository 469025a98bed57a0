package broker

// AddRaftVoter v0-1: forwarded to the active controller
// (controller_calls.go), which adds the node, at the raft address its
// listener names, to the quorum's voters (internal/kraft/quorum_admin.go).
// AckWhenCommitted is not needed: the answer always waits for the
// change to commit.
var _ = register(handler{key: 80, min: 0, max: 1, serve: (*Broker).handleForwarded})
