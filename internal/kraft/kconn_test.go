package kraft

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/server"
)

// readResponse refuses an answer to another request.
func TestReadResponseChecksCorrelation(t *testing.T) {
	hb := kmsg.NewPtrBrokerHeartbeatRequest()
	hb.Version = 1
	ok := kmsg.NewPtrBrokerHeartbeatResponse()
	ok.Version = 1
	b := binary.BigEndian.AppendUint32(nil, 0)
	b = binary.BigEndian.AppendUint32(b, 7)
	b = append(b, 0)
	b = append(b, ok.AppendTo(nil)...)
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	if _, err := readResponse(bytes.NewReader(b), hb, 7); err != nil {
		t.Fatal(err)
	}
	if _, err := readResponse(bytes.NewReader(b), hb, 8); !errors.Is(err, errCorrelation) {
		t.Fatalf("other correlation id: %v", err)
	}
}

// scripted is a Kafka listener whose answers a test decides.
type scripted struct {
	keys   []APIKeyRange
	answer func(req kmsg.Request) kmsg.Response

	mu   sync.Mutex
	seen []kmsg.Request
}

func (s *scripted) Versions() []server.APIVersionRange { return controllerVersions(s.keys) }

func (s *scripted) Serve(_ context.Context, req *server.Request) *server.Reply {
	if req.Key == 18 {
		return apiVersions(req, s.Versions())
	}
	s.mu.Lock()
	s.seen = append(s.seen, req.Body)
	s.mu.Unlock()
	return server.Ready(s.answer(req.Body))
}

func (s *scripted) requests() []kmsg.Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]kmsg.Request(nil), s.seen...)
}

func heartbeatAnswer(code int16) func(kmsg.Request) kmsg.Response {
	return func(req kmsg.Request) kmsg.Response {
		resp := req.ResponseKind().(*kmsg.BrokerHeartbeatResponse)
		resp.ErrorCode = code
		return resp
	}
}

func TestKafkaClientFindsTheController(t *testing.T) {
	notc := &scripted{keys: ControllerKeys, answer: NotControllerResponse}
	ctrl := &scripted{keys: []APIKeyRange{{Key: 63, Min: 0, Max: 1}}, answer: heartbeatAnswer(0)}
	a, b := serve(t, notc, "127.0.0.1:0"), serve(t, ctrl, "127.0.0.1:0")
	defer a.stop()
	defer b.stop()

	// Leader unknown: the bootstrap addresses are tried in turn.
	cl := NewKafkaClient(KafkaClientConfig{Bootstrap: []string{a.srv.Addr().String(), b.srv.Addr().String()}})
	defer cl.Close()
	req := kmsg.NewPtrBrokerHeartbeatRequest()
	req.BrokerID = 3
	resp, err := cl.Heartbeat(ctxTimeout(t, 5*time.Second), req)
	if err != nil || resp.ErrorCode != 0 {
		t.Fatalf("%+v %v", resp, err)
	}
	// Version 0 means "the highest both speak": this controller stops at 1.
	if got := ctrl.requests(); len(got) != 1 || got[0].GetVersion() != 1 || got[0].(*kmsg.BrokerHeartbeatRequest).BrokerID != 3 {
		t.Fatalf("controller saw %+v", got)
	}
	if len(notc.requests()) != 1 {
		t.Fatalf("the other node saw %d requests", len(notc.requests()))
	}

	// A request above the peer's highest version goes at that version and
	// comes back at its own.
	req2 := kmsg.NewPtrBrokerHeartbeatRequest()
	req2.Version = 2
	resp, err = cl.Heartbeat(ctxTimeout(t, 5*time.Second), req2)
	if err != nil || resp.Version != 2 || req2.Version != 2 {
		t.Fatalf("%+v %v", resp, err)
	}
	if got := ctrl.requests(); got[len(got)-1].GetVersion() != 1 {
		t.Fatalf("sent at v%d", got[len(got)-1].GetVersion())
	}

	// With a known leader, requests go straight to it.
	direct := NewKafkaClient(KafkaClientConfig{
		Leader:  func() int32 { return 2 },
		Resolve: func(id int32) (string, bool) { return b.srv.Addr().String(), id == 2 },
	})
	defer direct.Close()
	before := len(notc.requests())
	if resp, err := direct.Heartbeat(ctxTimeout(t, 5*time.Second), kmsg.NewPtrBrokerHeartbeatRequest()); err != nil || resp.ErrorCode != 0 {
		t.Fatalf("%+v %v", resp, err)
	}
	if len(notc.requests()) != before {
		t.Fatal("a request went to the node that is not the leader")
	}
	// A key the peer does not serve fails at once, without retries.
	start := time.Now()
	if _, err := direct.Admin(ctxTimeout(t, 5*time.Second), kmsg.NewPtrCreateTopicsRequest()); !errors.Is(err, ErrUnsupportedRequest) {
		t.Fatalf("create topics at a peer without it: %v", err)
	}
	if time.Since(start) > time.Second {
		t.Fatal("an unsupported request was retried")
	}
}

