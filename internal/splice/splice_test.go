package splice

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	wlog "weir/internal/log"
	"weir/internal/server"
)

// TestFetchBodyMatchesKmsgEncoding checks, for every Fetch version, that
// the spliced body is byte for byte what kmsg encodes when the records
// are inline: an empty partition, an error (null records) and two file
// ranges in each of two topics.
func TestFetchBodyMatchesKmsgEncoding(t *testing.T) {
	f, data := segmentFile(t)
	for v := int16(0); v <= (&kmsg.FetchRequest{}).MaxVersion(); v++ {
		build := func(withMarkers bool) (*kmsg.FetchResponse, []*Part) {
			resp := kmsg.NewPtrFetchResponse()
			var parts []*Part
			for ti, name := range []string{"a", "bb"} {
				st := kmsg.NewFetchResponseTopic()
				st.Topic = name
				st.TopicID = [16]byte{byte(ti + 1)}
				for p := range 3 {
					sp := kmsg.NewFetchResponseTopicPartition()
					sp.Partition = int32(p)
					sp.HighWatermark = 99
					switch p {
					case 0: // empty
						sp.RecordBatches = []byte{}
					case 1: // an error: null records
					case 2: // two ranges
						part := FromRanges([]wlog.FileRange{{File: f, Pos: 0, Len: 100}, {File: f, Pos: 100, Len: 220}}, 320)
						if withMarkers {
							sp.RecordBatches = part.Marker[:]
							parts = append(parts, part)
						} else {
							sp.RecordBatches = data
						}
					}
					st.Partitions = append(st.Partitions, sp)
				}
				resp.Topics = append(resp.Topics, st)
			}
			return resp, parts
		}
		matchesKmsg(t, v, func(m bool) (kmsg.Response, []*Part) { return build(m) })
	}
}

// TestShareFetchBodyMatchesKmsgEncoding: the same for every ShareFetch
// version (flexible in all), with file pieces around an in-memory one, as
// a trimmed batch between whole ones.
func TestShareFetchBodyMatchesKmsgEncoding(t *testing.T) {
	f, data := segmentFile(t)
	for v := int16(0); v <= (&kmsg.ShareFetchRequest{}).MaxVersion(); v++ {
		build := func(withMarkers bool) (*kmsg.ShareFetchResponse, []*Part) {
			resp := kmsg.NewPtrShareFetchResponse()
			resp.AcquisitionLockTimeoutMillis = 30000
			var parts []*Part
			for ti := range 2 {
				st := kmsg.NewShareFetchResponseTopic()
				st.TopicID = [16]byte{byte(ti + 1)}
				for p := range 3 {
					sp := kmsg.NewShareFetchResponseTopicPartition()
					sp.Partition = int32(p)
					switch p {
					case 0:
						sp.Records = []byte{}
					case 1:
						sp.ErrorCode = 3
					case 2:
						sp.AcquiredRecords = []kmsg.ShareFetchResponseTopicPartitionAcquiredRecord{{FirstOffset: 1, LastOffset: 9, DeliveryCount: 2}}
						part := &Part{Marker: NewMarker(), Size: 320, Pieces: []Piece{
							{File: wlog.FileRange{File: f, Pos: 0, Len: 60}},
							{File: wlog.FileRange{File: f, Pos: 60, Len: 40}},
							{Bytes: data[100:150]},
							{File: wlog.FileRange{File: f, Pos: 150, Len: 170}},
						}}
						if withMarkers {
							sp.Records = part.Marker[:]
							parts = append(parts, part)
						} else {
							sp.Records = data
						}
					}
					st.Partitions = append(st.Partitions, sp)
				}
				resp.Topics = append(resp.Topics, st)
			}
			return resp, parts
		}
		matchesKmsg(t, v, func(m bool) (kmsg.Response, []*Part) { return build(m) })
	}
}

// matchesKmsg checks that the body spliced from build(true) (markers and
// parts) is byte for byte kmsg's encoding of build(false) (records inline)
// at version v.
func matchesKmsg(t *testing.T, v int16, build func(withMarkers bool) (kmsg.Response, []*Part)) {
	t.Helper()
	want, _ := build(false)
	want.SetVersion(v)
	resp, parts := build(true)
	resp.SetVersion(v)
	body, err := Body(resp.AppendTo(nil), resp.IsFlexible(), parts)
	if err != nil {
		t.Fatalf("v%d: %v", v, err)
	}
	if got, wantBytes := server.FlattenBody(t, body), want.AppendTo(nil); !bytes.Equal(got, wantBytes) {
		t.Fatalf("v%d: spliced body differs from kmsg's encoding (%d vs %d bytes)", v, len(got), len(wantBytes))
	}
}

// TestMissingMarker: a part whose marker is not in the encoding, or not
// after the previous part's, fails the body instead of sending a
// response cut in the wrong place.
func TestMissingMarker(t *testing.T) {
	a, b := &Part{Marker: NewMarker()}, &Part{Marker: NewMarker()}
	enc := append(append([]byte{0, 0, 0, 16}, a.Marker[:]...), append([]byte{0, 0, 0, 16}, b.Marker[:]...)...)
	for _, tc := range []struct {
		name  string
		parts []*Part
		ok    bool
	}{
		{"both in order", []*Part{a, b}, true},
		{"out of order", []*Part{b, a}, false},
		{"absent", []*Part{a, {Marker: NewMarker()}}, false},
	} {
		_, err := Body(enc, false, tc.parts)
		if tc.ok && err != nil || !tc.ok && !errors.Is(err, ErrMissingMarker) {
			t.Errorf("%s: err %v", tc.name, err)
		}
	}
}

// segmentFile writes 320 bytes (a length whose uvarint takes two bytes) to
// a file standing in for a segment.
func segmentFile(t *testing.T) (*os.File, []byte) {
	t.Helper()
	f, err := os.Create(filepath.Join(t.TempDir(), "seg"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	data := bytes.Repeat([]byte("0123456789abcdef"), 20)
	if _, err := f.Write(data); err != nil {
		t.Fatal(err)
	}
	return f, data
}
