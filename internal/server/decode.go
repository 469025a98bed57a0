package server

import (
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/protocol"
)

var (
	errUnknownKey = errors.New("server: unknown api key")
	errBadVersion = errors.New("server: unsupported api version")
)

// decode checks a frame's key and version against the served ranges, then
// parses its header and body. The version check comes before the body is
// looked at. A nil req with a nil error means an ApiVersions request of a
// version we do not serve, to be answered by the fallback; its body is not
// parsed, as Kafka does not parse it. Unknown keys and other unsupported
// versions are errors: Kafka closes the connection for them.
func (s *Server) decode(frame []byte) (h fixedHeader, req kmsg.Request, clientID string, err error) {
	return decodeWith(s.listeners[0].versions, frame)
}

// decodeWith is decode against one listener's version table.
func decodeWith(versions map[int16]APIVersionRange, frame []byte) (h fixedHeader, req kmsg.Request, clientID string, err error) {
	h, ok := readFixedHeader(frame)
	if !ok {
		return h, nil, "", errShortHeader
	}
	rng, ok := versions[h.key]
	if !ok {
		return h, nil, "", errUnknownKey
	}
	inRange := h.version >= rng.Min && h.version <= rng.Max
	if !inRange && h.key != apiVersionsKey {
		return h, nil, "", errBadVersion
	}
	req = kmsg.RequestForKey(h.key) // not nil: checkVersions
	req.SetVersion(h.version)
	clientID, body, err := readHeaderRest(frame[fixedHeaderSize:], requestHeaderVersion(req))
	if err != nil || !inRange {
		return h, nil, clientID, err
	}
	// kmsg trusts declared counts (see the package doc): the body's
	// structure is checked first, so kmsg only sees well-formed bodies.
	if err := protocol.Check(h.key, h.version, body); err != nil {
		return h, nil, "", fmt.Errorf("server: malformed request body: %w", err)
	}
	if err := req.ReadFrom(body); err != nil {
		return h, nil, "", fmt.Errorf("server: malformed request body: %w", err)
	}
	return h, req, clientID, nil
}
