//go:build !race

package partitioner

const raceBuild = false
