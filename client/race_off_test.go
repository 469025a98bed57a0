//go:build !race

package client

const raceBuild = false
