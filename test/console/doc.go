// Package console tests weir's web console as a person meets it: a real
// three-node cluster (internal/localcluster, the weir binary built once)
// with traffic, node 1 serving the console, and headless Chromium
// (Debian's chromium package) driven over the DevTools protocol on a
// pipe. Every page must load with no console error, update live, and
// draw charts whose geometry matches numbers the test reads itself from
// the cluster with franz-go; creating a topic and resetting a group's
// offsets from the page must take effect. Screenshots of each page land
// in test/console/screenshots/ (ignored by git).
//
// Without Chromium the test is skipped, unless WEIR_REQUIRE_BROWSER=1
// (scripts/test installs Chromium and sets it), when it fails.
package console
