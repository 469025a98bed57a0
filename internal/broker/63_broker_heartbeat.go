package broker

// BrokerHeartbeat v0-2 (broker to controller), decided on the active
// controller (controller_calls.go).
var _ = register(handler{key: 63, min: 0, max: 2, serve: (*Broker).handleControllerRequest})