func TestKafkaClientGivesUpWithTheLastAnswer(t *testing.T) {
	notc := &scripted{keys: ControllerKeys, answer: heartbeatAnswer(kerr.NotController.Code)}
	a := serve(t, notc, "127.0.0.1:0")
	defer a.stop()
	cl := NewKafkaClient(KafkaClientConfig{Bootstrap: []string{a.srv.Addr().String()}})
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	resp, err := cl.Heartbeat(ctx, kmsg.NewPtrBrokerHeartbeatRequest())
	if err != nil || resp.ErrorCode != kerr.NotController.Code {
		t.Fatalf("%+v %v: want the NOT_CONTROLLER answer", resp, err)
	}
	if n := len(notc.requests()); n < 2 {
		t.Fatalf("%d attempts in 200ms", n)
	}

	// Nothing listening: the error names the cause once ctx ends.
	dead := NewKafkaClient(KafkaClientConfig{Bootstrap: []string{freeAddr(t)}})
	ctx2, cancel2 := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel2()
	if _, err := dead.Heartbeat(ctx2, kmsg.NewPtrBrokerHeartbeatRequest()); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("no listener: %v", err)
	}
	cl.Close()
	if _, err := cl.Heartbeat(ctxTimeout(t, time.Second), kmsg.NewPtrBrokerHeartbeatRequest()); !errors.Is(err, ErrClosed) {
		t.Fatalf("closed client: %v", err)
	}
}

// TestKafkaClientDropsDeadIdleConnections: a connection the peer closed
// while idle is not used again, so the next request is not lost to it.
func TestKafkaClientDropsDeadIdleConnections(t *testing.T) {
	ctrl := &scripted{keys: ControllerKeys, answer: func(req kmsg.Request) kmsg.Response { return req.ResponseKind() }}
	addr := freeAddr(t)
	a := serve(t, ctrl, addr)
	cl := NewKafkaClient(KafkaClientConfig{Bootstrap: []string{addr}})
	defer cl.Close()
	create := func() error {
		_, err := cl.Admin(ctxTimeout(t, 5*time.Second), kmsg.NewPtrCreateTopicsRequest())
		return err
	}
	if err := create(); err != nil {
		t.Fatal(err)
	}
	a.stop()
	a = serve(t, ctrl, addr)
	defer a.stop()
	// CreateTopics is not resent after a failure, so only a fresh
	// connection makes this succeed.
	if err := create(); err != nil {
		t.Fatalf("after the peer restarted: %v", err)
	}
	if n := len(ctrl.requests()); n != 2 {
		t.Fatalf("%d requests served", n)
	}
}

func TestIdleConnAlive(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		accepted <- c
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	peer := <-accepted
	if !idleConnAlive(c) {
		t.Fatal("an open idle connection reads as dead")
	}
	peer.Close()
	eventually(t, 5*time.Second, "closed peer seen", func() bool { return !idleConnAlive(c) })
}

