//go:build race

package partitioner

// raceBuild is true under -race, where the single-threaded simulation gains
// nothing from the detector but runs ~50x slower; it then runs a shorter
// model with the same checks.
const raceBuild = true
