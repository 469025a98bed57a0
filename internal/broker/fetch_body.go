package broker

import (
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"

	wlog "weir/internal/log"
	"weir/internal/server"
)

// A fetch response carries record batches straight from segment files:
// the response is encoded by kmsg with a unique 16-byte marker in place of
// each partition's records, then the encoding is cut at each marker and
// the marker replaced by the real length prefix and the file ranges, which
// the server sends with sendfile. kmsg keeps doing every version's field
// layout; only the records bytes never pass through user space.

const markerLen = 16

// fetchRecords is one partition's records as file ranges.
type fetchRecords struct {
	marker [markerLen]byte
	ranges []wlog.FileRange
	inline [][]byte // bytes sent before the ranges (NullStorage's repeated batches)
	size   int64
}

func newMarker() [markerLen]byte {
	var m [markerLen]byte
	_, _ = rand.Read(m[:])
	return m
}

// encodeFetchBody builds the response body (what follows the response
// header) for resp at version, splicing in recs in the order their
// markers appear.
func encodeFetchBody(resp *kmsg.FetchResponse, version int16, recs []*fetchRecords) (*server.Body, error) {
	resp.SetVersion(version)
	enc := resp.AppendTo(nil)
	flexible := version >= 12
	body := &server.Body{}
	pos := 0
	for _, r := range recs {
		i := bytes.Index(enc[pos:], r.marker[:])
		if i < 0 {
			return nil, fmt.Errorf("broker: fetch marker missing from the encoding")
		}
		at := pos + i
		// The marker was encoded with its own length prefix: 4 bytes
		// (int32 16) before v12, one uvarint byte (17) in flexible
		// versions.
		prefix := 4
		if flexible {
			prefix = 1
		}
		body.AppendBytes(enc[pos : at-prefix])
		var lp []byte
		if flexible {
			lp = binary.AppendUvarint(nil, uint64(r.size)+1)
		} else {
			lp = binary.BigEndian.AppendUint32(nil, uint32(r.size))
		}
		body.AppendBytes(lp)
		for _, b := range r.inline {
			body.AppendBytes(b)
		}
		for _, fr := range r.ranges {
			body.AppendFile(fr.File, fr.Pos, fr.Len)
		}
		pos = at + markerLen
	}
	body.AppendBytes(enc[pos:])
	return body, nil
}
