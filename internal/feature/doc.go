// Package feature is weir's table of Kafka's versioned features (KIP-584):
// for each, the levels this broker implements and the level a cluster
// runs at unless an UpdateFeatures finalized another. ApiVersions lists
// them (SupportedFeatures, FinalizedFeatures), kafka-features.sh
// describes them, and clients that gate behaviour on them (the consumer
// group protocol on group.version, share groups on share.version,
// transactions on transaction.version) see what weir does.
//
// # What it owns
//
// The supported ranges and default levels (a level is implemented when
// the brokers behave as Kafka does at it), the merge of the levels the
// metadata log recorded over the defaults, and the checks of an
// UpdateFeatures request (a pure function of the current levels).
//
// # What it does not own
//
// Where finalized levels are kept (metadata.FeatureLevelRecord in the
// metadata log, written by the controller), and the behaviour each level
// gates, which lives with the service it concerns.
//
// # Concurrency
//
// Stateless: a read-only table and functions of their arguments.
package feature
