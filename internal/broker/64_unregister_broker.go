package broker

// UnregisterBroker v0 (broker to controller), decided on the active
// controller (controller_calls.go).
var _ = register(handler{key: 64, min: 0, max: 0, serve: (*Broker).handleControllerRequest})
