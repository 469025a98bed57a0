package server

import (
	"context"
	"net"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Listener is one named listener: Kafka's listeners entry NAME://host:port
// with what its security protocol asks of each connection.
type Listener struct {
	// Name is the listener name, given to the dispatcher in ConnInfo so
	// that Metadata can answer with the endpoints of the listener the
	// client used. "" reads as PLAINTEXT.
	Name string
	// Addr is the TCP address to listen on, e.g. "127.0.0.1:9093".
	Addr string
	// Bound, if set, is the listener already bound to Addr, which the
	// server takes over (and closes): weir serve binds its ports before
	// the broker joins the metadata quorum, so a port in use stops it
	// before it becomes a voter.
	Bound net.Listener
	// Security secures and authenticates the listener's connections; nil
	// is plain TCP with no authentication (ConnInfo.Principal "").
	Security Security
}

// Security is a listener's connection edge (internal/auth implements it):
// it may wrap each accepted connection (TLS) and it sees every request
// before the dispatcher does, so that authentication happens at the
// connection, as Kafka's channel authenticators do, and the broker only
// ever sees authenticated requests.
type Security interface {
	// Versions lists the API keys the edge answers itself (SaslHandshake,
	// SaslAuthenticate). They are served on every connection of the
	// listener and added to the dispatcher's ApiVersions answers.
	Versions() []APIVersionRange
	// Open runs on the new connection's reader goroutine before its
	// first request, bounded by ctx (Config.HandshakeTimeout). It returns
	// the connection to read and write (a TLS connection after its
	// handshake, or nc itself) and the connection's gate. An error closes
	// the connection.
	Open(ctx context.Context, nc net.Conn) (net.Conn, Gate, error)
}

// Gate is one connection's authentication state. The connection's reader
// goroutine alone calls it, one request at a time, in order.
type Gate interface {
	// Admit is asked with each request's API key before the body is
	// decoded; false closes the connection at once, answering nothing (a
	// request other than ApiVersions or SaslHandshake before
	// authentication).
	Admit(key int16) bool
	// Check decides a decoded request: pass it to the dispatcher, answer
	// it in the dispatcher's stead, or close the connection.
	Check(req *Request) Verdict
	// MaxFrame bounds the size of the next frame; 0 leaves the server's
	// MaxRequestSize. Kafka reads at most sasl.server.max.receive.size
	// bytes per request before authentication.
	MaxFrame() int32
}

// Verdict is what a Gate decided about one request.
type Verdict struct {
	// Response answers the request instead of the dispatcher.
	Response kmsg.Response
	// Close closes the connection once Response, if any, and every
	// earlier reply are written.
	Close bool
	// Principal, when not "", is the connection's principal from this
	// request on (ConnInfo.Principal).
	Principal string
	// Reason says why the connection closes, for the log.
	Reason string
}

// DefaultHandshakeTimeout bounds Security.Open.
const DefaultHandshakeTimeout = 10 * time.Second

// listener is a Listener being served.
type listener struct {
	Listener
	ln       net.Listener
	versions map[int16]APIVersionRange // the dispatcher's and the edge's
	extra    []APIVersionRange         // the edge's, added to ApiVersions answers
}

// mergeVersions adds the edge's keys to the dispatcher's table; a key
// both serve is the dispatcher's.
func mergeVersions(dispatcher map[int16]APIVersionRange, edge []APIVersionRange) (map[int16]APIVersionRange, []APIVersionRange, error) {
	extra := slices.DeleteFunc(slices.Clone(edge), func(r APIVersionRange) bool {
		_, served := dispatcher[r.Key]
		return served
	})
	checked, err := checkVersions(extra)
	if err != nil {
		return nil, nil, err
	}
	m := make(map[int16]APIVersionRange, len(dispatcher)+len(checked))
	for k, r := range dispatcher {
		m[k] = r
	}
	for k, r := range checked {
		m[k] = r
	}
	return m, extra, nil
}

// withEdgeKeys returns an ApiVersions answer that also lists the edge's
// keys, leaving the dispatcher's response untouched.
func withEdgeKeys(resp kmsg.Response, extra []APIVersionRange) kmsg.Response {
	av, ok := resp.(*kmsg.ApiVersionsResponse)
	if !ok || len(extra) == 0 || av.ErrorCode != 0 {
		return resp
	}
	out := *av
	out.ApiKeys = slices.Clone(av.ApiKeys)
	for _, r := range extra {
		k := kmsg.NewApiVersionsResponseApiKey()
		k.ApiKey, k.MinVersion, k.MaxVersion = r.Key, r.Min, r.Max
		out.ApiKeys = append(out.ApiKeys, k)
	}
	slices.SortFunc(out.ApiKeys, func(a, b kmsg.ApiVersionsResponseApiKey) int { return int(a.ApiKey) - int(b.ApiKey) })
	return &out
}
