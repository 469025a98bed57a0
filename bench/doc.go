// Package bench holds no code: the benchmark scripts live next to this
// file (bench/compare, bench/abtest, bench/clients, bench/logdisk,
// bench/profile-loadgen, bench/share-steady, bench/writeback-stall) and
// in the directories below it (bench/cluster-scale, bench/kip951,
// bench/compare-probe, bench/quorum-churn, bench/replication), with
// README.md saying what each measures and keeping the results notebook.
//
// # What it owns
//
// The rule for results, checked by its test: the scripts write new runs
// to bench/out/, which git ignores (or wherever --out or WEIR_BENCH_OUT
// says), and bench/results/ holds only runs that a document quotes by
// name. TestResultsAreQuoted fails when a file in bench/results is named
// by no tracked document, source file or other kept result, and when a
// document names a bench/results file that is not there.
//
// # What it does not own
//
// The measurements themselves: each script's README or doc comment says
// how it measures and how to read the numbers.
//
// # Concurrency
//
// None: the test reads files on one goroutine.
package bench
