package log

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

// decoded is a record as a reader sees it, for comparisons.
type decoded struct {
	offset, ts int64
	key, value string
	nullValue  bool
	headers    string
}

func decodeBatch(t testing.TB, b []byte) []decoded {
	t.Helper()
	var out []decoded
	err := EachRecord(b, func(r *Record) bool {
		d := decoded{offset: r.Offset, ts: r.Timestamp, key: string(r.Key), value: string(r.Value), nullValue: r.Value == nil}
		for _, h := range r.Headers {
			d.headers += h.Key + "=" + string(h.Value) + ";"
		}
		out = append(out, d)
		return true
	})
	if err != nil {
		t.Fatalf("EachRecord: %v", err)
	}
	return out
}

// stamped is makeBatch at a base offset, as stored.
func stamped(t testing.TB, base int64, s batchSpec) []byte {
	b := makeBatch(t, s)
	info, err := ValidateBatch(b, nil, testNow)
	if err != nil {
		t.Fatal(err)
	}
	stampBatch(b, &info, base, 7, false, testNow)
	return b
}

func TestFilterKeepsChosenRecordsInEveryCodec(t *testing.T) {
	recs := []testRecord{
		{key: []byte("a"), value: []byte("1"), headers: [][2][]byte{{[]byte("h"), []byte("x")}}},
		{key: []byte("b"), value: nil, tsDelta: 3},
		{key: []byte("c"), value: bytes.Repeat([]byte("z"), 5000), tsDelta: 1},
		{key: []byte("d"), value: []byte("4"), tsDelta: 9},
	}
	ts := testNow.UnixMilli()
	cases := []struct {
		name      string
		keep      string // keys kept
		opts      FilterOptions
		outcome   FilterOutcome
		horizon   bool
		wantCount int
	}{
		{"all kept, no tombstone kept", "acd", FilterOptions{Horizon: ts + 100}, FilterRewritten, false, 3},
		{"everything kept, tombstone stamps a horizon", "abcd", FilterOptions{Horizon: ts + 100}, FilterRewritten, true, 4},
		{"tombstone kept with one other", "bd", FilterOptions{Horizon: ts + 100}, FilterRewritten, true, 2},
		{"nothing kept", "", FilterOptions{}, FilterDropped, false, 0},
		{"nothing kept, retained empty", "", FilterOptions{RetainEmpty: true}, FilterEmptied, false, 0},
		{"marker horizon", "a", FilterOptions{Horizon: ts + 100, MarkHorizon: true}, FilterRewritten, true, 1},
	}
	for _, codec := range []int{CompressionNone, CompressionGzip, CompressionSnappy, CompressionLZ4, CompressionZstd} {
		for _, tc := range cases {
			t.Run(fmt.Sprintf("%s/%s", codecName(codec), tc.name), func(t *testing.T) {
				b := stamped(t, 100, batchSpec{records: recs, baseTs: ts, codec: codec, producer: 9, epoch: 2, sequence: 40})
				all := decodeBatch(t, b)
				var f BatchFilter
				out, res, err := f.Filter([]byte("prefix"), b, tc.opts, func(r *CleanRecord) bool {
					return bytes.Contains([]byte(tc.keep), r.Key)
				})
				if err != nil {
					t.Fatal(err)
				}
				if string(out[:6]) != "prefix" {
					t.Fatal("dst prefix lost")
				}
				out = out[6:]
				if res.Outcome != tc.outcome || res.Records != 4 || res.Kept != tc.wantCount {
					t.Fatalf("result %+v", res)
				}
				if tc.outcome == FilterDropped {
					if len(out) != 0 {
						t.Fatalf("dropped batch wrote %d bytes", len(out))
					}
					return
				}
				h, err := ParseBatchHeader(out)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := validateReplicated(out, testNow); err != nil {
					t.Fatalf("rewritten batch does not validate: %v", err)
				}
				if h.BaseOffset != 100 || h.LastOffset() != 103 || h.ProducerID != 9 || h.ProducerEpoch != 2 || h.BaseSequence != 40 || h.LeaderEpoch != 7 {
					t.Fatalf("header fields not kept: %+v", h)
				}
				hz, has := h.DeleteHorizon()
				if has != tc.horizon || (has && hz != ts+100) {
					t.Fatalf("horizon %d %v, want %v", hz, has, tc.horizon)
				}
				if tc.outcome == FilterEmptied {
					if h.NumRecords != 0 || len(out) != BatchHeaderSize || h.Compression() != CompressionNone {
						t.Fatalf("empty batch %+v of %d bytes", h, len(out))
					}
					return
				}
				if h.Compression() != codec {
					t.Fatalf("codec %d, want %d", h.Compression(), codec)
				}
				got := decodeBatch(t, out)
				var want []decoded
				maxTs := int64(-1)
				for _, d := range all {
					if bytes.Contains([]byte(tc.keep), []byte(d.key)) {
						want = append(want, d)
						maxTs = max(maxTs, d.ts)
					}
				}
				if fmt.Sprint(got) != fmt.Sprint(want) {
					t.Fatalf("records\n got %v\nwant %v", got, want)
				}
				if h.MaxTimestamp != maxTs {
					t.Fatalf("max timestamp %d, want %d", h.MaxTimestamp, maxTs)
				}
			})
		}
	}
}

