// Package durability checks that what a broker acknowledged survives a
// restart of the broker process: records produced with acks=all and offsets
// committed by a group, after a graceful stop (SIGTERM) and after SIGKILL.
//
// The package has only tests. It needs WEIR_BOOTSTRAP and WEIR_RESTART_CMD
// (a shell command that restarts the broker in place; test/compat/run
// provides both) and fails at start if either is missing.
//
// Concurrency: tests are sequential; the restart command runs synchronously.
package durability
