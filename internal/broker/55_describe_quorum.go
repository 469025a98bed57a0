package broker

// DescribeQuorum v0-2: forwarded to the active controller
// (controller_calls.go), which answers from raft's state
// (internal/kraft/quorum_admin.go says how KRaft's fields map onto it).
var _ = register(handler{key: 55, min: 0, max: 2, serve: (*Broker).handleForwarded})
