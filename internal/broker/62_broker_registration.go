package broker

// BrokerRegistration v0-4 (broker to controller), decided on the active
// controller (controller_calls.go).
var _ = register(handler{key: 62, min: 0, max: 4, serve: (*Broker).handleControllerRequest})
