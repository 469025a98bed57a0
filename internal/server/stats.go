package server

import "sync/atomic"

// Stats is a snapshot of a Server's counters.
type Stats struct {
	// Requests counts requests by API key: decoded and dispatched, plus
	// ApiVersions requests answered by the unsupported-version fallback.
	Requests map[int16]uint64
	// BytesIn and BytesOut count frames read and written, length
	// prefixes included.
	BytesIn  uint64
	BytesOut uint64

	ConnectionsOpened uint64
	ConnectionsClosed uint64
	// IdleClosed counts connections closed for sending nothing for
	// connections.max.idle.ms (Config.MaxIdle).
	IdleClosed uint64
	// ProtocolErrors counts connections closed for bad input: bad frame
	// sizes, unknown keys, unsupported versions, undecodable requests.
	ProtocolErrors uint64
	// InFlightStalls counts the times a reader found its connection's
	// in-flight bound reached and stopped reading.
	InFlightStalls uint64
	// SendfileBytes and CopiedFileBytes count file-range bytes written
	// with sendfile(2) and through a userspace copy.
	SendfileBytes   uint64
	CopiedFileBytes uint64
	// InlineReplies counts replies the reader wrote itself because they
	// were ready while the writer had nothing queued; the rest went
	// through the writer goroutine.
	InlineReplies uint64
	// AuthFailures counts connections a listener's Security closed: a
	// failed TLS handshake, a refused or failed authentication, a
	// request before authentication, an expired session.
	AuthFailures uint64
	// ThrottledReplies counts replies written that muted their
	// connection (Reply.MuteUntil); MutedWaits counts the times a
	// reader held a request back until its connection's mute ended.
	ThrottledReplies uint64
	MutedWaits       uint64
}

type counters struct {
	requests map[int16]*atomic.Uint64 // keys fixed in New, read-only after

	bytesIn, bytesOut              atomic.Uint64
	connsOpened, connsClosed       atomic.Uint64
	idleClosed                     atomic.Uint64
	protocolErrors, inFlightStalls atomic.Uint64
	sendfileBytes, copiedFileBytes atomic.Uint64
	inlineReplies                  atomic.Uint64
	authFailures                   atomic.Uint64
	throttledReplies, mutedWaits   atomic.Uint64
}

func newCounters(keys map[int16]APIVersionRange) *counters {
	c := &counters{requests: make(map[int16]*atomic.Uint64, len(keys))}
	for k := range keys {
		c.requests[k] = new(atomic.Uint64)
	}
	return c
}

func (c *counters) snapshot() Stats {
	s := Stats{
		Requests:          make(map[int16]uint64, len(c.requests)),
		BytesIn:           c.bytesIn.Load(),
		BytesOut:          c.bytesOut.Load(),
		ConnectionsOpened: c.connsOpened.Load(),
		ConnectionsClosed: c.connsClosed.Load(),
		IdleClosed:        c.idleClosed.Load(),
		ProtocolErrors:    c.protocolErrors.Load(),
		InFlightStalls:    c.inFlightStalls.Load(),
		SendfileBytes:     c.sendfileBytes.Load(),
		CopiedFileBytes:   c.copiedFileBytes.Load(),
		InlineReplies:     c.inlineReplies.Load(),
		AuthFailures:      c.authFailures.Load(),
		ThrottledReplies:  c.throttledReplies.Load(),
		MutedWaits:        c.mutedWaits.Load(),
	}
	for k, v := range c.requests {
		if n := v.Load(); n > 0 {
			s.Requests[k] = n
		}
	}
	return s
}
