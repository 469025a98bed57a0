//go:build race

package client

// raceBuild shortens the single-threaded simulations, which gain nothing
// from the race detector and run many times slower under it.
const raceBuild = true
