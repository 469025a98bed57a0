package broker

// AlterPartition v0-3 (broker to controller): a leader's ISR change,
// decided on the active controller (controller_calls.go).
var _ = register(handler{key: 56, min: 0, max: 3, serve: (*Broker).handleControllerRequest})
