package broker

// AllocateProducerIds v0 (broker to controller): a block of producer
// ids, decided on the active controller (controller_calls.go).
var _ = register(handler{key: 67, min: 0, max: 0, serve: (*Broker).handleControllerRequest})
