package broker

import (
	"bytes"
	"encoding/binary"
	"errors"

	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/server"
	"weir/internal/sharegroup"
)

// ShareFetch responses carry records from segment files the way Fetch
// responses do (fetch_body.go): kmsg encodes the response with a marker
// in each partition's Records, and the encoding is cut at the markers.
// ShareFetch is flexible in every version, so a marker's length prefix is
// the one-byte compact length 17.

// markedRecords is one partition's records in a ShareFetch answer and the
// marker that stands for them in the encoding.
type markedRecords struct {
	marker [markerLen]byte
	recs   *sharegroup.Records
}

var errShareMarker = errors.New("broker: share fetch marker missing from the encoding")

func encodeShareFetchBody(resp *kmsg.ShareFetchResponse, version int16, recs []markedRecords) (*server.Body, error) {
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
		body.AppendBytes(binary.AppendUvarint(nil, uint64(r.recs.Size)+1))
		for _, pc := range r.recs.Pieces {
			if pc.Bytes != nil {
				body.AppendBytes(pc.Bytes)
			} else {
				body.AppendFile(pc.File.File, pc.File.Pos, pc.File.Len)
			}
		}
		pos = at + markerLen
	}
	body.AppendBytes(enc[pos:])
	return body, nil
}