func TestFilterCopiesUntouchedBatch(t *testing.T) {
	b := stamped(t, 5, batchSpec{records: []testRecord{{key: []byte("a"), value: []byte("1")}}, baseTs: testNow.UnixMilli(), codec: CompressionLZ4})
	var f BatchFilter
	out, res, err := f.Filter(nil, b, FilterOptions{}, func(*CleanRecord) bool { return true })
	if err != nil || res.Outcome != FilterCopied || !bytes.Equal(out, b) {
		t.Fatalf("outcome %v err %v, equal %v", res.Outcome, err, bytes.Equal(out, b))
	}
	// A batch that already has a horizon is not stamped again.
	var g BatchFilter
	stampedOnce, _, err := g.Filter(nil, stamped(t, 5, batchSpec{records: []testRecord{{key: []byte("a")}}, baseTs: testNow.UnixMilli()}),
		FilterOptions{Horizon: 42}, func(*CleanRecord) bool { return true })
	if err != nil {
		t.Fatal(err)
	}
	again, res, err := g.Filter(nil, stampedOnce, FilterOptions{Horizon: 99}, func(*CleanRecord) bool { return true })
	if err != nil || res.Outcome != FilterCopied || !bytes.Equal(again, stampedOnce) {
		t.Fatalf("second pass: %v %v", res.Outcome, err)
	}
	h, _ := ParseBatchHeader(again)
	if hz, ok := h.DeleteHorizon(); !ok || hz != 42 {
		t.Fatalf("horizon %d %v", hz, ok)
	}
}

func TestLogAppendTimeBatchKeepsItsTimestamp(t *testing.T) {
	b := makeBatch(t, batchSpec{records: []testRecord{{key: []byte("a")}, {key: []byte("b"), value: []byte("x"), tsDelta: 4}}, baseTs: 10})
	info, err := ValidateBatch(b, nil, testNow)
	if err != nil {
		t.Fatal(err)
	}
	stampBatch(b, &info, 0, 0, true, testNow)
	var f BatchFilter
	out, _, err := f.Filter(nil, b, FilterOptions{Horizon: 5}, func(r *CleanRecord) bool { return string(r.Key) == "a" })
	if err != nil {
		t.Fatal(err)
	}
	h, _ := ParseBatchHeader(out)
	got := decodeBatch(t, out)
	if h.MaxTimestamp != testNow.UnixMilli() || len(got) != 1 || got[0].ts != testNow.UnixMilli() || !h.LogAppendTime() {
		t.Fatalf("header %+v records %v", h, got)
	}
}

