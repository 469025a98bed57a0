package kraft

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/metadata"
	"weir/internal/quorum"
	"weir/internal/server"
	"weir/internal/testport"
)

// eventually polls cond until it holds or d passes.
func eventually(tb testing.TB, d time.Duration, what string, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("not true after %v: %s", d, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func freeAddr(tb testing.TB) string {
	tb.Helper()
	return testport.Addr(tb)
}

func testLogger(tb testing.TB) *slog.Logger {
	if os.Getenv("CLUSTER_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.DiscardHandler)
}

// listener is a node's Kafka listener in tests: the real protocol front
// end (internal/server) answering ApiVersions and the controller keys
// through HandleControllerRequest, as the broker will.
type listener struct {
	srv  *server.Server
	done chan error
}

type controllerDispatcher struct{ n *Node }

func (d controllerDispatcher) Versions() []server.APIVersionRange {
	return controllerVersions(ControllerKeys)
}

// controllerVersions is ApiVersions and the given keys.
func controllerVersions(keys []APIKeyRange) []server.APIVersionRange {
	out := []server.APIVersionRange{{Key: 18, Min: 0, Max: 4}}
	for _, k := range keys {
		out = append(out, server.APIVersionRange{Key: k.Key, Min: k.Min, Max: k.Max})
	}
	return out
}

// apiVersions answers ApiVersions with ranges.
func apiVersions(req *server.Request, ranges []server.APIVersionRange) *server.Reply {
	resp := req.Body.ResponseKind().(*kmsg.ApiVersionsResponse)
	for _, v := range ranges {
		k := kmsg.NewApiVersionsResponseApiKey()
		k.ApiKey, k.MinVersion, k.MaxVersion = v.Key, v.Min, v.Max
		resp.ApiKeys = append(resp.ApiKeys, k)
	}
	return server.Ready(resp)
}

func (d controllerDispatcher) Serve(ctx context.Context, req *server.Request) *server.Reply {
	if req.Key == 18 {
		return apiVersions(req, d.Versions())
	}
	resp, err := d.n.HandleControllerRequest(ctx, req.Key, req.Body)
	if err != nil {
		return server.CloseConnection()
	}
	return server.Ready(resp)
}

func startListener(tb testing.TB, n *Node, addr string) *listener {
	tb.Helper()
	return serve(tb, controllerDispatcher{n}, addr)
}

func serve(tb testing.TB, d server.Dispatcher, addr string) *listener {
	tb.Helper()
	var srv *server.Server
	var err error
	// A restarted node listens on its old port, which may take a moment
	// to be free again.
	for i := 0; ; i++ {
		srv, err = server.New(server.Config{Addr: addr, Dispatcher: d, Logger: testLogger(tb)})
		if err == nil || i == 50 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		tb.Fatal(err)
	}
	l := &listener{srv: srv, done: make(chan error, 1)}
	go func() { l.done <- srv.Serve(context.Background()) }()
	return l
}

func (l *listener) stop() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	l.srv.Shutdown(ctx)
	<-l.done
}

// testNode is one node of a test cluster: metadata node, Kafka
// listener, controller client and broker lifecycle.
type testNode struct {
	id        int32
	cfg       Config
	kafkaAddr string
	node      *Node
	lis       *listener
	client    *KafkaClient
	life      *BrokerLifecycle
}

type testCluster struct {
	tb    testing.TB
	nodes map[int32]*testNode
	// tune adjusts every node's config before it opens.
	tune func(*Config)
}

// startCluster starts voters nodes 1..voters and non-voters after them,
// without broker lifecycles.
func startCluster(tb testing.TB, voters, nonVoters int, tune func(*Config)) *testCluster {
	tb.Helper()
	c := &testCluster{tb: tb, nodes: map[int32]*testNode{}, tune: tune}
	var vs, nvs []quorum.Peer
	for i := 1; i <= voters+nonVoters; i++ {
		p := quorum.Peer{ID: int32(i), Addr: freeAddr(tb)}
		if i <= voters {
			vs = append(vs, p)
		} else {
			nvs = append(nvs, p)
		}
		c.nodes[int32(i)] = &testNode{id: int32(i), kafkaAddr: freeAddr(tb)}
	}
	for _, p := range append(append([]quorum.Peer(nil), vs...), nvs...) {
		tn := c.nodes[p.ID]
		tn.cfg = Config{ID: p.ID, Dir: tb.TempDir(), RaftAddr: p.Addr, Voters: vs, NonVoters: nvs, Logger: testLogger(tb)}
		if tune != nil {
			tune(&tn.cfg)
		}
		c.open(tn)
	}
	tb.Cleanup(c.close)
	return c
}

func (c *testCluster) open(tn *testNode) {
	c.tb.Helper()
	n, err := Open(tn.cfg)
	if err != nil {
		c.tb.Fatal(err)
	}
	tn.node = n
	tn.lis = startListener(c.tb, n, tn.kafkaAddr)
	tn.client = NewKafkaClient(KafkaClientConfig{Leader: n.Leader, Resolve: c.resolve, ClientID: fmt.Sprint("broker-", tn.id), Logger: testLogger(c.tb)})
}

func (c *testCluster) resolve(id int32) (string, bool) {
	tn, ok := c.nodes[id]
	if !ok {
		return "", false
	}
	return tn.kafkaAddr, true
}

// startBroker starts node id's broker lifecycle.
func (c *testCluster) startBroker(id int32) *BrokerLifecycle {
	c.tb.Helper()
	tn := c.nodes[id]
	_, port, _ := net.SplitHostPort(tn.kafkaAddr)
	p, _ := strconv.Atoi(port)
	life, err := StartLifecycle(LifecycleConfig{
		BrokerID:  id,
		ClusterID: tn.cfg.Controller.ClusterID,
		Listeners: []kmsg.BrokerRegistrationRequestListener{{Name: "PLAINTEXT", Host: "127.0.0.1", Port: uint16(p)}},
		Client:    tn.client,
		Metadata:  tn.node.FSM(),
		Logger:    testLogger(c.tb),
	})
	if err != nil {
		c.tb.Fatal(err)
	}
	tn.life = life
	return life
}

// kill stops a node abruptly, as a killed process: lifecycle, listener,
// client and node, which hands no leadership over.
func (c *testCluster) kill(id int32) {
	tn := c.nodes[id]
	if tn.life != nil {
		tn.life.Close()
		tn.life = nil
	}
	if tn.node != nil {
		tn.node.abrupt = true
		tn.node.Close()
		tn.node = nil
	}
	if tn.lis != nil {
		tn.lis.stop()
		tn.lis = nil
	}
	if tn.client != nil {
		tn.client.Close()
		tn.client = nil
	}
}

func (c *testCluster) close() {
	var wg sync.WaitGroup
	for id := range c.nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.kill(id)
		}()
	}
	wg.Wait()
}

