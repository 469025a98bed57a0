// Package records encodes and decodes Kafka v2 record batches (magic 2) and
// the compression codecs they use: gzip, snappy (xerial-framed as the Java
// client writes it, or a raw block), lz4 (frame format) and zstd.
//
// # What it owns, what it does not
//
// Builder accumulates records into one batch for the producer, reporting the
// size estimate the partitioner counts (batch header + record bytes, scaled
// by a compression ratio estimate), and Build produces the wire bytes with
// producer id, epoch, base sequence and CRC32C. Decode walks the record sets
// of a fetch response: it verifies CRCs, decompresses, skips control batches
// and stops at a batch cut short by the broker's size limit; DecodeEach does
// the same for a caller that copies each record into its own form (the share
// consumer), without a []Record per batch. Older message
// formats (magic 0 and 1) are not decoded: Kafka 4 neither writes nor
// converts to them. Record batch wire layout is taken from kmsg's RecordBatch
// definition.
//
// # Concurrency
//
// A Builder belongs to one goroutine at a time (the producer holds its
// partition lock). Decode, DecodeEach, Compress and Decompress are safe for concurrent
// use; codec state is pooled.
package records
