package log

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"testing"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// testRecord is one record for makeBatch.
type testRecord struct {
	key, value []byte
	headers    [][2][]byte
	tsDelta    int64
}

// batchSpec describes a batch for makeBatch.
type batchSpec struct {
	records   []testRecord
	baseTs    int64
	codec     int
	xerial    bool // snappy in the Java client's framing
	producer  int64
	epoch     int16
	sequence  int32
	attrExtra int16
}

// makeBatch encodes a v2 record batch the way a producer would.
func makeBatch(t testing.TB, s batchSpec) []byte {
	t.Helper()
	var recs []byte
	for i, r := range s.records {
		var body []byte
		body = append(body, 0)
		body = binary.AppendVarint(body, r.tsDelta)
		body = binary.AppendVarint(body, int64(i))
		body = appendVarBytes(body, r.key)
		body = appendVarBytes(body, r.value)
		body = binary.AppendVarint(body, int64(len(r.headers)))
		for _, h := range r.headers {
			body = appendVarBytes(body, h[0])
			body = appendVarBytes(body, h[1])
		}
		recs = binary.AppendVarint(recs, int64(len(body)))
		recs = append(recs, body...)
	}
	recs = compressFor(t, s.codec, s.xerial, recs)
	maxDelta := int64(0)
	for _, r := range s.records {
		maxDelta = max(maxDelta, r.tsDelta)
	}
	b := make([]byte, BatchHeaderSize, BatchHeaderSize+len(recs))
	b = append(b, recs...)
	binary.BigEndian.PutUint32(b[offBatchLength:], uint32(len(b)-batchLengthOverhead))
	binary.BigEndian.PutUint32(b[offLeaderEpoch:], 0xffffffff)
	b[offMagic] = 2
	binary.BigEndian.PutUint16(b[offAttributes:], uint16(int16(s.codec)|s.attrExtra))
	binary.BigEndian.PutUint32(b[offLastOffsetDelt:], uint32(len(s.records)-1))
	binary.BigEndian.PutUint64(b[offBaseTimestamp:], uint64(s.baseTs))
	binary.BigEndian.PutUint64(b[offMaxTimestamp:], uint64(s.baseTs+maxDelta))
	pid := s.producer
	if pid == 0 {
		pid = -1
	}
	binary.BigEndian.PutUint64(b[offProducerID:], uint64(pid))
	binary.BigEndian.PutUint16(b[offProducerEpoch:], uint16(s.epoch))
	binary.BigEndian.PutUint32(b[offBaseSequence:], uint32(s.sequence))
	binary.BigEndian.PutUint32(b[offRecordCount:], uint32(len(s.records)))
	fixCRC(b)
	return b
}

func fixCRC(b []byte) {
	binary.BigEndian.PutUint32(b[offCRC:], crc32.Checksum(b[offAttributes:], castagnoli))
}

func appendVarBytes(b, v []byte) []byte {
	if v == nil {
		return binary.AppendVarint(b, -1)
	}
	b = binary.AppendVarint(b, int64(len(v)))
	return append(b, v...)
}

func compressFor(t testing.TB, codec int, xerial bool, raw []byte) []byte {
	t.Helper()
	var out bytes.Buffer
	switch codec {
	case CompressionNone:
		return raw
	case CompressionGzip:
		w := gzip.NewWriter(&out)
		w.Write(raw)
		w.Close()
	case CompressionSnappy:
		block := s2.EncodeSnappy(nil, raw)
		if !xerial {
			return block
		}
		out.Write(xerialMagic)
		out.Write([]byte{0, 0, 0, 1, 0, 0, 0, 1})
		binary.Write(&out, binary.BigEndian, uint32(len(block)))
		out.Write(block)
	case CompressionLZ4:
		w := lz4.NewWriter(&out)
		w.Write(raw)
		w.Close()
	case CompressionZstd:
		w, err := zstd.NewWriter(nil)
		if err != nil {
			t.Fatal(err)
		}
		return w.EncodeAll(raw, nil)
	default:
		return raw
	}
	return out.Bytes()
}

// simpleBatch is a batch of n records with small distinct values.
func simpleBatch(t testing.TB, n int, baseTs int64, valueSize int) []byte {
	t.Helper()
	recs := make([]testRecord, n)
	for i := range recs {
		v := bytes.Repeat([]byte{byte('a' + i%26)}, valueSize)
		recs[i] = testRecord{key: []byte{byte(i)}, value: v, tsDelta: int64(i)}
	}
	return makeBatch(t, batchSpec{records: recs, baseTs: baseTs})
}
