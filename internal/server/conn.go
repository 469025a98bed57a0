package server

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// readBufferSize batches the small frames a client pipelines into one
// read.
const readBufferSize = 16 << 10

// maxKeptWriteBuffer is the largest encode buffer the writer keeps between
// responses.
const maxKeptWriteBuffer = 1 << 20

// conn is one client connection: a reader goroutine that decodes requests
// and calls the dispatcher in order, and a writer goroutine that writes
// replies in the same order. A reply that is ready at once while the
// writer has nothing queued is written by the reader itself (send).
type conn struct {
	s   *Server
	l   *listener
	raw net.Conn // the accepted socket: deadlines and closing
	// nc is what requests are read from and replies written to: raw, or
	// the TLS connection over it once the listener's Security opened it.
	// The reader sets it before reading anything, so before the writer
	// can have a reply to write.
	nc   net.Conn
	gate Gate // nil without Security; the reader's alone
	info ConnInfo
	log  *slog.Logger

	// ctx is cancelled to tear the connection down at once; that also
	// closes nc. Dispatcher.Serve receives it.
	ctx    context.Context
	cancel context.CancelFunc

	// slots holds one token per request read and not yet answered; the
	// reader takes one before reading a frame, the writer gives it back
	// after writing the reply.
	slots chan struct{}
	// queue carries replies to the writer in request order. Its capacity
	// equals slots', so sending never blocks.
	queue chan outgoing
	// queued counts replies sent to queue and not yet written. While it
	// is 0 the writer is idle, and the reader writes a reply that is
	// ready at once itself (send): same order, no goroutine hand-off.
	queued atomic.Int32
	// rbuf is the reader's encode buffer for the replies it writes.
	rbuf []byte
	// mutedUntil is the latest Reply.MuteUntil of the replies written
	// or being written, in Unix nanoseconds: the reader dispatches
	// nothing before it.
	mutedUntil atomic.Int64

	// requests counts the frames read, answered the slots given back (a
	// request answered, or one that needs no answer): the idle sweep's
	// signs of life.
	requests, answered atomic.Uint64
	// idleSeen and idleSince are the idle sweep's alone: requests at its
	// last look, and when it first saw that count.
	idleSeen  uint64
	idleSince time.Time

	stopRead   chan struct{} // closed by stopReading
	stopOnce   sync.Once
	writerDone chan struct{}
}

// outgoing is a reply and what the writer needs to frame it.
type outgoing struct {
	reply         *Reply
	key, version  int16
	correlationID int32
	flexible      bool // response header v1
}

func newConn(s *Server, l *listener, nc net.Conn, id uint64) *conn {
	c := &conn{
		s:          s,
		l:          l,
		raw:        nc,
		nc:         nc,
		info:       ConnInfo{ID: id, Remote: nc.RemoteAddr(), Local: nc.LocalAddr(), Listener: l.Name},
		slots:      make(chan struct{}, s.maxInFlight),
		queue:      make(chan outgoing, s.maxInFlight),
		stopRead:   make(chan struct{}),
		writerDone: make(chan struct{}),
	}
	c.log = s.log.With("conn", id, "remote", addrString(c.info.Remote), "listener", l.Name)
	c.ctx, c.cancel = context.WithCancel(s.baseCtx)
	context.AfterFunc(c.ctx, func() { nc.Close() })
	s.stats.connsOpened.Add(1)
	c.log.Debug("connection opened")
	return c
}

func addrString(a net.Addr) string {
	if a == nil {
		return ""
	}
	return a.String()
}

// stopReading makes the reader stop after the request it is on, if any;
// what was read is still answered. Used by Shutdown.
func (c *conn) stopReading() {
	c.stopOnce.Do(func() {
		close(c.stopRead)
		c.raw.SetReadDeadline(time.Now()) // wake a blocked Read
	})
}

func (c *conn) draining() bool {
	select {
	case <-c.stopRead:
		return true
	default:
		return false
	}
}

