package server

import (
	"context"
	"net"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// APIVersionRange is one API key the broker serves and the inclusive range
// of versions it accepts.
type APIVersionRange struct {
	Key int16
	Min int16
	Max int16
}

// Dispatcher is what the broker plugs into the server.
type Dispatcher interface {
	// Versions lists every API key served with its min and max version.
	// The server calls it once, in New: it drives the unknown-key and
	// unsupported-version checks and the ApiVersions fallback reply.
	Versions() []APIVersionRange

	// Serve handles one request. The server calls it from the
	// connection's reader goroutine, one request at a time, in the order
	// the requests arrived. Work that must happen in request order (log
	// appends, group state) is done before Serve returns; the Reply may
	// complete later (a fetch long poll, an acks=all produce).
	//
	// ctx is cancelled when the connection is torn down (client gone,
	// forced shutdown); a pending Reply may then be abandoned.
	//
	// ApiVersions requests within the served range arrive here like any
	// other; the server itself answers only those outside it.
	Serve(ctx context.Context, req *Request) *Reply
}

// FrameReuser is implemented by a Dispatcher that keeps no reference into
// the frame of some requests once Serve has returned: no []byte field of
// the request body (record batches, for a produce handler that has
// appended them) is read or retained after that, by Serve or by work its
// Reply waits on. For those keys the server reads requests into pooled
// buffers and reuses each one as soon as Serve returns, so a stream of
// produce requests allocates no frame per request.
type FrameReuser interface {
	ReusesFrame(key int16) bool
}

// Request is one decoded request.
type Request struct {
	Key           int16
	Version       int16
	CorrelationID int32
	// ClientID is the header's client id; a null client id reads as "".
	ClientID string
	// Body is the decoded request, with its version set. Its []byte
	// fields (record batches) alias the frame buffer, which the server
	// never reuses, except for the keys a FrameReuser names.
	Body kmsg.Request
	// Size is the frame size in bytes, without the 4-byte length prefix.
	Size int32
	Conn ConnInfo
}

// ConnInfo identifies the connection a request came in on.
type ConnInfo struct {
	// ID is unique among the connections of one Server.
	ID     uint64
	Remote net.Addr
	Local  net.Addr
	// Listener is the name of the listener the connection came in on.
	Listener string
	// Principal is who the listener's Security authenticated
	// ("User:alice", "User:ANONYMOUS"); "" on a listener without
	// Security.
	Principal string
}