func TestValidateCleanedRejects(t *testing.T) {
	good := stamped(t, 0, batchSpec{records: []testRecord{{key: []byte("a")}, {key: []byte("b")}, {key: []byte("c")}}, baseTs: testNow.UnixMilli()})
	var f BatchFilter
	cleaned, _, err := f.Filter(nil, good, FilterOptions{}, func(r *CleanRecord) bool { return string(r.Key) != "b" })
	if err != nil {
		t.Fatal(err)
	}
	empty := appendEmptyBatch(nil, &BatchHeader{LastOffsetDelta: 2, Magic: 2})
	cases := []struct {
		name string
		mut  func([]byte) []byte
		want error
	}{
		{"gapped batch passes", func(b []byte) []byte { return b }, nil},
		{"more records than offsets", func(b []byte) []byte { b[offLastOffsetDelt+3] = 0; fixCRC(b); return b }, kerr.InvalidRecord},
		{"bad crc", func(b []byte) []byte { b[len(b)-1] ^= 1; return b }, kerr.CorruptMessage},
		{"trailing byte", func(b []byte) []byte {
			b = append(b, 0)
			b[offBatchLength+3]++
			fixCRC(b)
			return b
		}, kerr.CorruptMessage},
		{"offset deltas out of order", func(b []byte) []byte {
			// records are [len, attr, ts, off=0, ...]; make the second one's delta 0
			h, _ := ParseBatchHeader(b)
			recs, _ := parseRecords(b[BatchHeaderSize:], &h, nil)
			at := len(b) - len(recs[1].raw) + 2 // attr, ts delta 0: the offset delta
			b[at] = 0
			fixCRC(b)
			return b
		}, kerr.InvalidRecord},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := tc.mut(append([]byte(nil), cleaned...))
			_, err := validateReplicated(b, testNow)
			if !errors.Is(err, tc.want) && (tc.want != nil || err != nil) {
				t.Fatalf("err %v, want %v", err, tc.want)
			}
		})
	}
	if _, err := validateReplicated(empty, testNow); err != nil {
		t.Fatalf("empty batch: %v", err)
	}
	withBody := append(append([]byte(nil), empty...), 1)
	withBody[offBatchLength+3]++
	fixCRC(withBody)
	if _, err := validateReplicated(withBody, testNow); !errors.Is(err, kerr.CorruptMessage) {
		t.Fatalf("empty batch with a body: %v", err)
	}
}

func FuzzFilterBatch(f *testing.F) {
	f.Add(simpleBatch(f, 3, testNow.UnixMilli(), 5), uint8(5))
	for _, c := range []int{CompressionGzip, CompressionSnappy, CompressionLZ4, CompressionZstd} {
		f.Add(makeBatch(f, batchSpec{records: []testRecord{{key: []byte("k"), value: []byte("v")}, {key: []byte("j")}}, baseTs: testNow.UnixMilli(), codec: c}), uint8(1))
	}
	f.Add(appendEmptyBatch(nil, &BatchHeader{LastOffsetDelta: 4, Magic: 2}), uint8(0))
	f.Fuzz(func(t *testing.T, b []byte, mask uint8) {
		// Decoders never panic; whatever validates as replicated data
		// filters into a batch that validates again with the records
		// chosen, in order.
		if _, err := validateReplicated(b, testNow); err != nil {
			var ke *kerr.Error
			if !errors.As(err, &ke) {
				t.Fatalf("error %v carries no Kafka error code", err)
			}
			var g BatchFilter
			_, _, _ = g.Filter(nil, b, FilterOptions{Horizon: 1}, func(*CleanRecord) bool { return true })
			return
		}
		var g BatchFilter
		var kept []int64
		i := 0
		out, res, err := g.Filter(nil, b, FilterOptions{RetainEmpty: mask&0x80 != 0, Horizon: 77}, func(r *CleanRecord) bool {
			k := mask>>(i%7)&1 == 1
			i++
			if k {
				kept = append(kept, r.Offset)
			}
			return k
		})
		if err != nil {
			t.Fatalf("valid batch does not filter: %v", err)
		}
		if res.Outcome == FilterDropped {
			return
		}
		if _, err := validateReplicated(out, testNow); err != nil {
			t.Fatalf("filtered batch invalid: %v", err)
		}
		var got []int64
		if err := EachRecord(out, func(r *Record) bool { got = append(got, r.Offset); return true }); err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(got) != fmt.Sprint(kept) {
			t.Fatalf("kept %v, batch holds %v", kept, got)
		}
	})
}
