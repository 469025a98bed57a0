// Package franzgo checks that a broker serves the franz-go client (kgo and
// kadm) as Apache Kafka does: topic administration and configs, idempotent
// produce and fetch with every codec, consumer groups under the classic and
// the KIP-848 protocols, committed offsets and offset lookups by time.
//
// The package has only tests. It lives in the test/compat module, so the main
// module's `go test ./...` never picks it up, and it fails at start when
// WEIR_BOOTSTRAP is unset: run it through test/compat/run.
//
// Concurrency: consumers in the group tests run in goroutines owned by the
// test, stopped through a context and awaited before the test returns.
package franzgo
