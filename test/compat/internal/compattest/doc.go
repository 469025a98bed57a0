// Package compattest is what the Go compatibility suites share: the broker
// address they are pointed at, clients bound to a test's lifetime, throwaway
// topics, a deterministic record shape and a polling helper.
//
// It owns no broker: test/compat/run starts one (Apache Kafka or weir) and
// passes its address in WEIR_BOOTSTRAP. Without that variable the suites fail
// at start instead of skipping, so a green run always means a broker answered.
//
// Concurrency: every helper is called from the test goroutine; clients are
// closed by t.Cleanup in reverse order of creation.
package compattest
