package broker

// RemoveRaftVoter v0: forwarded to the active controller
// (controller_calls.go), which makes the voter an observer of the
// metadata log (internal/kraft/quorum_admin.go).
var _ = register(handler{key: 81, min: 0, max: 0, serve: (*Broker).handleForwarded})
