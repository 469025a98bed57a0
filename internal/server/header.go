package server

import (
	"encoding/binary"
	"errors"
	"weir/internal/kframe"

	"github.com/twmb/franz-go/pkg/kmsg"
)

const (
	apiVersionsKey = 18

	// fixedHeaderSize covers api key, api version and correlation id,
	// which every request header version starts with.
	fixedHeaderSize = 8
	// minFrameSize is the smallest request header v1: the fixed part and
	// a null client id. Header v0 exists only for ControlledShutdown v0,
	// which no 4.x broker serves.
	minFrameSize = fixedHeaderSize + 2

	// unsupportedVersion is Kafka's UNSUPPORTED_VERSION error code.
	unsupportedVersion = 35
)

var (
	errShortHeader = errors.New("server: request header truncated")
	errBadTags     = errors.New("server: request header tagged fields malformed")
)

// fixedHeader is the part of a request header read before anything else.
type fixedHeader struct {
	key           int16
	version       int16
	correlationID int32
}

func readFixedHeader(frame []byte) (fixedHeader, bool) {
	if len(frame) < fixedHeaderSize {
		return fixedHeader{}, false
	}
	return fixedHeader{
		key:           int16(binary.BigEndian.Uint16(frame[0:])),
		version:       int16(binary.BigEndian.Uint16(frame[2:])),
		correlationID: int32(binary.BigEndian.Uint32(frame[4:])),
	}, true
}

// requestHeaderVersion is the header version a request at its current
// version uses: 2 when the request is flexible (KIP-482), 1 otherwise, and
// 0 for ControlledShutdown v0, the one request without a client id.
// ApiVersions follows the same rule (header v2 from v3 on, including
// versions newer than any we know), so a client's newest ApiVersions
// request parses far enough to be answered.
func requestHeaderVersion(req kmsg.Request) int {
	switch {
	case req.Key() == 7 && req.GetVersion() == 0:
		return 0
	case req.IsFlexible():
		return 2
	default:
		return 1
	}
}

// flexibleResponseHeader reports whether the response to a request uses
// response header v1 (correlation id, then tagged fields). ApiVersions
// responses always use header v0 so that a client that sent a version we
// do not know can still read the error and our supported range.
func flexibleResponseHeader(req kmsg.Request) bool {
	return req.Key() != apiVersionsKey && req.IsFlexible()
}

// readHeaderRest reads what follows the fixed header in a header of the
// given version: the client id (int16-length nullable string, never
// compact) and, for v2, tagged fields, which are skipped. It returns the
// client id and the request body.
func readHeaderRest(rest []byte, headerVersion int) (clientID string, body []byte, err error) {
	if headerVersion == 0 {
		return "", rest, nil
	}
	if len(rest) < 2 {
		return "", nil, errShortHeader
	}
	n := int16(binary.BigEndian.Uint16(rest))
	rest = rest[2:]
	if n > 0 {
		if int(n) > len(rest) {
			return "", nil, errShortHeader
		}
		clientID, rest = string(rest[:n]), rest[n:]
	} else if n < -1 {
		return "", nil, errShortHeader
	}
	if headerVersion < 2 {
		return clientID, rest, nil
	}
	if rest, err = kframe.SkipTags(rest); err != nil {
		return "", nil, errBadTags
	}
	return clientID, rest, nil
}

// appendResponseHeader appends a response header: the correlation id and,
// for header v1, an empty tagged-field section.
func appendResponseHeader(dst []byte, correlationID int32, flexible bool) []byte {
	dst = binary.BigEndian.AppendUint32(dst, uint32(correlationID))
	if flexible {
		dst = append(dst, 0)
	}
	return dst
}

// apiVersionsFallback is what Kafka answers to an ApiVersions request of a
// version it does not serve (KIP-511): a v0 response with
// UNSUPPORTED_VERSION and one ApiKeys entry, ApiVersions' own range, so
// the client retries at the highest version we accept.
func apiVersionsFallback(r APIVersionRange) *kmsg.ApiVersionsResponse {
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.Version = 0
	resp.ErrorCode = unsupportedVersion
	key := kmsg.NewApiVersionsResponseApiKey()
	key.ApiKey, key.MinVersion, key.MaxVersion = r.Key, r.Min, r.Max
	resp.ApiKeys = append(resp.ApiKeys, key)
	return resp
}