// readLoop owns the connection's lifetime: when reading ends it hands the
// writer a closed queue, waits for it, and cleans up.
func (c *conn) readLoop() {
	defer c.s.wg.Done()
	if !c.open() {
		c.cancel()
	} else if flush := c.readRequests(); !flush {
		c.cancel()
	}
	close(c.queue)
	<-c.writerDone
	// Close here, not only in the AfterFunc that wakes blocked reads:
	// that runs on a goroutine of its own, and Shutdown's callers rely
	// on every socket being closed once it returns.
	c.raw.Close()
	for out := range c.queue { // left behind by a writer that quit early
		out.reply.abandon()
	}
	c.s.forget(c)
	c.s.stats.connsClosed.Add(1)
	c.log.Debug("connection closed")
}

// open runs the listener's Security on the new connection: the TLS
// handshake and the gate that authenticates its requests. It reports
// whether the connection may go on. The handshake timeout runs from the
// connection's first byte: until then it is idle, as on a listener
// without security, and one that closes before sending anything failed
// no handshake (the active controller's liveness watch holds such a
// connection to every broker's inter-broker listener).
func (c *conn) open() bool {
	sec := c.l.Security
	if sec == nil {
		return true
	}
	if !awaitFirstByte(c.raw) {
		if c.ctx.Err() == nil && !c.draining() {
			c.log.Debug("connection closed before it sent anything")
		}
		return false
	}
	ctx, cancel := context.WithTimeout(c.ctx, c.s.handshake)
	defer cancel()
	nc, gate, err := sec.Open(ctx, c.raw)
	if err != nil {
		c.s.stats.authFailures.Add(1)
		if c.ctx.Err() == nil && !c.draining() {
			c.log.Info("connection refused by its listener's security", "err", err)
		}
		return false
	}
	c.nc, c.gate = nc, gate
	return true
}

// readRequests reads and dispatches requests until it must stop. It
// reports whether the replies already queued should still be written
// (shutdown, protocol violation, a CloseConnection reply) or not (the peer
// is gone).
func (c *conn) readRequests() (flush bool) {
	br := bufio.NewReaderSize(c.nc, readBufferSize)
	for {
		if c.draining() || !c.acquireSlot() {
			return true
		}
		var buf []byte
		var pooled bool
		limit := c.s.maxRequestSize
		if c.gate != nil {
			if m := c.gate.MaxFrame(); m > 0 && m < limit {
				limit = m
			}
		}
		if len(c.s.reusable) > 0 {
			// Peek blocks until the prefix and key arrive, as the read
			// below would have.
			if size, key, ok := peekFrameKey(br); ok && c.s.reusable[key] && size >= minFrameSize && size <= limit {
				buf, pooled = c.s.frames.get(int(size)), true
			}
		}
		frame, err := readFrameInto(br, limit, buf)
		if err != nil {
			if fse, ok := errors.AsType[*frameSizeError](err); ok {
				c.violation("bad frame size", slog.Int("size", int(fse.size)))
				return true
			}
			return c.draining()
		}
		c.s.stats.bytesIn.Add(uint64(4 + len(frame)))
		c.requests.Add(1)
		if !c.waitUnmuted() {
			if pooled {
				c.s.frames.put(frame)
			}
			return true
		}
		more, held := c.handle(frame)
		if pooled && !held {
			c.s.frames.put(frame) // Serve has returned
		}
		if !more {
			return true
		}
	}
}

// mute records the mute of a reply about to be written.
func (c *conn) mute(r *Reply) {
	until := r.muteUntil.Load()
	if until == 0 {
		return
	}
	c.s.stats.throttledReplies.Add(1)
	for {
		cur := c.mutedUntil.Load()
		if until <= cur || c.mutedUntil.CompareAndSwap(cur, until) {
			return
		}
	}
}

// waitUnmuted waits until the connection's mute has passed. It fails
// when the connection stops reading first.
func (c *conn) waitUnmuted() bool {
	for {
		wait := time.Until(time.Unix(0, c.mutedUntil.Load()))
		if wait <= 0 {
			return true
		}
		c.s.stats.mutedWaits.Add(1)
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-c.stopRead:
			t.Stop()
			return false
		case <-c.ctx.Done():
			t.Stop()
			return false
		}
	}
}

