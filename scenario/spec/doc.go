// Package spec reads scenario files: the YAML that describes one
// experiment of `weir scenario run` (the cluster, its topics and replica
// placement, producers with their clients, configs, rate schedules and
// record distributors, consumers, faults over time, phases and the
// variants to compare). scenarios/README.md documents the format for
// its users; this package is its single definition.
//
// # What it owns
//
// Parsing (go.yaml.in/yaml/v3, strict: an unknown field is an error),
// validation with errors that name the field and its line
// (producers[0].rate.segments[1].duration), the defaults, and Resolve:
// one variant's overrides applied and, in quick mode, durations and
// record counts scaled down. A parsed File is plain data.
//
// # What it does not own
//
// Running anything: the scenario package starts clusters, clients and
// faults from a resolved File.
//
// # Concurrency
//
// None: functions of their arguments. A File is not to be changed while
// another goroutine reads it.
package spec