// TestKafkaClientCapsConnections: twenty requests at once to one address
// open no more than MaxConnsPerAddr connections, the others wait for
// one and are all answered; afterwards the connections stay open for
// the next requests, and a waiting request gives up with its context.
func TestKafkaClientCapsConnections(t *testing.T) {
	release := make(chan struct{})
	var inFlight, most atomic.Int32
	ctrl := &scripted{keys: ControllerKeys, answer: func(req kmsg.Request) kmsg.Response {
		n := inFlight.Add(1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		<-release
		inFlight.Add(-1)
		return req.ResponseKind()
	}}
	a := serve(t, ctrl, "127.0.0.1:0")
	defer a.stop()
	cl := NewKafkaClient(KafkaClientConfig{Bootstrap: []string{a.srv.Addr().String()}, MaxConnsPerAddr: 3})
	defer cl.Close()

	const n = 20
	errs := make(chan error, n)
	for range n {
		go func() {
			_, err := cl.Admin(ctxTimeout(t, 20*time.Second), kmsg.NewPtrListPartitionReassignmentsRequest())
			errs <- err
		}()
	}
	eventually(t, 10*time.Second, "three requests in flight", func() bool { return inFlight.Load() == 3 })
	// The others wait for a connection rather than open one.
	waiter, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	_, err := cl.Admin(waiter, kmsg.NewPtrListPartitionReassignmentsRequest())
	cancel()
	if err == nil {
		t.Fatal("a request beyond the cap was answered while every connection was busy")
	}
	close(release)
	for range n {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if got := most.Load(); got != 3 {
		t.Fatalf("%d requests in flight at most, want 3", got)
	}
	if d := cl.Dials(); d != 3 {
		t.Fatalf("%d connections opened, want 3", d)
	}
	for range 10 {
		if _, err := cl.Admin(ctxTimeout(t, 5*time.Second), kmsg.NewPtrListPartitionReassignmentsRequest()); err != nil {
			t.Fatal(err)
		}
	}
	if d := cl.Dials(); d != 3 {
		t.Fatalf("%d connections opened after ten more requests, want the same 3", d)
	}
}

// TestKafkaClientFollowsALeaderThatMoves: a request waiting on a
// controller that stopped answering (its process descheduled) is given
// up as soon as the quorum names another leader, not when its timeout
// ends: a request safe to resend then goes to the new leader, any other
// comes back with the error so its sender decides (a broker's ISR
// changes resend; they queue behind the one in flight).
func TestKafkaClientFollowsALeaderThatMoves(t *testing.T) {
	release := make(chan struct{})
	stuck := &scripted{keys: ControllerKeys, answer: func(req kmsg.Request) kmsg.Response {
		<-release
		return NotControllerResponse(req)
	}}
	ctrl := &scripted{keys: ControllerKeys, answer: func(req kmsg.Request) kmsg.Response { return req.ResponseKind() }}
	a, b := serve(t, stuck, "127.0.0.1:0"), serve(t, ctrl, "127.0.0.1:0")
	defer b.stop()
	defer a.stop()
	defer close(release)

	var leader atomic.Int32
	cl := NewKafkaClient(KafkaClientConfig{
		Leader: func() int32 { return leader.Load() },
		Resolve: func(id int32) (string, bool) {
			switch id {
			case 1:
				return a.srv.Addr().String(), true
			case 2:
				return b.srv.Addr().String(), true
			}
			return "", false
		},
		// While no leader is known, the stuck node is where requests go.
		Bootstrap:  []string{a.srv.Addr().String()},
		LeaderPoll: 10 * time.Millisecond,
	})
	defer cl.Close()

	for _, tc := range []struct {
		name string
		// from is the leader named when the request is sent: the stuck
		// node, or none (the request goes to the bootstrap address).
		from int32
		send func(ctx context.Context) error
		// want is nil when the request must be answered by the new
		// leader, else the error it must come back with.
		want error
	}{
		{"heartbeat, resent to the new leader", 1, func(ctx context.Context) error {
			_, err := cl.Heartbeat(ctx, kmsg.NewPtrBrokerHeartbeatRequest())
			return err
		}, nil},
		{"alter partition, given back", 1, func(ctx context.Context) error {
			_, err := cl.Admin(ctx, kmsg.NewPtrAlterPartitionRequest())
			return err
		}, errLeaderMoved},
		{"alter partition sent while leaderless, given back", -1, func(ctx context.Context) error {
			_, err := cl.Admin(ctx, kmsg.NewPtrAlterPartitionRequest())
			return err
		}, errLeaderMoved},
	} {
		t.Run(tc.name, func(t *testing.T) {
			leader.Store(tc.from)
			before := len(stuck.requests())
			go func() {
				// Once the stuck node holds the request, the quorum
				// elects node 2.
				for len(stuck.requests()) == before {
					time.Sleep(5 * time.Millisecond)
				}
				leader.Store(2)
			}()
			start := time.Now()
			err := tc.send(ctxTimeout(t, 20*time.Second))
			if took := time.Since(start); took > 5*time.Second {
				t.Fatalf("answered after %v: the request waited for the old leader", took)
			}
			if tc.want == nil && err != nil || tc.want != nil && !errors.Is(err, tc.want) {
				t.Fatalf("err %v, want %v", err, tc.want)
			}
		})
	}
	if n := len(ctrl.requests()); n != 1 {
		t.Fatalf("the new leader saw %d requests, want the heartbeat only", n)
	}
}

// TestKafkaClientDialFollowsALeaderThatMoves: a connection to a
// descheduled process completes in its kernel and then waits for the
// ApiVersions answer; that wait too ends when the quorum names another
// leader, not after DialTimeout.
func TestKafkaClientDialFollowsALeaderThatMoves(t *testing.T) {
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	accepted := make(chan net.Conn, 4)
	go func() {
		for {
			c, err := silent.Accept()
			if err != nil {
				return
			}
			accepted <- c // held open, never answered
		}
	}()
	defer func() {
		for len(accepted) > 0 {
			(<-accepted).Close()
		}
	}()
	ctrl := &scripted{keys: ControllerKeys, answer: func(req kmsg.Request) kmsg.Response { return req.ResponseKind() }}
	b := serve(t, ctrl, "127.0.0.1:0")
	defer b.stop()

	var leader atomic.Int32
	leader.Store(1)
	cl := NewKafkaClient(KafkaClientConfig{
		Leader: func() int32 { return leader.Load() },
		Resolve: func(id int32) (string, bool) {
			if id == 1 {
				return silent.Addr().String(), true
			}
			return b.srv.Addr().String(), id == 2
		},
		DialTimeout: 20 * time.Second,
		LeaderPoll:  10 * time.Millisecond,
	})
	defer cl.Close()
	go func() {
		c := <-accepted
		accepted <- c
		leader.Store(2)
	}()
	start := time.Now()
	if _, err := cl.Heartbeat(ctxTimeout(t, 30*time.Second), kmsg.NewPtrBrokerHeartbeatRequest()); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("answered after %v: the dial waited for the old leader", took)
	}
	if n := len(ctrl.requests()); n != 1 {
		t.Fatalf("the new leader saw %d requests", n)
	}
}
