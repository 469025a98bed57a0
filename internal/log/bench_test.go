package log

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// benchBatch is a batch of records adding up to about size bytes.
func benchBatch(b *testing.B, size int) []byte {
	const recordValue = 100
	n := max(1, size/(recordValue+10))
	return simpleBatch(b, n, time.Now().UnixMilli(), recordValue)
}

func benchSizes() []struct {
	name string
	size int
} {
	return []struct {
		name string
		size int
	}{{"1KiB", 1 << 10}, {"16KiB", 16 << 10}}
}

// BenchmarkAppend measures validated, offset-assigned appends to the page
// cache (Kafka's default durability). Compare with BenchmarkRawWrite, which
// writes the same bytes to a plain file in the same directory.
func BenchmarkAppend(b *testing.B) {
	for _, sz := range benchSizes() {
		b.Run(sz.name, func(b *testing.B) {
			l, err := Open(b.TempDir(), DefaultConfig(), Options{})
			if err != nil {
				b.Fatal(err)
			}
			batch := benchBatch(b, sz.size)
			b.SetBytes(int64(len(batch)))
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				if _, err := l.Append(batch, AppendOptions{}); err != nil {
					b.Fatal(err)
				}
			}
			// Close fsyncs everything; that is not the append path.
			b.StopTimer()
			l.Close()
		})
	}
}

// BenchmarkRawWrite is the disk's sequential write through the page cache
// with the same batch sizes: the ceiling for BenchmarkAppend.
func BenchmarkRawWrite(b *testing.B) {
	for _, sz := range benchSizes() {
		b.Run(sz.name, func(b *testing.B) {
			f, err := os.Create(filepath.Join(b.TempDir(), "raw"))
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			batch := benchBatch(b, sz.size)
			b.SetBytes(int64(len(batch)))
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				if _, err := f.Write(batch); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkAppendSyncBeforeAck measures the fsync-before-acknowledge mode
// with one writer (no group commit possible) as a lower bound.
func BenchmarkAppendSyncBeforeAck(b *testing.B) {
	cfg := DefaultConfig()
	cfg.SyncBeforeAck = true
	l, err := Open(b.TempDir(), cfg, Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	batch := benchBatch(b, 16<<10)
	b.SetBytes(int64(len(batch)))
	b.ReportAllocs()
	for range b.N {
		res, err := l.Append(batch, AppendOptions{})
		if err != nil {
			b.Fatal(err)
		}
		if err := l.WaitDurable(b.Context(), res.LastOffset+1); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRead measures locating batches as file ranges (no copy), the
// work a fetch does before sendfile.
func BenchmarkRead(b *testing.B) {
	for _, sz := range benchSizes() {
		b.Run(sz.name, func(b *testing.B) {
			l, err := Open(b.TempDir(), DefaultConfig(), Options{})
			if err != nil {
				b.Fatal(err)
			}
			defer l.Close()
			batch := benchBatch(b, sz.size)
			var last AppendResult
			for range 2000 {
				if last, err = l.Append(batch, AppendOptions{}); err != nil {
					b.Fatal(err)
				}
			}
			end := l.EndOffset()
			perBatch := last.LastOffset - last.BaseOffset + 1
			ranges := make([]FileRange, 0, 4)
			b.SetBytes(1 << 20)
			b.ReportAllocs()
			b.ResetTimer()
			off := int64(0)
			for range b.N {
				res, err := l.Read(ranges, off, 1<<20, end)
				if err != nil || res.Bytes == 0 {
					b.Fatal(err)
				}
				off = (off + 7*perBatch) % (end - perBatch*64)
			}
		})
	}
}

// BenchmarkValidateBatch isolates the CPU cost of checking a batch (CRC
// and record structure) from the write. The 16KiB-512B case is the batch
// bench/compare's producer sends: 16 KiB of 512-byte records.
func BenchmarkValidateBatch(b *testing.B) {
	cases := benchSizes()
	cases = append(cases, struct {
		name string
		size int
	}{"16KiB-512B", 16 << 10})
	for _, sz := range cases {
		b.Run(sz.name, func(b *testing.B) {
			batch := benchBatch(b, sz.size)
			if sz.name == "16KiB-512B" {
				batch = simpleBatch(b, (16<<10)/(512+10), time.Now().UnixMilli(), 512)
			}
			cfg := DefaultConfig()
			rules := cfg.rules()
			now := time.Now()
			b.SetBytes(int64(len(batch)))
			b.ReportAllocs()
			for range b.N {
				if _, err := ValidateBatch(batch, &rules, now); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
