package kraft

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/quorum"
)

// TestJoinSingleNode: a broker with the zero QuorumConfig joins a quorum
// of itself alone, runs the active controller, is told to retry
// (COORDINATOR_LOAD_IN_PROGRESS) a producer id block asked for before it
// registered or with a stale epoch, reserves blocks that do not overlap
// once registered, and finds the same cluster id when it joins again over
// the same directory.
func TestJoinSingleNode(t *testing.T) {
	dir := t.TempDir()
	join := func() Joined {
		t.Helper()
		j, err := Join(JoinConfig{NodeID: 1, DataDir: dir, Logger: testLogger(t), ClientID: "broker-1",
			InterBrokerListener: func() string { return "PLAINTEXT" }})
		if err != nil {
			t.Fatal(err)
		}
		if err := j.Node.WaitController(10 * time.Second); err != nil {
			j.Client.Close()
			j.Node.Close()
			t.Fatal(err)
		}
		return j
	}
	j := join()
	if j.ClusterID == "" {
		t.Fatal("no cluster id")
	}
	// Before the broker registered: a retriable error, no request.
	early := ProducerIDReserver{Client: j.Client, BrokerID: 1, Epoch: func() int64 { return 0 }, Ctx: context.Background()}
	if _, err := early.Reserve(1000); !errors.Is(err, kerr.CoordinatorLoadInProgress) {
		t.Fatalf("reserve before registering: %v, want COORDINATOR_LOAD_IN_PROGRESS", err)
	}
	// A stale epoch: the same.
	stale := ProducerIDReserver{Client: j.Client, BrokerID: 1, Epoch: func() int64 { return 99 }, Ctx: context.Background()}
	if _, err := stale.Reserve(1000); !errors.Is(err, kerr.CoordinatorLoadInProgress) {
		t.Fatalf("reserve with a stale epoch: %v, want COORDINATOR_LOAD_IN_PROGRESS", err)
	}
	life, err := StartLifecycle(LifecycleConfig{BrokerID: 1, ClusterID: j.ClusterID, Client: j.Client, Metadata: j.Node.FSM(), Logger: testLogger(t),
		Listeners: []kmsg.BrokerRegistrationRequestListener{{Name: "PLAINTEXT", Host: "127.0.0.1", Port: 9092}}})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-life.Unfenced():
	case <-time.After(10 * time.Second):
		t.Fatalf("broker not unfenced, state %v", life.State())
	}
	r := ProducerIDReserver{Client: j.Client, BrokerID: 1, Epoch: life.Epoch, Ctx: context.Background()}
	a, err := r.Reserve(1000)
	if err != nil {
		t.Fatal(err)
	}
	b, err := r.Reserve(1000)
	if err != nil {
		t.Fatal(err)
	}
	if b < a+1000 {
		t.Fatalf("second block starts at %d, inside the first (%d, 1000 ids)", b, a)
	}
	life.Close()
	j.Client.Close()
	j.Node.Close()

	again := join()
	defer func() { again.Client.Close(); again.Node.Close() }()
	if again.ClusterID != j.ClusterID {
		t.Fatalf("cluster id %q after a restart, was %q", again.ClusterID, j.ClusterID)
	}
}

// TestJoinNeedsRaftAddress: a node of a multi-node quorum without a raft
// address is refused before anything is opened.
func TestJoinNeedsRaftAddress(t *testing.T) {
	dir := t.TempDir()
	_, err := Join(JoinConfig{NodeID: 1, DataDir: dir, Quorum: QuorumConfig{Voters: []quorum.Peer{{ID: 1, Addr: "a:1"}, {ID: 2, Addr: "b:1"}}}})
	if err == nil {
		t.Fatal("joined a multi-node quorum without a raft address")
	}
}

// TestQuorumConfigSingle: which configurations are a quorum of one.
func TestQuorumConfigSingle(t *testing.T) {
	me, other := quorum.Peer{ID: 1, Addr: "a:1"}, quorum.Peer{ID: 2, Addr: "b:1"}
	for _, tc := range []struct {
		name string
		c    QuorumConfig
		want bool
	}{
		{"zero value", QuorumConfig{}, true},
		{"itself as the only voter", QuorumConfig{Voters: []quorum.Peer{me}}, true},
		{"another voter", QuorumConfig{Voters: []quorum.Peer{me, other}}, false},
		{"someone else as the voter", QuorumConfig{Voters: []quorum.Peer{other}}, false},
		{"itself with a non-voter", QuorumConfig{Voters: []quorum.Peer{me}, NonVoters: []quorum.Peer{other}}, false},
	} {
		if got := tc.c.Single(1); got != tc.want {
			t.Errorf("%s: Single = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestClientError: what a client sees of a failed controller call.
func TestClientError(t *testing.T) {
	for _, tc := range []struct {
		in   error
		want error
	}{
		{kerr.InvalidTopicException, kerr.InvalidTopicException},
		{context.DeadlineExceeded, kerr.RequestTimedOut},
		{context.Canceled, kerr.RequestTimedOut},
		{errors.New("connection refused"), kerr.NotController},
	} {
		if got := ClientError(tc.in); !errors.Is(got, tc.want) {
			t.Errorf("ClientError(%v) = %v, want %v", tc.in, got, tc.want)
		}
	}
}
