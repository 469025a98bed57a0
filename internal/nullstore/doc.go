// Package nullstore is the broker's null storage (weir serve
// --null-storage): a benchmarking mode that measures the ceiling a
// client and loopback reach on this machine, never for data. Produce is
// acknowledged without storing anything (offsets still advance), and a
// consumer's fetch is answered from memory by repeating the partition's
// largest produced batch with its base offset rewritten. With
// --null-storage-write (Writing) each produced batch is also written to
// a file per partition, never synced, never read: what keeping the
// bytes in the page cache costs, as a second baseline beside the
// broker's log.
//
// # What it owns
//
// Per partition (Partition): the offsets produce handed out, the
// Writing file (opened by Writing, closed by Close), the
// template (a copy of the produced batch holding the most records,
// carrying the leader epoch a stored batch would), and what a fetch at
// an offset reads within a byte limit: the template repeated from the
// fetch offset up to the offsets handed out, each batch sent as its own
// 8-byte base offset followed by the template's shared remainder (the
// CRC does not cover the base offset), so serving a fetch copies
// nothing in user space, as sendfile does for a log.
//
// # What it does not own
//
// Checking batches (the broker's produce path parses the batch header
// and refuses a request that is not exactly one batch before it gets
// here; records are not validated in this mode), leader epochs and
// fetch sessions (the broker's Fetch handler), and the wire encoding
// (internal/splice puts the part Read returns in place of its marker).
//
// # Concurrency
//
// A Partition is safe for concurrent use without a lock: the offsets are
// an atomic counter and the template an atomic pointer to an immutable
// copy, replaced only by one holding more records. Two appends racing
// may both copy; the one that stores last wins, and either is a valid
// template.
package nullstore
