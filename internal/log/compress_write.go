package log

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"slices"
	"sync"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// Compression for batches the broker rewrites (the cleaner): the same
// codec the producer chose, framed the way the Java client frames it so
// that every client that reads Java producers' batches reads these.

// appender is an io.Writer that appends to a slice.
type appender struct{ b []byte }

func (a *appender) Write(p []byte) (int, error) {
	a.b = append(a.b, p...)
	return len(p), nil
}

var (
	gzipWriters = sync.Pool{New: func() any { return gzip.NewWriter(nil) }}
	lz4Writers  = sync.Pool{New: func() any { return lz4.NewWriter(nil) }}
	zstdOnce    sync.Once
	zstdEnc     *zstd.Encoder
	errZstdEnc  error
)

// xerialBlock is the chunk size snappy-java's stream uses.
const xerialBlock = 32 << 10

// compressRecords appends raw (encoded records) compressed with codec to
// dst.
func compressRecords(codec int, dst, raw []byte) ([]byte, error) {
	switch codec {
	case CompressionGzip:
		w := gzipWriters.Get().(*gzip.Writer)
		defer gzipWriters.Put(w)
		a := appender{b: dst}
		w.Reset(&a)
		if _, err := w.Write(raw); err != nil {
			return dst, err
		}
		if err := w.Close(); err != nil {
			return dst, err
		}
		return a.b, nil
	case CompressionSnappy:
		dst = append(dst, xerialMagic...)
		dst = binary.BigEndian.AppendUint32(dst, 1) // version
		dst = binary.BigEndian.AppendUint32(dst, 1) // compatible version
		for len(raw) > 0 {
			n := min(len(raw), xerialBlock)
			at := len(dst) + 4
			dst = slices.Grow(dst, 4+s2.MaxEncodedLen(n))
			enc := s2.EncodeSnappy(dst[at:cap(dst)], raw[:n])
			dst = binary.BigEndian.AppendUint32(dst, uint32(len(enc)))[:at+len(enc)]
			raw = raw[n:]
		}
		return dst, nil
	case CompressionLZ4:
		w := lz4Writers.Get().(*lz4.Writer)
		defer lz4Writers.Put(w)
		a := appender{b: dst}
		w.Reset(&a)
		if err := w.Apply(lz4.BlockSizeOption(lz4.Block64Kb), lz4.ChecksumOption(false)); err != nil {
			return dst, err
		}
		if _, err := w.Write(raw); err != nil {
			return dst, err
		}
		if err := w.Close(); err != nil {
			return dst, err
		}
		return a.b, nil
	case CompressionZstd:
		zstdOnce.Do(func() { zstdEnc, errZstdEnc = zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1)) })
		if errZstdEnc != nil {
			return dst, errZstdEnc
		}
		return zstdEnc.EncodeAll(raw, dst), nil
	}
	return dst, fmt.Errorf("log: cannot compress with codec %d", codec)
}

// BuildCompressed is Build with the records compressed by codec, as a
// producer sends them; the slice is valid until the next Reset.
func (bb *BatchBuilder) BuildCompressed(codec int) ([]byte, error) {
	b := bb.Build()
	if codec == CompressionNone {
		return b, nil
	}
	out := append(make([]byte, 0, len(b)), b[:BatchHeaderSize]...)
	out, err := compressRecords(codec, out, b[BatchHeaderSize:])
	if err != nil {
		return nil, err
	}
	binary.BigEndian.PutUint32(out[offBatchLength:], uint32(len(out)-batchLengthOverhead))
	binary.BigEndian.PutUint16(out[offAttributes:], uint16(codec))
	binary.BigEndian.PutUint32(out[offCRC:], crc32.Checksum(out[offAttributes:], castagnoli))
	bb.buf = out
	return out, nil
}
