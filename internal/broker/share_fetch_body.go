package broker

import (
	"bytes"
	"encoding/binary"
	"errors"

	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/server"
)

// ShareFetch responses carry records from segment files the way Fetch
// responses do (fetch_body.go): kmsg encodes the response with a marker
// in each partition's Records, and the encoding is cut at the markers.
// ShareFetch is flexible in every version, so a marker's length prefix is
// the one-byte compact length 17.

var errShareMarker = errors.New("broker: share fetch marker missing from the encoding")

func encodeShareFetchBody(resp *kmsg.ShareFetchResponse, version int16, recs []*fetchRecords) (*server.Body, error) {
	resp.SetVersion(version)
	enc := resp.AppendTo(nil)
	body := &server.Body{}
	pos := 0
	for _, r := range recs {
		i := bytes.Index(enc[pos:], r.marker[:])
		if i < 1 {
			return nil, errShareMarker
		}
		at := pos + i
		body.AppendBytes(enc[pos : at-1])
		body.AppendBytes(binary.AppendUvarint(nil, uint64(r.size)+1))
		for _, fr := range r.ranges {
			body.AppendFile(fr.File, fr.Pos, fr.Len)
		}
		pos = at + markerLen
	}
	body.AppendBytes(enc[pos:])
	return body, nil
}
