// Package quota is Kafka's client quotas: which entities carry quotas
// and what values they may hold, DescribeClientQuotas over the metadata
// image, and enforcement as a pure core.
//
// # What it owns
//
//   - Entities and values (entity.go): parsing and validating the
//     entities of AlterClientQuotas and DescribeClientQuotas (user,
//     client-id, both, or ip; names or the <default>) and the quota keys
//     producer_byte_rate, consumer_byte_rate, request_percentage,
//     controller_mutation_rate and connection_creation_rate, with
//     Kafka's messages; answering DescribeClientQuotas from the image.
//
// # What it does not own
//
// Storing quotas (records of the metadata log, internal/metadata,
// written by internal/controller) and the network: the broker answers
// with the throttle time this package computes, and the server mutes
// the connection until it ends.
package quota
