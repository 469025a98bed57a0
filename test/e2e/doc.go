// Package e2e runs the weir binary as a real process and drives it with a
// third-party client (franz-go), killing and restarting it to check that
// nothing acknowledged is lost. The binary is built once per test run.
package e2e
