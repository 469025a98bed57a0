package broker

import (
	"bytes"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	wlog "weir/internal/log"
	"weir/internal/server"
	"weir/internal/sharegroup"
)

// TestShareFetchBodyMatchesKmsgEncoding checks, for every ShareFetch
// version served, that the spliced body is byte for byte what kmsg encodes
// when the records are inline.
func TestShareFetchBodyMatchesKmsgEncoding(t *testing.T) {
	f, data := segmentFile(t)
	for v := handlers[78].min; v <= handlers[78].max; v++ {
		build := func(withMarkers bool) (*kmsg.ShareFetchResponse, []markedRecords) {
			resp := kmsg.NewPtrShareFetchResponse()
			resp.AcquisitionLockTimeoutMillis = 30000
			var recs []markedRecords
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
						// File pieces around an in-memory one, as a
						// trimmed batch between whole ones.
						fr := markedRecords{marker: newMarker(), recs: &sharegroup.Records{Size: 320, Pieces: []sharegroup.Piece{
							{File: wlog.FileRange{File: f, Pos: 0, Len: 60}},
							{File: wlog.FileRange{File: f, Pos: 60, Len: 40}},
							{Bytes: data[100:150]},
							{File: wlog.FileRange{File: f, Pos: 150, Len: 170}},
						}}}
						if withMarkers {
							sp.Records = fr.marker[:]
							recs = append(recs, fr)
						} else {
							sp.Records = data
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
		body, err := encodeShareFetchBody(resp, v, recs)
		if err != nil {
			t.Fatalf("v%d: %v", v, err)
		}
		if got := server.FlattenBody(t, body); !bytes.Equal(got, wantBytes) {
			t.Fatalf("v%d: spliced body differs from kmsg's encoding (%d vs %d bytes)", v, len(got), len(wantBytes))
		}
	}
}
