// Command gen writes package protocol's request schema table
// (schema_gen.go) from franz-go's message definitions, the DSL in its
// repository's generate/definitions directory, whose files are read from
// the directory given with -defs:
//
//	go run ./gen -defs /path/to/franz-go/generate/definitions -out schema_gen.go
//
// or, from internal/protocol, `go generate` with WEIR_KMSG_DEFINITIONS set
// to that directory (schema.go holds the directive).
//
// # What it owns
//
// The step from definitions to table. The definitions must describe the
// kmsg this module builds with: gen emits every request key kmsg knows, up
// to kmsg's MaxVersion for it, and fails when the definitions miss a key
// or a version, or disagree with kmsg on which versions are flexible. Take
// them from the franz-go commit that released the kmsg version in go.mod.
// (The committed table names the sha256 of the files it came from:
// franz-go's definitions at commit dae808d9 of its kafka-4.4 branch, plus
// the two changes kmsg v1.15.0 has on top of them for requests:
// 94_unregister_controller, and ApiVersionsRequest v5 with
// "ClusterID: nullable-string // v5+" and "NodeID: int32(-1) // v5+" after
// ClientSoftwareVersion.) The output is gofmt'd Go and the same inputs
// give the same bytes, so a regenerated table shows up in a diff only when
// the definitions changed.
//
// Of the DSL, gen reads what changes the encoding of requests (parse.go):
// struct headers (key, max version, flexible vN+), field types
// (primitives, enums by their backing type, strings and bytes with their
// nullable forms, arrays with their nullable and varint forms, anonymous
// and named structs, nullable structs), field version ranges and tags.
// Comments, defaults and routing modifiers are ignored; responses are
// parsed and dropped. emit.go lays the parsed requests out as protocol's
// flat field and struct tables (named structs emitted once and shared,
// primitive array elements shared).
//
// # What it does not own
//
// The table's meaning and its use: protocol.Check and its compiled
// programs read it, and protocol's tests (TestTableMatchesKmsg,
// TestAcceptsKmsgEncodings) are what check a generated table against
// kmsg. gen does not fetch the definitions, and nothing in the build
// or the tests runs it.
//
// # Concurrency
//
// A single-goroutine command: it reads the directory, builds the table in
// memory and writes one file.
package main
