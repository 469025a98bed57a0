// Package share holds the share-group (KIP-932) state machines: the
// delivery state of one share partition (Partition) and, later in this
// package, share-group membership and assignment.
//
// Every type is a pure state machine: no goroutines, no locks, no clock,
// no I/O. The owner (one goroutine per share partition in the broker)
// serialises the calls and passes the time in.
package share
