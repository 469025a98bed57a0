package log

import (
	"bytes"
	"testing"
)

func TestBatchBuilderRoundTripsThroughEachRecord(t *testing.T) {
	var bb BatchBuilder
	bb.Reset(1000)
	bb.Add(1000, []byte("k1"), []byte("v1"), []Header{{Key: "h", Value: []byte("x")}})
	bb.Add(1005, nil, nil, nil)
	bb.Add(1002, []byte("k3"), []byte{}, nil)
	b := bb.Build()
	info, err := ValidateBatch(b, nil, testNow)
	if err != nil {
		t.Fatal(err)
	}
	if info.NumRecords != 3 || info.MaxTimestamp != 1005 {
		t.Fatalf("header %+v", info.BatchHeader)
	}
	var got []Record
	err = EachRecord(b, func(r *Record) bool {
		c := *r
		c.Headers = append([]Header(nil), r.Headers...)
		got = append(got, c)
		return true
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || string(got[0].Key) != "k1" || string(got[0].Value) != "v1" || len(got[0].Headers) != 1 ||
		got[0].Headers[0].Key != "h" || got[1].Key != nil || got[1].Value != nil || got[1].Timestamp != 1005 ||
		got[2].Value == nil || len(got[2].Value) != 0 || got[2].Offset != 2 {
		t.Fatalf("records %+v", got)
	}
}

func TestEachRecordDecompresses(t *testing.T) {
	for _, codec := range []int{CompressionGzip, CompressionSnappy, CompressionLZ4, CompressionZstd} {
		b := makeBatch(t, batchSpec{records: []testRecord{{key: []byte("a"), value: bytes.Repeat([]byte("z"), 500)}, {value: []byte("b"), tsDelta: 3}}, baseTs: 50, codec: codec})
		var vals []string
		if err := EachRecord(b, func(r *Record) bool { vals = append(vals, string(r.Value)); return true }); err != nil {
			t.Fatal(err)
		}
		if len(vals) != 2 || len(vals[0]) != 500 || vals[1] != "b" {
			t.Fatalf("codec %d: %d values", codec, len(vals))
		}
	}
}

func FuzzEachRecord(f *testing.F) {
	f.Add(simpleBatch(f, 2, 1, 3))
	f.Fuzz(func(t *testing.T, b []byte) {
		_ = EachRecord(b, func(*Record) bool { return true })
	})
}
