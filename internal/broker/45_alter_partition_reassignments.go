package broker

// AlterPartitionReassignments v0: nothing to check on this broker;
// forwarded to the controller as it is (controller_calls.go).
var _ = register(handler{key: 45, min: 0, max: 0, serve: (*Broker).handleForwarded})
