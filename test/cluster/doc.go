// Package cluster runs a three-node weir cluster as real processes
// (internal/localcluster, the weir binary built once per test run) and
// drives it with franz-go while nodes are stopped with a controlled
// shutdown, SIGKILLed and restarted.
//
// The tests assert availability and convergence: leaderships leave a
// node that stops or dies, every live broker reports the same leaders
// and controller, the controller accepts writes after a failover, and
// acks=all produce and group consumption carry on, with no record
// failing. They do not assert that every acknowledged record survives a
// change of leader (that belongs to the replication tests); they log how
// many acknowledged records the consumer read past without receiving.
// One asserts what a new leader must know: the idempotent producers'
// sequences, after a SIGKILL and after a restart (sequence_test.go).
package cluster