// acquireSlot takes an in-flight slot, waiting while the bound is
// reached. It fails when the connection stops reading.
func (c *conn) acquireSlot() bool {
	select {
	case c.slots <- struct{}{}:
		return true
	default:
	}
	c.s.stats.inFlightStalls.Add(1)
	select {
	case c.slots <- struct{}{}:
		return true
	case <-c.stopRead:
	case <-c.ctx.Done():
	}
	return false
}

// handle decodes and dispatches one frame. It reports whether reading
// should go on, and whether the dispatcher holds the request (Hold), so
// that its frame must not be reused.
func (c *conn) handle(frame []byte) (more, held bool) {
	if c.gate != nil {
		if h, ok := readFixedHeader(frame); ok && !c.gate.Admit(h.key) {
			c.s.stats.authFailures.Add(1)
			c.log.Info("request refused before authentication; closing connection", "api", kmsg.NameForKey(h.key), "key", h.key)
			return false, false
		}
	}
	h, req, clientID, err := decodeWith(c.l.versions, frame)
	if err != nil {
		c.violation(err.Error(), "key", h.key, "api", kmsg.NameForKey(h.key), "version", h.version)
		return false, false
	}
	c.s.stats.requests[h.key].Add(1)
	if req == nil { // an ApiVersions version we do not serve
		reply := Ready(apiVersionsFallback(c.l.versions[apiVersionsKey]))
		return c.send(outgoing{reply: reply, key: apiVersionsKey, correlationID: h.correlationID}), false
	}
	r := &Request{
		Key:           h.key,
		Version:       h.version,
		CorrelationID: h.correlationID,
		ClientID:      clientID,
		Body:          req,
		Size:          int32(len(frame)),
		Conn:          c.info,
	}
	if c.gate != nil {
		v := c.gate.Check(r)
		if v.Principal != "" {
			c.info.Principal = v.Principal
			r.Conn.Principal = v.Principal
		}
		if v.Close {
			c.s.stats.authFailures.Add(1)
			c.log.Info("closing connection", "reason", v.Reason, "api", kmsg.NameForKey(h.key))
		}
		if v.Response != nil {
			more := c.send(outgoing{reply: Ready(v.Response), key: h.key, version: h.version,
				correlationID: h.correlationID, flexible: flexibleResponseHeader(req)})
			return more && !v.Close, false
		}
		if v.Close {
			return false, false
		}
	}
	reply := c.s.dispatcher.Serve(c.ctx, r)
	if reply == nil {
		c.log.Error("dispatcher returned no reply, closing connection", "key", h.key, "version", h.version)
		return false, false
	}
	return c.send(outgoing{
		reply:         reply,
		key:           h.key,
		version:       h.version,
		correlationID: h.correlationID,
		flexible:      flexibleResponseHeader(req),
	}), reply.holdsFrame
}

// send answers one request in order and reports whether reading should go
// on. A reply that is ready while no earlier one waits for the writer is
// written here, on the reader, which saves waking the writer for every
// request a client sends one after another (a produce answered at once, a
// fetch with data). Any other reply goes to the writer's queue.
func (c *conn) send(out outgoing) bool {
	if c.queued.Load() == 0 && out.reply.ready() {
		c.s.stats.inlineReplies.Add(1)
		c.mute(out.reply)
		var err error
		c.rbuf, err = c.write(c.rbuf[:0], out)
		if cap(c.rbuf) > maxKeptWriteBuffer {
			c.rbuf = nil
		}
		c.answered.Add(1)
		<-c.slots
		if err != nil {
			if !errors.Is(err, errCloseRequested) {
				if c.ctx.Err() == nil {
					c.log.Debug("write failed", "err", err)
				}
				c.cancel() // nothing is left to flush to a broken socket
			}
			return false
		}
		return true
	}
	c.queued.Add(1)
	c.queue <- out
	return !out.reply.closes()
}

func (c *conn) violation(msg string, attrs ...any) {
	c.s.stats.protocolErrors.Add(1)
	c.log.Warn(msg+"; closing connection", attrs...)
}

