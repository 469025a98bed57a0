package kraft

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/quorum"
)

// singleNode opens a one-voter node with an active broker 1.
func singleNode(tb testing.TB) (*Node, *BrokerLifecycle) {
	tb.Helper()
	raftAddr := freeAddr(tb)
	n, err := Open(Config{ID: 1, Dir: tb.TempDir(), RaftAddr: raftAddr, Voters: []quorum.Peer{{ID: 1, Addr: raftAddr}}, Logger: testLogger(tb)})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { n.Close() })
	life, err := StartLifecycle(LifecycleConfig{BrokerID: 1, Client: NewLocalClient(n), Metadata: n.FSM(), Logger: testLogger(tb)})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(life.Close)
	select {
	case <-life.Unfenced():
	case <-time.After(10 * time.Second):
		tb.Fatalf("broker not unfenced: %v", life.State())
	}
	return n, life
}

func createOne(name string) *kmsg.CreateTopicsRequest {
	req := kmsg.NewPtrCreateTopicsRequest()
	t := kmsg.NewCreateTopicsRequestTopic()
	t.Topic, t.NumPartitions, t.ReplicationFactor = name, 2, 1
	req.Topics = append(req.Topics, t)
	return req
}

// TestConcurrentDecisions: requests from many goroutines are decided one
// after another against a view that includes the batches still in
// flight, each decision is one entry, and each is answered after its
// entry commits.
func TestConcurrentDecisions(t *testing.T) {
	n, _ := singleNode(t)
	sub := n.FSM().Subscribe(1 << 16)
	defer sub.Close()
	sub.Drain()
	a, err := n.Controller()
	if err != nil {
		t.Fatal(err)
	}
	const names, tries = 40, 4
	var (
		mu      sync.Mutex
		created = map[string]int{}
		exists  = map[string]int{}
		wg      sync.WaitGroup
	)
	for g := range tries {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range names {
				name := fmt.Sprintf("c%02d", (i+g*7)%names)
				resp, err := a.Do(context.Background(), createOne(name))
				if err != nil {
					t.Error(err)
					return
				}
				code := resp.(*kmsg.CreateTopicsResponse).Topics[0].ErrorCode
				mu.Lock()
				switch code {
				case 0:
					created[name]++
					// Answered after the commit: the image holds it.
					if _, ok := n.Image().TopicByName(name); !ok {
						t.Errorf("%s answered before its batch was applied", name)
					}
				case kerr.TopicAlreadyExists.Code:
					exists[name]++
				default:
					t.Errorf("%s: code %d", name, code)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	for i := range names {
		name := fmt.Sprintf("c%02d", i)
		if created[name] != 1 || exists[name] != tries-1 {
			t.Fatalf("%s created %d times, refused %d times", name, created[name], exists[name])
		}
	}
	batches := 0
	for _, u := range sub.Drain() {
		if u.Delta != nil && len(u.Delta.TopicsCreated) > 0 {
			if len(u.Delta.TopicsCreated) != 1 {
				t.Fatalf("a batch created %d topics", len(u.Delta.TopicsCreated))
			}
			batches++
		}
	}
	if batches != names {
		t.Fatalf("%d batches created topics, want %d", batches, names)
	}

	// FenceBroker writes one batch; a second finds nothing to do.
	if wrote, err := a.FenceBroker(context.Background(), 1, -1); err != nil || !wrote {
		t.Fatalf("fence: %v %v", wrote, err)
	}
	if b, _ := n.Image().Broker(1); !b.Fenced {
		t.Fatal("broker 1 not fenced")
	}
	if wrote, err := a.FenceBroker(context.Background(), 1, -1); err != nil || wrote {
		t.Fatalf("second fence: %v %v", wrote, err)
	}
}

// TestCloseFailsWaitingRequests: requests waiting for a controller that
// goes away get NOT_CONTROLLER, none is left hanging.
func TestCloseFailsWaitingRequests(t *testing.T) {
	n, life := singleNode(t)
	a, err := n.Controller()
	if err != nil {
		t.Fatal(err)
	}
	results := make(chan error, 64)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				_, err := a.Do(context.Background(), createOne(fmt.Sprintf("g%d-%d", g, i)))
				if err != nil {
					results <- err
					return
				}
			}
		}()
	}
	eventually(t, 10*time.Second, "some topics created", func() bool { return n.Image().NumTopics() > 20 })
	life.Close()
	closed := make(chan struct{})
	go func() {
		n.Close()
		close(closed)
	}()
	wg.Wait()
	close(results)
	for err := range results {
		var nc *NotControllerError
		if !errors.As(err, &nc) || !errors.Is(err, kerr.NotController) {
			t.Fatalf("a request ended with %v, want NOT_CONTROLLER", err)
		}
	}
	<-closed
	select {
	case <-a.Done():
	default:
		t.Fatal("the handle of a dropped controller is not done")
	}
	if _, err := a.Do(context.Background(), createOne("late")); !errors.Is(err, kerr.NotController) {
		t.Fatalf("request to a dropped controller: %v", err)
	}
}

// TestSessionExpiryFences: a broker that stops heartbeating is fenced
// when its session lapses, by a tick at the controller's deadline (the
// regular tick is too far off to do it), and its leaderships move in the
// same batch. The Kafka client with a Local node takes the local path.
func TestSessionExpiryFences(t *testing.T) {
	raftAddr := freeAddr(t)
	cfg := Config{ID: 1, Dir: t.TempDir(), RaftAddr: raftAddr, Voters: []quorum.Peer{{ID: 1, Addr: raftAddr}}, Logger: testLogger(t),
		TickInterval: time.Hour}
	cfg.Controller.SessionTimeout = 500 * time.Millisecond
	n, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	// No Resolve and no Bootstrap: only the local path can answer.
	cl := NewKafkaClient(KafkaClientConfig{Leader: n.Leader, Local: n})
	defer cl.Close()
	var lives []*BrokerLifecycle
	for id := int32(1); id <= 2; id++ {
		life, err := StartLifecycle(LifecycleConfig{BrokerID: id, Client: cl, Metadata: n.FSM(), HeartbeatInterval: 100 * time.Millisecond, Logger: testLogger(t)})
		if err != nil {
			t.Fatal(err)
		}
		defer life.Close()
		waitUnfenced(t, life)
		lives = append(lives, life)
	}
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "x", -1, -1
	for p := range 4 {
		a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
		a.Partition, a.Replicas = int32(p), []int32{2, 1}
		rt.ReplicaAssignment = append(rt.ReplicaAssignment, a)
	}
	req.Topics = append(req.Topics, rt)
	mustOK(t, cl, req)
	if leaderships(n.Image(), 2) != 4 {
		t.Fatal("broker 2 does not lead the topic")
	}
	stopped := time.Now()
	lives[1].Close()
	eventually(t, 5*time.Second, "broker 2 fenced", func() bool {
		b, _ := n.Image().Broker(2)
		return b.Fenced
	})
	t.Logf("fenced %v after the last heartbeat stopped", time.Since(stopped))
	if leaderships(n.Image(), 2) != 0 || leaderships(n.Image(), 1) != 4 {
		t.Fatalf("after fencing: broker 2 leads %d, broker 1 %d", leaderships(n.Image(), 2), leaderships(n.Image(), 1))
	}
	if b, _ := n.Image().Broker(1); b.Fenced {
		t.Fatal("the broker that kept heartbeating was fenced")
	}
}
