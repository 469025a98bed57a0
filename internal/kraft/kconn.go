package kraft

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/kframe"
)

// maxResponseSize bounds a controller response (a ListPartitionReassignments
// of every partition of a large cluster is the biggest).
const maxResponseSize = 256 << 20

// maxKeptRequestBuf is the largest request buffer a connection keeps for
// its next request.
const maxKeptRequestBuf = 64 << 10

var errCorrelation = errors.New("kraft: response correlation id does not match")

// kconn is one plaintext Kafka connection used by one goroutine at a
// time: a request, then its response. It negotiates versions with
// ApiVersions when dialed. Any error leaves it unusable: close it.
type kconn struct {
	addr     string
	nc       net.Conn
	br       *bufio.Reader
	fmt      *kmsg.RequestFormatter
	versions map[int16]int16 // the highest version of each key both sides speak
	nextID   int32
	buf      []byte
}

type dialFunc func(ctx context.Context, network, addr string) (net.Conn, error)

func dialKafka(ctx context.Context, dial dialFunc, addr, clientID string) (*kconn, error) {
	nc, err := dial(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	c := &kconn{addr: addr, nc: nc, br: bufio.NewReader(nc), fmt: kmsg.NewRequestFormatter(kmsg.FormatterClientID(clientID))}
	if err := c.negotiate(ctx); err != nil {
		nc.Close()
		return nil, err
	}
	return c, nil
}

// negotiate asks ApiVersions at v3 and falls back to v0 when the peer
// refuses it.
func (c *kconn) negotiate(ctx context.Context) error {
	for _, v := range []int16{3, 0} {
		req := kmsg.NewPtrApiVersionsRequest()
		req.Version = v
		req.ClientSoftwareName, req.ClientSoftwareVersion = "weir-controller-client", "0"
		raw, err := c.exchange(ctx, req)
		if err != nil {
			return err
		}
		resp := raw.(*kmsg.ApiVersionsResponse)
		if resp.ErrorCode == kerr.UnsupportedVersion.Code && v > 0 {
			continue
		}
		if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
			return fmt.Errorf("kraft: ApiVersions from %s: %w", c.addr, err)
		}
		c.versions = map[int16]int16{}
		for _, k := range resp.ApiKeys {
			if r := kmsg.RequestForKey(k.ApiKey); r != nil && min(r.MaxVersion(), k.MaxVersion) >= k.MinVersion {
				c.versions[k.ApiKey] = min(r.MaxVersion(), k.MaxVersion)
			}
		}
		return nil
	}
	return fmt.Errorf("kraft: ApiVersions refused by %s", c.addr)
}

// roundTrip sends req and returns its response. A request of version 0
// (unset) goes at the highest version both sides speak and keeps it, as
// the client's connections do; one above the peer's highest goes at that
// version and comes back, with its response, at its own. written reports
// whether the request may have reached the peer.
func (c *kconn) roundTrip(ctx context.Context, req kmsg.Request) (resp kmsg.Response, written bool, err error) {
	max, ok := c.versions[req.Key()]
	if !ok {
		return nil, false, fmt.Errorf("%w: %s not served by %s", ErrUnsupportedRequest, kmsg.NameForKey(req.Key()), c.addr)
	}
	orig := req.GetVersion()
	switch {
	case orig == 0:
		req.SetVersion(max)
		orig = max
	case orig > max:
		req.SetVersion(max)
		defer req.SetVersion(orig)
	}
	resp, written, err = c.send(ctx, req)
	if err == nil {
		resp.SetVersion(orig)
	}
	return resp, written, err
}

func (c *kconn) exchange(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
	resp, _, err := c.send(ctx, req)
	return resp, err
}

func (c *kconn) send(ctx context.Context, req kmsg.Request) (kmsg.Response, bool, error) {
	if err := ctx.Err(); err != nil {
		return nil, false, err
	}
	deadline, _ := ctx.Deadline()
	if err := c.nc.SetDeadline(deadline); err != nil {
		return nil, false, err
	}
	// Cancelling ctx unblocks the read or write at once.
	stop := context.AfterFunc(ctx, func() { c.nc.SetDeadline(time.Unix(1, 0)) })
	defer stop()

	id := c.nextID
	c.nextID++
	c.buf = c.fmt.AppendRequest(c.buf[:0], req, id)
	_, err := c.nc.Write(c.buf)
	if cap(c.buf) > maxKeptRequestBuf {
		// A full follower fetch names every partition followed: its
		// buffer is not kept for the idle requests that follow.
		c.buf = nil
	}
	if err != nil {
		return nil, true, c.ioErr(ctx, "write", err)
	}
	resp, err := readResponse(c.br, req, id)
	if err != nil {
		return nil, true, c.ioErr(ctx, "read", err)
	}
	return resp, true, nil
}

func (c *kconn) ioErr(ctx context.Context, op string, err error) error {
	if ctx.Err() != nil {
		err = ctx.Err()
	}
	return fmt.Errorf("kraft: %s %s: %w", op, c.addr, err)
}

func (c *kconn) close() { c.nc.Close() }

// readResponse reads one response frame for req and checks its
// correlation id (internal/kframe does the framing).
func readResponse(r io.Reader, req kmsg.Request, id int32) (kmsg.Response, error) {
	got, rest, err := kframe.ReadResponse(r, maxResponseSize)
	if err != nil {
		return nil, err
	}
	if got != id {
		return nil, fmt.Errorf("%w: sent %d, got %d", errCorrelation, id, got)
	}
	return kframe.DecodeResponse(req, rest)
}
