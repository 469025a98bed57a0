package log

import (
	"encoding/binary"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

var testNow = time.UnixMilli(1_700_000_000_000)

func defaultRules() *ValidationRules {
	c := DefaultConfig()
	r := c.rules()
	return &r
}

func TestValidateBatchAcceptsEveryCodec(t *testing.T) {
	recs := []testRecord{
		{key: []byte("k1"), value: []byte("hello"), headers: [][2][]byte{{[]byte("h"), []byte("v")}}},
		{key: nil, value: nil, tsDelta: 5},
		{key: []byte("k3"), value: make([]byte, 3000), tsDelta: 2},
	}
	cases := []struct {
		name   string
		codec  int
		xerial bool
	}{
		{"none", CompressionNone, false},
		{"gzip", CompressionGzip, false},
		{"snappy raw", CompressionSnappy, false},
		{"snappy xerial", CompressionSnappy, true},
		{"lz4", CompressionLZ4, false},
		{"zstd", CompressionZstd, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := makeBatch(t, batchSpec{records: recs, baseTs: testNow.UnixMilli(), codec: tc.codec, xerial: tc.xerial})
			orig := append([]byte(nil), b...)
			info, err := ValidateBatch(b, defaultRules(), testNow)
			if err != nil {
				t.Fatalf("ValidateBatch: %v", err)
			}
			if info.NumRecords != 3 || info.Compression() != tc.codec {
				t.Fatalf("info = %+v", info.BatchHeader)
			}
			if info.MaxRecordTimestamp != testNow.UnixMilli()+5 || info.OffsetDeltaOfMaxTimestamp != 1 {
				t.Fatalf("max record timestamp %d at delta %d", info.MaxRecordTimestamp, info.OffsetDeltaOfMaxTimestamp)
			}
			if string(orig) != string(b) {
				t.Fatal("validation changed the batch")
			}
		})
	}
}

func TestValidateBatchRejects(t *testing.T) {
	now := testNow.UnixMilli()
	good := func(t *testing.T) []byte { return simpleBatch(t, 3, now, 10) }
	cases := []struct {
		name   string
		mutate func(t *testing.T) []byte
		rules  func(r *ValidationRules)
		want   *kerr.Error
	}{
		{"short", func(t *testing.T) []byte { return good(t)[:40] }, nil, kerr.CorruptMessage},
		{"length field too big", func(t *testing.T) []byte { return good(t)[:len(good(t))-1] }, nil, kerr.CorruptMessage},
		{"trailing bytes", func(t *testing.T) []byte { return append(good(t), 0) }, nil, kerr.CorruptMessage},
		{"negative length", func(t *testing.T) []byte {
			b := good(t)
			binary.BigEndian.PutUint32(b[offBatchLength:], 0xfffffff0)
			return b
		}, nil, kerr.CorruptMessage},
		{"magic 1", func(t *testing.T) []byte { b := good(t); b[offMagic] = 1; return b }, nil, kerr.InvalidRecord},
		{"bad crc", func(t *testing.T) []byte { b := good(t); b[len(b)-1] ^= 0xff; return b }, nil, kerr.CorruptMessage},
		{"too large", good, func(r *ValidationRules) { r.MaxBatchBytes = 50 }, kerr.MessageTooLarge},
		{"count mismatch", func(t *testing.T) []byte {
			b := good(t)
			binary.BigEndian.PutUint32(b[offRecordCount:], 2)
			binary.BigEndian.PutUint32(b[offLastOffsetDelt:], 1)
			fixCRC(b)
			return b
		}, nil, kerr.CorruptMessage},
		{"last offset delta mismatch", func(t *testing.T) []byte {
			b := good(t)
			binary.BigEndian.PutUint32(b[offLastOffsetDelt:], 7)
			fixCRC(b)
			return b
		}, nil, kerr.InvalidRecord},
		{"zero records", func(t *testing.T) []byte {
			b := good(t)[:BatchHeaderSize]
			binary.BigEndian.PutUint32(b[offBatchLength:], BatchHeaderSize-batchLengthOverhead)
			binary.BigEndian.PutUint32(b[offRecordCount:], 0)
			binary.BigEndian.PutUint32(b[offLastOffsetDelt:], 0xffffffff)
			fixCRC(b)
			return b
		}, nil, kerr.InvalidRecord},
		{"offset delta gap", func(t *testing.T) []byte {
			b := makeBatch(t, batchSpec{records: []testRecord{{value: []byte("a")}, {value: []byte("b")}}, baseTs: now})
			// second record's offset delta is at record start+1(len)+1(attr)+1(ts)
			first := int(b[BatchHeaderSize]) >> 1
			b[BatchHeaderSize+1+first+3] = 4 // zigzag 2
			fixCRC(b)
			return b
		}, nil, kerr.InvalidRecord},
		{"unknown codec", func(t *testing.T) []byte {
			b := good(t)
			binary.BigEndian.PutUint16(b[offAttributes:], 5)
			fixCRC(b)
			return b
		}, nil, kerr.UnsupportedCompressionType},
		{"corrupt gzip", func(t *testing.T) []byte {
			b := makeBatch(t, batchSpec{records: []testRecord{{value: []byte("abc")}}, baseTs: now, codec: CompressionGzip})
			b[BatchHeaderSize+12] ^= 0xff
			fixCRC(b)
			return b
		}, nil, kerr.CorruptMessage},
		{"timestamp too far ahead", func(t *testing.T) []byte { return simpleBatch(t, 1, now+2*time.Hour.Milliseconds(), 1) }, nil, kerr.InvalidTimestamp},
		{"timestamp too old", func(t *testing.T) []byte { return simpleBatch(t, 1, now-2*time.Hour.Milliseconds(), 1) },
			func(r *ValidationRules) { r.TimestampBeforeMax = time.Hour }, kerr.InvalidTimestamp},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rules := defaultRules()
			if tc.rules != nil {
				tc.rules(rules)
			}
			_, err := ValidateBatch(tc.mutate(t), rules, testNow)
			if !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
		})
	}
}

