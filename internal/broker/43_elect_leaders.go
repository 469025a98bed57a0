package broker

// ElectLeaders v0-2 (preferred and unclean elections): nothing to check
// on this broker; forwarded to the controller as it is
// (controller_calls.go).
var _ = register(handler{key: 43, min: 0, max: 2, serve: (*Broker).handleForwarded})
