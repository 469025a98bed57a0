package records

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/snappy"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// Codec is a compression type as numbered in a batch's attributes.
type Codec int8

// Codecs, with the values of the attributes' low three bits.
const (
	None   Codec = 0
	Gzip   Codec = 1
	Snappy Codec = 2
	LZ4    Codec = 3
	Zstd   Codec = 4
)

func (c Codec) String() string {
	switch c {
	case None:
		return "none"
	case Gzip:
		return "gzip"
	case Snappy:
		return "snappy"
	case LZ4:
		return "lz4"
	case Zstd:
		return "zstd"
	}
	return fmt.Sprintf("codec(%d)", int8(c))
}

// ParseCodec maps compression.type values to codecs.
func ParseCodec(s string) (Codec, bool) {
	for c := None; c <= Zstd; c++ {
		if c.String() == s {
			return c, true
		}
	}
	return None, false
}

// SnappyFraming selects how snappy data is wrapped.
type SnappyFraming uint8

const (
	// SnappyXerial is the chunked framing of the snappy-java library that
	// the Java client writes: a 16-byte header, then length-prefixed blocks.
	SnappyXerial SnappyFraming = iota
	// SnappyRaw is one raw snappy block, as librdkafka and franz-go write.
	SnappyRaw
)

// Errors from decompression.
var (
	ErrCodec    = errors.New("records: unknown compression codec")
	ErrTooLarge = errors.New("records: decompressed data exceeds the limit")
	ErrCorrupt  = errors.New("records: corrupt compressed data")
)

var xerialMagic = []byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0}

// xerialBlock is the uncompressed chunk size snappy-java uses.
const xerialBlock = 32 << 10

// Options tune compression. The zero value uses each codec's default level
// and the xerial snappy framing.
type Options struct {
	Snappy SnappyFraming
	// Level is compression.gzip.level, compression.lz4.level or
	// compression.zstd.level for the codec in use; 0 means the default.
	Level int
}

// Writers and encoders are pooled per level.
var (
	gzipPools   sync.Map // level -> *sync.Pool of *gzip.Writer
	lz4Pools    sync.Map // level -> *sync.Pool of *lz4.Writer
	zstdEncs    sync.Map // level -> *zstd.Encoder
	zstdDecOnce sync.Once
	zstdDec     *zstd.Decoder
)

func gzipPool(level int) *sync.Pool {
	if level == 0 || level < gzip.HuffmanOnly || level > gzip.BestCompression {
		level = gzip.DefaultCompression
	}
	if p, ok := gzipPools.Load(level); ok {
		return p.(*sync.Pool)
	}
	p, _ := gzipPools.LoadOrStore(level, &sync.Pool{New: func() any { w, _ := gzip.NewWriterLevel(nil, level); return w }})
	return p.(*sync.Pool)
}

// lz4Levels maps Kafka's lz4 levels (1-17, default 9) onto the library's.
func lz4Level(level int) lz4.CompressionLevel {
	switch {
	case level <= 0:
		return lz4.Level9
	case level < 3:
		return lz4.Fast
	case level >= 9:
		return lz4.Level9
	}
	return lz4.CompressionLevel(1 << (8 + level))
}

func lz4Pool(level int) *sync.Pool {
	if p, ok := lz4Pools.Load(level); ok {
		return p.(*sync.Pool)
	}
	lv := lz4Level(level)
	p, _ := lz4Pools.LoadOrStore(level, &sync.Pool{New: func() any {
		w := lz4.NewWriter(nil)
		_ = w.Apply(lz4.CompressionLevelOption(lv))
		return w
	}})
	return p.(*sync.Pool)
}

func zstdEncoder(level int) *zstd.Encoder {
	if level == 0 {
		level = 3
	}
	if e, ok := zstdEncs.Load(level); ok {
		return e.(*zstd.Encoder)
	}
	e, _ := zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1), zstd.WithZeroFrames(true),
		zstd.WithEncoderLevel(zstd.EncoderLevelFromZstd(level)))
	got, _ := zstdEncs.LoadOrStore(level, e)
	return got.(*zstd.Encoder)
}

func zstdDecoder() *zstd.Decoder {
	zstdDecOnce.Do(func() {
		zstdDec, _ = zstd.NewReader(nil, zstd.WithDecoderConcurrency(0), zstd.WithDecoderMaxMemory(1<<30))
	})
	return zstdDec
}