// leader waits for a node to run the active controller and returns it.
func (c *testCluster) leader(d time.Duration) *testNode {
	c.tb.Helper()
	var found *testNode
	eventually(c.tb, d, "an active controller", func() bool {
		for _, tn := range c.nodes {
			if tn.node == nil {
				continue
			}
			if _, err := tn.node.Controller(); err == nil {
				found = tn
				return true
			}
		}
		return false
	})
	return found
}

func (c *testCluster) live() []*testNode {
	var out []*testNode
	for i := int32(1); int(i) <= len(c.nodes); i++ {
		if tn := c.nodes[i]; tn.node != nil {
			out = append(out, tn)
		}
	}
	return out
}

// converged waits until every live node holds an image equal to ref's.
func (c *testCluster) converged(d time.Duration, ref *Node) *metadata.Image {
	c.tb.Helper()
	var img *metadata.Image
	eventually(c.tb, d, "every image equal", func() bool {
		img = ref.Image()
		for _, tn := range c.live() {
			if !tn.node.Image().Equal(img) {
				return false
			}
		}
		return true
	})
	return img
}

func ctxTimeout(tb testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	tb.Cleanup(cancel)
	return ctx
}

// createTopics asks for topics of parts partitions with replication
// factor rf, named prefix0000.., and fails on any error code.
func createTopics(tb testing.TB, cl ControllerClient, prefix string, topics, parts int, rf int16) {
	tb.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = 60_000
	for i := range topics {
		t := kmsg.NewCreateTopicsRequestTopic()
		t.Topic, t.NumPartitions, t.ReplicationFactor = fmt.Sprintf("%s%04d", prefix, i), int32(parts), rf
		req.Topics = append(req.Topics, t)
	}
	resp, err := cl.Admin(ctxTimeout(tb, 60*time.Second), req)
	if err != nil {
		tb.Fatal(err)
	}
	for _, t := range resp.(*kmsg.CreateTopicsResponse).Topics {
		if t.ErrorCode != 0 {
			tb.Fatalf("create %s: error %d %v", t.Topic, t.ErrorCode, t.ErrorMessage)
		}
	}
}

// leaderships counts the partitions broker id leads in img.
func leaderships(img *metadata.Image, id int32) int {
	n := 0
	img.EachTopic(func(t *metadata.Topic) bool {
		t.EachPartition(func(_ int32, p metadata.Partition) bool {
			if p.Leader() == id {
				n++
			}
			return true
		})
		return true
	})
	return n
}
