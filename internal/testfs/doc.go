// Package testfs gives tests a small file system they can fill: a tmpfs
// mounted on a temporary directory, which a test can grow again to see
// what comes back when space returns. Mounting needs CAP_SYS_ADMIN (root
// in a container that allows it): where it is refused, the test is
// skipped with a message saying so, never counted as passed silently.
//
// It owns the mounts it makes and unmounts them when the test ends. It
// holds no state between calls and is safe for parallel tests.
package testfs