// Compress appends src compressed with c to dst.
func Compress(dst, src []byte, c Codec, o Options) ([]byte, error) {
	switch c {
	case None:
		return append(dst, src...), nil
	case Gzip:
		buf := bytes.NewBuffer(dst)
		pool := gzipPool(o.Level)
		w := pool.Get().(*gzip.Writer)
		defer pool.Put(w)
		w.Reset(buf)
		if _, err := w.Write(src); err != nil {
			return nil, err
		}
		if err := w.Close(); err != nil {
			return nil, err
		}
		return buf.Bytes(), nil
	case Snappy:
		if o.Snappy == SnappyRaw {
			return append(dst, snappy.Encode(nil, src)...), nil
		}
		dst = append(dst, xerialMagic...)
		dst = binary.BigEndian.AppendUint32(dst, 1) // version
		dst = binary.BigEndian.AppendUint32(dst, 1) // minimum compatible version
		for len(src) > 0 {
			n := min(len(src), xerialBlock)
			block := snappy.Encode(nil, src[:n])
			dst = binary.BigEndian.AppendUint32(dst, uint32(len(block)))
			dst = append(dst, block...)
			src = src[n:]
		}
		return dst, nil
	case LZ4:
		buf := bytes.NewBuffer(dst)
		pool := lz4Pool(o.Level)
		w := pool.Get().(*lz4.Writer)
		defer pool.Put(w)
		w.Reset(buf)
		if _, err := w.Write(src); err != nil {
			return nil, err
		}
		if err := w.Close(); err != nil {
			return nil, err
		}
		return buf.Bytes(), nil
	case Zstd:
		return zstdEncoder(o.Level).EncodeAll(src, dst), nil
	}
	return nil, fmt.Errorf("%w: %d", ErrCodec, c)
}

// Decompress returns src decompressed with c, failing with ErrTooLarge past
// limit bytes. Both snappy framings are accepted.
func Decompress(src []byte, c Codec, limit int) ([]byte, error) {
	switch c {
	case None:
		return src, nil
	case Gzip:
		r, err := gzip.NewReader(bytes.NewReader(src))
		if err != nil {
			return nil, fmt.Errorf("%w: gzip: %v", ErrCorrupt, err)
		}
		return readLimited(r, limit)
	case Snappy:
		if bytes.HasPrefix(src, xerialMagic) {
			return unxerial(src, limit)
		}
		return unsnappyBlock(nil, src, limit)
	case LZ4:
		return readLimited(lz4.NewReader(bytes.NewReader(src)), limit)
	case Zstd:
		out, err := zstdDecoder().DecodeAll(src, nil)
		if err != nil {
			return nil, fmt.Errorf("%w: zstd: %v", ErrCorrupt, err)
		}
		if len(out) > limit {
			return nil, ErrTooLarge
		}
		return out, nil
	}
	return nil, fmt.Errorf("%w: %d", ErrCodec, c)
}

func readLimited(r io.Reader, limit int) ([]byte, error) {
	out, err := io.ReadAll(io.LimitReader(r, int64(limit)+1))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	if len(out) > limit {
		return nil, ErrTooLarge
	}
	return out, nil
}

func unsnappyBlock(dst, block []byte, limit int) ([]byte, error) {
	n, err := snappy.DecodedLen(block)
	if err != nil {
		return nil, fmt.Errorf("%w: snappy: %v", ErrCorrupt, err)
	}
	if n > limit-len(dst) {
		return nil, ErrTooLarge
	}
	out, err := s2.Decode(nil, block) // s2 decodes snappy blocks
	if err != nil {
		return nil, fmt.Errorf("%w: snappy: %v", ErrCorrupt, err)
	}
	return append(dst, out...), nil
}

func unxerial(src []byte, limit int) ([]byte, error) {
	if len(src) < 16 {
		return nil, fmt.Errorf("%w: short xerial header", ErrCorrupt)
	}
	src = src[16:]
	var out []byte
	for len(src) > 0 {
		if len(src) < 4 {
			return nil, fmt.Errorf("%w: short xerial chunk length", ErrCorrupt)
		}
		n := binary.BigEndian.Uint32(src)
		src = src[4:]
		if uint64(n) > uint64(len(src)) {
			return nil, fmt.Errorf("%w: xerial chunk past the end", ErrCorrupt)
		}
		var err error
		if out, err = unsnappyBlock(out, src[:n], limit); err != nil {
			return nil, err
		}
		src = src[n:]
	}
	return out, nil
}
