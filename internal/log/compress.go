package log

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// maxDecompressed caps how far a compressed batch may expand while it is
// validated, so a small hostile batch cannot make the broker allocate
// without bound.
const maxDecompressed = 128 << 20

var errTooLarge = errors.New("decompressed records exceed 128 MiB")

// buffer is a pooled byte slice for decompressed records.
type buffer struct{ b []byte }

var bufferPool = sync.Pool{New: func() any { return &buffer{b: make([]byte, 0, 64<<10)} }}

func getBuffer() *buffer { b := bufferPool.Get().(*buffer); b.b = b.b[:0]; return b }

func releaseBuffer(b *buffer) {
	if cap(b.b) > 8<<20 { // do not pin huge buffers
		return
	}
	bufferPool.Put(b)
}

var (
	gzipPool = sync.Pool{}
	lz4Pool  = sync.Pool{New: func() any { return lz4.NewReader(nil) }}
	zstdDec  *zstd.Decoder
)

func init() {
	var err error
	zstdDec, err = zstd.NewReader(nil, zstd.WithDecoderConcurrency(0), zstd.WithDecoderMaxMemory(maxDecompressed))
	if err != nil {
		panic(err) // only fails on invalid options
	}
}

// decompress expands a batch's records section into a pooled buffer that
// the caller must release.
func decompress(codec int, src []byte) (*buffer, error) {
	out := getBuffer()
	var err error
	switch codec {
	case CompressionGzip:
		err = gunzip(out, src)
	case CompressionSnappy:
		err = unsnappy(out, src)
	case CompressionLZ4:
		r := lz4Pool.Get().(*lz4.Reader)
		r.Reset(bytes.NewReader(src))
		err = readAllCapped(out, r)
		lz4Pool.Put(r)
	case CompressionZstd:
		out.b, err = zstdDec.DecodeAll(src, out.b[:0])
	default:
		err = fmt.Errorf("unknown codec %d", codec)
	}
	if err != nil {
		releaseBuffer(out)
		return nil, err
	}
	return out, nil
}

func gunzip(out *buffer, src []byte) error {
	var zr *gzip.Reader
	if v := gzipPool.Get(); v != nil {
		zr = v.(*gzip.Reader)
		if err := zr.Reset(bytes.NewReader(src)); err != nil {
			return err
		}
	} else {
		var err error
		if zr, err = gzip.NewReader(bytes.NewReader(src)); err != nil {
			return err
		}
	}
	defer gzipPool.Put(zr)
	return readAllCapped(out, zr)
}

func readAllCapped(out *buffer, r io.Reader) error {
	for {
		if len(out.b) == cap(out.b) {
			out.b = append(out.b, 0)[:len(out.b)]
		}
		n, err := r.Read(out.b[len(out.b):cap(out.b)])
		out.b = out.b[:len(out.b)+n]
		if len(out.b) > maxDecompressed {
			return errTooLarge
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// xerialMagic starts snappy data framed the way the Java client's
// snappy-java stream writes it: a 16-byte header, then chunks each prefixed
// by a 4-byte big-endian length. Other clients send one raw snappy block.
var xerialMagic = []byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0}

func unsnappy(out *buffer, src []byte) error {
	if !bytes.HasPrefix(src, xerialMagic) {
		return snappyBlock(out, src)
	}
	if len(src) < 16 {
		return errors.New("short xerial snappy header")
	}
	for p := 16; p < len(src); {
		if len(src)-p < 4 {
			return errors.New("truncated xerial snappy chunk length")
		}
		n := int(binary.BigEndian.Uint32(src[p:]))
		p += 4
		if n < 0 || n > len(src)-p {
			return errors.New("xerial snappy chunk runs past the batch")
		}
		if err := snappyBlock(out, src[p:p+n]); err != nil {
			return err
		}
		p += n
	}
	return nil
}

// snappyBlock appends one decoded raw snappy block to out.
func snappyBlock(out *buffer, block []byte) error {
	n, err := s2.DecodedLen(block)
	if err != nil {
		return err
	}
	if n > maxDecompressed-len(out.b) {
		return errTooLarge
	}
	start := len(out.b)
	if cap(out.b)-start < n {
		grown := make([]byte, start, start+n)
		copy(grown, out.b)
		out.b = grown
	}
	dst, err := s2.Decode(out.b[start:start+n], block)
	if err != nil {
		return err
	}
	out.b = out.b[:start+len(dst)]
	return nil
}
