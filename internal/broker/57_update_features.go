package broker

// UpdateFeatures v0-2: forwarded to the active controller
// (controller_calls.go), which checks each change against the levels
// weir implements (internal/feature) and records them in the metadata
// log; ApiVersions lists the finalized levels from there.
var _ = register(handler{key: 57, min: 0, max: 2, serve: (*Broker).handleForwarded})