// writeLoop writes replies in request order, waiting for each pending one
// in turn. It ends when the queue is closed and drained, on a
// CloseConnection reply, on a write error, or on teardown, and closes the
// connection as it goes.
func (c *conn) writeLoop() {
	defer c.s.wg.Done()
	defer close(c.writerDone)
	defer c.cancel()
	var buf []byte
	for out := range c.queue {
		select {
		case <-out.reply.done:
		case <-c.ctx.Done():
			out.reply.abandon()
			return
		}
		// Mute before writing: once the client has the reply it may send
		// its next request, which must find the connection muted.
		c.mute(out.reply)
		var err error
		if buf, err = c.write(buf[:0], out); err != nil {
			if !errors.Is(err, errCloseRequested) && c.ctx.Err() == nil {
				c.log.Debug("write failed", "err", err)
			}
			return
		}
		if cap(buf) > maxKeptWriteBuffer {
			buf = nil
		}
		c.queued.Add(-1) // written: the reader may write the next one itself
		c.answered.Add(1)
		<-c.slots
	}
}

var errCloseRequested = errors.New("server: dispatcher asked to close the connection")

// write writes one completed reply, encoding into buf.
func (c *conn) write(buf []byte, out outgoing) ([]byte, error) {
	r := out.reply
	switch r.kind {
	case kindNone:
		return buf, nil
	case kindClose:
		return buf, errCloseRequested
	case kindBody:
		defer r.body.release()
		buf = appendFrameStart(buf, out)
		if err := setFrameSize(buf, r.body.Len()); err != nil {
			return buf, err
		}
		return buf, c.writeBody(buf, r.body)
	}
	if r.mapResp != nil && r.resp != nil {
		r.resp = r.mapResp(r.resp)
	}
	if r.resp == nil || r.resp.Key() != out.key {
		c.log.Error("dispatcher replied with no response or one of another key, closing connection", "key", out.key)
		return buf, errCloseRequested
	}
	resp := r.resp
	if out.key == apiVersionsKey {
		resp = withEdgeKeys(resp, c.l.extra)
	}
	resp.SetVersion(out.version)
	buf = resp.AppendTo(appendFrameStart(buf, out))
	if err := setFrameSize(buf, 0); err != nil {
		return buf, err
	}
	n, err := c.nc.Write(buf)
	c.s.stats.bytesOut.Add(uint64(n))
	return buf, err
}

// appendFrameStart appends a length prefix to patch and the response
// header.
func appendFrameStart(buf []byte, out outgoing) []byte {
	return appendResponseHeader(append(buf, 0, 0, 0, 0), out.correlationID, out.flexible)
}

// setFrameSize patches the length prefix of frame, whose last more bytes
// are written separately.
func setFrameSize(frame []byte, more int64) error {
	size := int64(len(frame)-4) + more
	if size > math.MaxInt32 {
		return fmt.Errorf("server: response of %d bytes", size)
	}
	binary.BigEndian.PutUint32(frame, uint32(size))
	return nil
}

// writeBody writes the framed header, then the body's segments: byte
// slices gathered into one writev, file ranges with sendFileRange.
func (c *conn) writeBody(header []byte, b *Body) error {
	bufs := net.Buffers{header}
	flush := func() error {
		n, err := bufs.WriteTo(c.nc)
		c.s.stats.bytesOut.Add(uint64(n))
		bufs = bufs[:0]
		return err
	}
	for _, s := range b.segs {
		if s.file == nil {
			bufs = append(bufs, s.buf)
			continue
		}
		if err := flush(); err != nil {
			return err
		}
		n, zeroCopy, err := sendFileRange(c.nc, s.file, s.off, s.n)
		c.s.stats.bytesOut.Add(uint64(n))
		if zeroCopy {
			c.s.stats.sendfileBytes.Add(uint64(n))
		} else {
			c.s.stats.copiedFileBytes.Add(uint64(n))
		}
		if err != nil {
			return err
		}
	}
	return flush()
}