func TestStampBatchLogAppendTimeRecomputesCRC(t *testing.T) {
	b := simpleBatch(t, 2, testNow.UnixMilli()-1000, 4)
	info, err := ValidateBatch(b, defaultRules(), testNow)
	if err != nil {
		t.Fatal(err)
	}
	stampBatch(b, &info, 42, 7, true, testNow)
	again, err := ValidateBatch(b, nil, testNow)
	if err != nil {
		t.Fatalf("stamped batch no longer valid: %v", err)
	}
	if again.BaseOffset != 42 || again.LeaderEpoch != 7 || !again.LogAppendTime() || again.MaxTimestamp != testNow.UnixMilli() {
		t.Fatalf("stamped header = %+v", again.BatchHeader)
	}
}

func FuzzValidateBatch(f *testing.F) {
	f.Add(simpleBatch(f, 3, testNow.UnixMilli(), 5))
	for _, c := range []int{CompressionGzip, CompressionSnappy, CompressionLZ4, CompressionZstd} {
		f.Add(makeBatch(f, batchSpec{records: []testRecord{{key: []byte("k"), value: []byte("value")}}, baseTs: testNow.UnixMilli(), codec: c}))
	}
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		info, err := ValidateBatch(b, defaultRules(), testNow)
		if err != nil {
			var ke *kerr.Error
			if !errors.As(err, &ke) {
				t.Fatalf("error %v carries no Kafka error code", err)
			}
			return
		}
		// A batch that passed must still pass after the broker stamps it.
		stampBatch(b, &info, 1000, 3, false, testNow)
		if _, err := ValidateBatch(b, nil, testNow); err != nil {
			t.Fatalf("valid batch broken by stamping: %v", err)
		}
	})
}

// TestVarintAtMatchesBinaryVarint checks the inline one- and two-byte paths
// of varintAt against binary.Varint (varintAtSlow) for every one- and two-byte input, at
// the start, in the middle and cut short at the end of a buffer, and for
// the positions that do not parse.
func TestVarintAtMatchesBinaryVarint(t *testing.T) {
	want := varintAtSlow // binary.Varint, positions as varintAt gives them
	check := func(b []byte, p int) {
		t.Helper()
		gv, gp := varintAt(b, p)
		wv, wp := want(b, p)
		if gp != wp || (gp >= 0 && gv != wv) {
			t.Fatalf("varintAt(% x, %d) = %d, %d; binary.Varint gives %d, %d", b, p, gv, gp, wv, wp)
		}
	}
	for c := 0; c < 256; c++ {
		for d := 0; d < 256; d++ {
			check([]byte{byte(c), byte(d)}, 0)             // whole buffer
			check([]byte{9, byte(c), byte(d), 0x01}, 1)    // mid-buffer, trailing byte
			check([]byte{byte(c), byte(d), 0x80, 0x01}, 0) // a third byte when d continues
			check([]byte{0x80, byte(c), byte(d)}, 1)       // ends at the buffer's end
		}
		check([]byte{byte(c)}, 0) // a continuation byte with nothing after it
	}
	for _, p := range []int{-1, 2, 3} {
		check([]byte{0x02, 0x04}, p)
	}
}
