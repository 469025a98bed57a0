package broker

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	wlog "weir/internal/log"
	"weir/internal/server"
)

// TestFetchBodyMatchesKmsgEncoding checks, for every Fetch version served,
// that the spliced body is byte for byte what kmsg encodes when the
// records are inline.
func TestFetchBodyMatchesKmsgEncoding(t *testing.T) {
	f, data := segmentFile(t)
	for v := handlers[1].min; v <= handlers[1].max; v++ {
		build := func(withMarkers bool) (*kmsg.FetchResponse, []*fetchRecords) {
			resp := kmsg.NewPtrFetchResponse()
			var recs []*fetchRecords
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
						fr := &fetchRecords{marker: newMarker(), ranges: []wlog.FileRange{{File: f, Pos: 0, Len: 100}, {File: f, Pos: 100, Len: 220}}, size: 320}
						if withMarkers {
							sp.RecordBatches = fr.marker[:]
							recs = append(recs, fr)
						} else {
							sp.RecordBatches = data
						}
					}
					st.Partitions = append(st.Partitions, sp)
				}
				resp.Topics = append(resp.Topics, st)
			}
			return resp, recs
		}
		want, _ := build(false)
		want.SetVersion(v)
		wantBytes := want.AppendTo(nil)
		resp, recs := build(true)
		body, err := encodeFetchBody(resp, v, recs)
		if err != nil {
			t.Fatalf("v%d: %v", v, err)
		}
		got := server.FlattenBody(t, body)
		if !bytes.Equal(got, wantBytes) {
			t.Fatalf("v%d: spliced body differs from kmsg's encoding (%d vs %d bytes)", v, len(got), len(wantBytes))
		}
	}
}

// segmentFile writes 320 bytes (a length whose uvarint takes two bytes) to
// a file standing in for a segment, for the splice tests.
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
