// Package wiretag holds weir's own tagged fields: extensions to Kafka
// requests that weir's client and brokers send and weir's brokers read.
// Tagged fields a broker does not know are skipped by the protocol's
// rules, so Apache Kafka and other brokers ignore them and the requests
// stay valid Kafka. Every weir tag is defined here, so that two never
// share a number on one request type; both sides (client/ and the
// broker's services) import this leaf package.
//
// It holds constants and pure helpers only: no state, no goroutines.
package wiretag
