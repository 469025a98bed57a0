package client

// Log attribute keys, one spelling for every log line of the client (the
// broker uses the same names).
const (
	logNode       = "node"
	logTopic      = "topic"
	logPartition  = "partition"
	logGroup      = "group"
	logMember     = "member"
	logEpoch      = "epoch"
	logGeneration = "generation"
	logErr        = "err"
)
