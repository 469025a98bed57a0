// Package wiretag holds weir's own tagged fields: extensions to Kafka
// requests that weir's client and brokers send and weir's brokers read.
// Tagged fields a broker does not know are skipped by the protocol's
// rules (KIP-482), so Apache Kafka and other brokers ignore them and the
// requests stay valid Kafka.
//
// # What it owns
//
// The tag numbers and the encoding of their values, so the side that
// writes a tag and the side that reads it cannot disagree, and no two
// tags share a number on one request type:
//
//   - ShareFetchAllLeaders, set by client.ShareConsumer on its
//     record_limit ShareFetch requests and read by the share-group
//     service (internal/sharegroup). Its value is a version byte; the
//     checker accepts only the versions it knows, so a newer client's
//     value reads as absent to an older broker.
//   - ShareFetchBacklogWanted (request) and ShareFetchBacklog (response,
//     top level): weir's ShareConsumer asks, the share-group service
//     answers with the records waiting in each partition of the member's
//     session on that leader, and the consumer fetches from the leaders
//     with the most first. Response tags are skipped by other clients as
//     request tags are by other brokers.
//   - ShareFetchDeferAcks (request): weir's ShareConsumer, in record_limit
//     mode, asks the share-group service to answer once the records are
//     acquired and to report the acknowledgements' durability later (on
//     a following request of the member that waits for it).
//   - ShareStateRecord and ShareStateFlags, on the WriteShareGroupState
//     a weir broker sends another (internal/sharestate).
//   - ControllerOffset, on the controller requests a weir broker forwards
//     to the active controller and on their responses (internal/kraft):
//     the metadata offset at which the outcome committed.
//
// The numbers start at 0x7765 ("we"), far above the tags Kafka's schemas
// use (small integers counting up from 0 per request), so a tagged field
// Kafka adds to the same request in a later version will not take them.
// Both sides (client/ and the broker's services) import this leaf
// package.
//
// # What it does not own
//
// Where the tags go: the request types and their UnknownTags are
// franz-go's kmsg, and what a tag makes the broker or client do lives
// with them. Nothing here reads or writes the wire.
//
// # Concurrency
//
// Stateless: constants and functions of their arguments. A kmsg.Tags must
// not be used from two goroutines at once, as with any kmsg value.
package wiretag
