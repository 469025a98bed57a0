// Package protocol checks the structure of Kafka request bodies before
// they are decoded.
//
// kmsg, which decodes request bodies, trusts declared sizes more than it
// should: it loops over a tagged-field section as many times as its count
// says even after the bytes ran out (a 24-byte frame declaring 2^32-1 tags
// costs about a minute of CPU), and it allocates an array from its declared
// count before reading any element (tens of bytes of memory per byte of a
// frame that turns out to be truncated). Check walks a body with the exact
// schema of its request key and version and rejects it at the first
// length, count or tag that does not fit in the bytes left, or anything
// else that does not parse, the way Kafka's own generated decoders refuse
// such input. An array count is held to a little more than Kafka's rule:
// its elements must fit in the bytes left at their smallest encoding (two
// bytes for a non-flexible topic name, not one). A body Check accepts is
// well formed, so decoding it costs what a real request of that size
// costs: kmsg meets no tag count larger than the tags present and
// allocates no array larger than the elements present.
//
// Check is stricter than kmsg where Kafka is: a null where the schema
// allows none (a negative length for a non-nullable string, bytes or
// array), or a nullable-struct marker other than -1 and 1. It is as lenient
// as kmsg about bytes after the last field, of the body or of a tagged
// field, and about unknown tags, which it skips.
//
// The package owns the request schemas (schema_gen.go, written by ./gen
// from franz-go's message definitions for the kmsg version in go.mod, and
// checked against kmsg by the tests) and the walker. It does not decode:
// it only says whether kmsg may be given the body. It does not know
// responses or request headers.
//
// Check does not interpret the tables directly: the first time a key is
// checked, its schema is compiled into one program per version (program.go)
// with the fields absent at that version dropped and runs of fixed-width
// fields merged, which makes a check a fraction of kmsg's decode.
//
// # Concurrency
//
// Check may be called from any number of goroutines. The tables are
// read-only; a key's programs are compiled once under a sync.Once and
// never change after.
package protocol
