package broker

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/admission"
	"weir/internal/alterpartition"
	"weir/internal/cleaner"
	"weir/internal/config"
	"weir/internal/configadmin"
	"weir/internal/errcode"
	"weir/internal/fault"
	"weir/internal/fetchsession"
	"weir/internal/group"
	"weir/internal/kraft"
	wlog "weir/internal/log"
	"weir/internal/logdir"
	"weir/internal/metadata"
	"weir/internal/producer"
	"weir/internal/replica"
	"weir/internal/server"
	"weir/internal/sharegroup"
	"weir/internal/sharestate"
	"weir/internal/txn/coordinator"
)

// Config is what a broker needs to start.
type Config struct {
	NodeID  int32
	DataDir string
	// AdvertisedHost and AdvertisedPort are what Metadata tells clients
	// when Listeners is empty: one PLAINTEXT listener.
	AdvertisedHost string
	AdvertisedPort int32
	// Listeners are the endpoints the broker registers, one per listener
	// (advertised.listeners), set once they are bound (SetListeners).
	// A client is told the endpoints of the listener it connected to.
	Listeners []Listener
	// InterBrokerListener names the listener brokers reach each other on
	// (inter.broker.listener.name); "" means the first of Listeners.
	InterBrokerListener string
	// InterBrokerDial, when set, dials another broker's inter-broker
	// listener with its security (TLS, SASL) for replication, forwarded
	// admin requests and share state; nil dials plain TCP.
	InterBrokerDial func(ctx context.Context, network, addr string) (net.Conn, error)
	// OnBrokerConfig, when set, is called on the metadata loop with the
	// broker's settings each time a dynamic broker config changed them
	// (listeners reload their certificates from it). It must not block
	// for long.
	OnBrokerConfig func(*config.Broker)
	Rack           string

	AutoCreateTopics  bool  // auto.create.topics.enable
	NumPartitions     int32 // num.partitions
	OffsetsPartitions int32 // offsets.topic.num.partitions
	// MaxPartitionsPerTopic bounds CreateTopics and CreatePartitions:
	// each partition is a directory of files today, so an absurd count
	// from a client must not be attempted.
	MaxPartitionsPerTopic int32
	// NullStorage acknowledges produce requests without validating or
	// storing them (offsets still advance), and answers consumers'
	// fetches from memory by repeating each partition's largest produced
	// batch up to those offsets, to measure the ceiling a client and
	// loopback reach on this machine. Never for real data.
	NullStorage bool
	// NullStorageWrite (with NullStorage) also writes each produced
	// batch to a file per partition under DataDir/null-storage, never
	// synced or read: the page cache's cost without a log's work.
	NullStorageWrite bool
	// RetentionCheckInterval is log.retention.check.interval.ms.
	RetentionCheckInterval time.Duration
	// Settings is the broker configuration under Kafka's property names
	// (topic config defaults, dynamic configs). Nil means the defaults.
	Settings *config.Broker
	// Group configures the group coordinator (its Store and Topics are
	// filled in by the broker).
	Group group.Config
	// Share configures share groups (internal/sharegroup).
	Share sharegroup.Config
	// Quorum says how this node takes part in the metadata quorum; the
	// zero value is a single node (quorum.go).
	Quorum QuorumConfig

	Logger *slog.Logger
	Now    func() time.Time
}

// DefaultConfig returns a single node's defaults.
func DefaultConfig() Config {
	return Config{
		NodeID:            1,
		DataDir:           "./weir-data",
		AdvertisedHost:    "127.0.0.1",
		AdvertisedPort:    9092,
		AutoCreateTopics:  true,
		NumPartitions:     1,
		OffsetsPartitions: 1,

		MaxPartitionsPerTopic: 100000,

		RetentionCheckInterval: 5 * time.Minute,
	}
}

// Broker serves the Kafka API for the partitions it leads. It implements
// server.Dispatcher.
type Broker struct {
	cfg       Config
	logger    *slog.Logger
	now       func() time.Time
	clusterID string

	syncer   *wlog.Syncer     // does every partition log's fsyncs
	logDir   *logdir.Dir      // the data directory's health (logdir.go)
	logEnv   *wlog.Env        // what every partition log shares (logger, clock, syncer)
	cleaner  *cleaner.Cleaner // compacts the logs of compacted topics (cleaner.go)
	cleanMu  sync.Mutex       // held to hand a partition to the cleaner or take it back
	gate     *admission.Gate  // authorization and client quotas of every request (security.go)
	cfgAdmin *configadmin.Manager

	// The metadata quorum (quorum.go) and the registry projected from
	// its image (registry.go).
	node    *kraft.Node
	ctl     *kraft.KafkaClient
	life    *kraft.BrokerLifecycle
	img     atomic.Pointer[metadata.Image] // the image the registry reflects
	started atomic.Bool                    // Start finished: coordinators run
	joined  *server.Hold                   // clients' requests until Start ends

	regMu   sync.Mutex
	regCh   chan struct{} // closed at each registry update
	applyMu sync.RWMutex  // held by the metadata loop while it applies an update

	mu         sync.RWMutex
	topics     map[string]*topic
	topicsByID map[[16]byte]*topic

	replicas   *replica.Manager // follower fetchers
	repEnv     *replica.Env     // what every replica shares (replicaEnv)
	repEnvOnce sync.Once
	nulls      sync.Map                 // NullStorage mode: *partition -> *nullstore.Partition
	fetches    *fetchsession.Cache      // fetch sessions (KIP-227, 01_fetch.go)
	transport  *kraft.InterBrokerClient // their connections to leaders
	isr        *alterpartition.Manager  // ISR changes for the controller (replication.go)

	faults *fault.Injector // fault-injection points (internal/fault)

	grp         atomic.Pointer[group.Coordinator]
	grpMu       sync.Mutex          // serialises coordinator replacement
	shares      *sharegroup.Manager // share groups (shares.go)
	shareState  *sharestate.Service // their state in __share_group_state
	producerIDs *producer.Allocator
	expiry      *producer.Expiration             // forgets idle producers (transactions.go)
	prodOpts    atomic.Pointer[producer.Options] // shared by the producer states (topics.go)

	txn        *coordinator.Coordinator        // transactions (transactions.go)
	autoTopics *kraft.AutoTopicCreationManager // creates the internal topics (quorum.go)

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup // request goroutines (long polls, group waits), the metadata loop
}

// New opens the broker's data directory, recovering every partition log,
// and starts its background work.
func New(cfg Config) (*Broker, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.NumPartitions <= 0 {
		cfg.NumPartitions = 1
	}
	if cfg.OffsetsPartitions <= 0 {
		cfg.OffsetsPartitions = 1
	}
	if cfg.MaxPartitionsPerTopic <= 0 {
		cfg.MaxPartitionsPerTopic = DefaultConfig().MaxPartitionsPerTopic
	}
	if err := os.MkdirAll(cfg.DataDir, 0o755); err != nil {
		return nil, fmt.Errorf("broker: data directory: %w", err)
	}
	b := &Broker{
		cfg:        cfg,
		logger:     cfg.Logger,
		now:        cfg.Now,
		topics:     map[string]*topic{},
		topicsByID: map[[16]byte]*topic{},
		regCh:      make(chan struct{}),
		joined:     server.NewHold(10000),
	}
	b.isr = alterpartition.New(alterpartition.Config{BrokerID: cfg.NodeID, Host: alterPartitionHost{b}, Logger: b.logger})
	b.ctx, b.cancel = context.WithCancel(context.Background())
	b.faults = fault.NewInjector(func(name string) time.Duration { return b.settings().Millis(name) }, b.ctx.Done(), &b.wg)
	settings := cfg.Settings
	if settings == nil {
		var err error
		if settings, err = config.NewBroker(map[string]string{config.NodeID: itoa(cfg.NodeID)}); err != nil {
			return nil, err
		}
	}
	b.cfgAdmin = configadmin.New(configadmin.Options{NodeID: cfg.NodeID, Static: settings, Host: configHost{b}, Logger: b.logger})
	gate, err := admission.New(admission.Config{Settings: settings, Image: b.img.Load, Forwarded: fromBroker, AutoCreateTopics: cfg.AutoCreateTopics})
	if err != nil {
		return nil, err
	}
	b.gate = gate
	b.fetches = fetchsession.NewCache(fetchsession.Config{Slots: int(settings.Int(config.FetchSessionCacheSlots))})
	if err := b.openQuorum(); err != nil {
		return nil, err
	}
	b.producerIDs = producer.NewAllocator(kraft.ProducerIDReserver{Client: b.ctl, BrokerID: cfg.NodeID, Epoch: b.brokerEpoch, Ctx: b.ctx}, producer.DefaultBlockSize)
	b.syncer = wlog.NewSyncer(0)
	b.logDir = logdir.New(logdir.Config{Path: cfg.DataDir, Logger: b.logger, OnChange: b.logDirChanged})
	b.logEnv = wlog.NewEnv(wlog.Options{Logger: b.logger, Now: b.now, Syncer: b.syncer, OnIOError: b.logDir.Failed,
		Files:     wlog.FilesFor(int(settings.Int(config.WeirLogMaxOpenFiles))),
		Producers: func() wlog.ProducerState { return producer.NewStateWith(b.producerOptions()) }})
	if err := b.newCleaner(); err != nil {
		b.syncer.Close()
		b.ctl.Close()
		b.node.Close()
		return nil, err
	}
	b.transport = kraft.NewInterBrokerClient(kraft.InterBrokerConfig{Resolve: kraft.ListenerResolver(b.node, b.interBrokerListener),
		Dial: cfg.InterBrokerDial, ClientID: replicaClientPrefix + itoa(cfg.NodeID), Logger: b.logger})
	b.replicas = replica.NewManager(replica.ManagerConfig{
		LocalID: cfg.NodeID, BrokerEpoch: -1, Transport: b.transport, Logger: b.logger,
	})
	if b.txn, err = b.newTxnCoordinator(); err != nil {
		b.cleaner.Close()
		b.syncer.Close()
		b.ctl.Close()
		b.node.Close()
		return nil, err
	}
	if err := b.startCoordinators(); err != nil {
		b.txn.Close()
		b.ctl.Close()
		b.node.Close()
		return nil, err
	}
	if cfg.Quorum.Single(cfg.NodeID) {
		// A quorum of one elects itself at once; wait for it so that the
		// registry below already holds every topic.
		if err := b.node.WaitController(30 * time.Second); err != nil {
			b.Close()
			return nil, err
		}
	}
	sub := b.node.FSM().Subscribe(0)
	first, err := sub.Next(b.ctx)
	if err != nil {
		sub.Close()
		b.Close()
		return nil, err
	}
	b.applyUpdate(first)
	b.wg.Add(1)
	go b.metadataLoop(sub)
	if !cfg.Quorum.Single(cfg.NodeID) {
		b.wg.Add(3)
		go func() {
			defer b.wg.Done()
			b.node.ProbeLiveness(b.ctx, kraft.LivenessConfig{
				Every: func() time.Duration { return b.settings().Millis(config.LivenessProbeMs) },
				Addr: func(br *metadata.Broker) (string, bool) {
					mb, ok := b.endpointFor(br, "")
					return net.JoinHostPort(mb.Host, strconv.Itoa(int(mb.Port))), ok
				},
				Logger: b.logger,
			})
		}()
		go func() {
			defer b.wg.Done()
			replica.ExpireISR(b.ctx, func() time.Duration { return b.settings().Millis(config.ReplicaLagTimeMax) }, b.ledReplicas)
		}()
		go func() { defer b.wg.Done(); b.isr.Run(b.ctx) }()
	}
	if cfg.RetentionCheckInterval > 0 {
		b.wg.Add(1)
		go b.retentionLoop(cfg.RetentionCheckInterval)
	}
	b.cleaner.Start()
	b.expiry = b.startProducerExpiration()
	return b, nil
}

// startCoordinators starts the group coordinator over the
// __consumer_offsets partitions this node leads (none yet: Start and
// leadership changes reload it), and the share coordinator over this
// node's share-state logs (its state is loaded by Start, once the
// registry knows every topic).
func (b *Broker) startCoordinators() error {
	b.grpMu.Lock()
	g, err := b.newGroupCoordinator()
	if err == nil {
		b.grp.Store(g)
	}
	b.grpMu.Unlock()
	if err != nil {
		return err
	}
	b.startShares()
	return nil
}

// newGroupCoordinator starts a coordinator over the offsets partitions
// led here.
func (b *Broker) newGroupCoordinator() (*group.Coordinator, error) {
	gcfg := b.cfg.Group
	gcfg.Logger = b.logger
	gcfg.Store = b.offsetsStore()
	// The partitions led now, no more: Replay reads those (and perhaps
	// one that comes to lead meanwhile, which a reload then serves).
	gcfg.Partitions = append([]int32{}, b.ledOffsetsPartitions()...)
	gcfg.Topics = topicsView{b: b}
	gcfg.PartitionOf = func(groupID string) int32 {
		p, ok := b.coordinatorPartition(groupID)
		if !ok {
			return -1
		}
		return p.index
	}
	g, err := group.New(gcfg)
	if err != nil {
		return nil, err
	}
	if err := g.Start(b.ctx); err != nil {
		g.Close()
		return nil, fmt.Errorf("broker: load groups: %w", err)
	}
	return g, nil
}

// coord is the group coordinator, nil before Start.
func (b *Broker) coord() *group.Coordinator { return b.grp.Load() }

// Close stops background work, waits for parked requests, closes every
// log (flushing it) and leaves the metadata quorum.
func (b *Broker) Close() error {
	if b.life != nil {
		b.life.Close()
	}
	b.cancel()
	b.joined.Close()
	b.autoTopics.Close()
	if b.expiry != nil {
		b.expiry.Close()
	}
	b.cleaner.Close() // before the logs close: rounds in progress are dropped
	if b.txn != nil {
		b.txn.Close()
	}
	b.replicas.Close()
	b.wg.Wait()
	b.transport.Close()
	if b.shares != nil {
		b.shares.Close()
		b.shareState.Close()
	}
	if g := b.grp.Load(); g != nil {
		g.Close()
	}
	err := b.closeLogs()
	b.logDir.Close()
	b.syncer.Close()
	b.ctl.Close()
	if cerr := b.node.Close(); err == nil {
		err = cerr
	}
	return err
}

// openWorkers bounds the logs opened or closed at once (each mostly waits
// on the disk).
const openWorkers = 16

func (b *Broker) closeLogs() error {
	b.mu.RLock()
	var logs []*wlog.Log
	for _, t := range b.topics {
		for _, p := range t.partitions {
			if p.rep != nil {
				logs = append(logs, p.log())
			}
		}
	}
	b.mu.RUnlock()
	b.closeNulls()
	return wlog.CloseAll(logs, openWorkers)
}

// ClusterID is the id Metadata and DescribeCluster report.
func (b *Broker) ClusterID() string { return b.clusterID }

// SetAdvertised sets the address of the broker's one PLAINTEXT listener
// once it is bound; SetListeners sets several.
func (b *Broker) SetAdvertised(addr net.Addr) {
	if tcp, ok := addr.(*net.TCPAddr); ok {
		host := b.cfg.AdvertisedHost
		if host == "" {
			host = tcp.IP.String()
		}
		b.SetListeners([]Listener{{Name: defaultListener, Host: host, Port: int32(tcp.Port), SecurityProtocol: securityPlaintext}}, defaultListener)
	}
}

// SetListeners sets the endpoints the broker registers and the listener
// brokers reach each other on, once the listeners are bound. Call it
// before Start.
func (b *Broker) SetListeners(ls []Listener, interBroker string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.cfg.Listeners = slices.Clone(ls)
	b.cfg.InterBrokerListener = interBroker
	if len(ls) > 0 {
		if interBroker == "" {
			b.cfg.InterBrokerListener = ls[0].Name
		}
		for _, l := range ls {
			if l.Name == b.cfg.InterBrokerListener {
				b.cfg.AdvertisedHost, b.cfg.AdvertisedPort = l.Host, l.Port
			}
		}
	}
}

// listeners returns the registered listeners and the inter-broker one's
// name.
func (b *Broker) listeners() ([]Listener, string) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	if len(b.cfg.Listeners) == 0 {
		return []Listener{{Name: defaultListener, Host: b.cfg.AdvertisedHost, Port: b.cfg.AdvertisedPort, SecurityProtocol: securityPlaintext}}, defaultListener
	}
	return b.cfg.Listeners, b.cfg.InterBrokerListener
}

// Versions implements server.Dispatcher.
func (b *Broker) Versions() []server.APIVersionRange { return versions() }

// Serve implements server.Dispatcher.
func (b *Broker) Serve(ctx context.Context, req *server.Request) *server.Reply {
	h, ok := handlers[req.Key]
	if !ok {
		return server.CloseConnection()
	}
	if req.Version < h.minServed {
		b.logger.Warn("request version no longer served; closing connection",
			"api", kmsg.NameForKey(req.Key), "version", req.Version, "remote", req.Conn.Remote)
		return server.CloseConnection()
	}
	if !b.joined.Opened() && req.Key != 18 && !strings.HasPrefix(req.ClientID, brokerClientPrefix) && !strings.HasPrefix(req.ClientID, replicaClientPrefix) {
		// Joining (the image may be the last run's): held until Start ends.
		return b.joined.Serve(ctx, func(ctx context.Context) *server.Reply { return b.serveReq(ctx, h, req) })
	}
	return b.serveReq(ctx, h, req)
}

func (b *Broker) serveReq(ctx context.Context, h handler, req *server.Request) *server.Reply {
	return b.faults.Apply(ctx, req, b.serveAuthorized(ctx, h, req))
}

// async runs fn off the request path, for requests that wait (long polls,
// group joins), and completes the reply with its result; a nil result
// (the wait was cancelled) closes the connection. The goroutine is
// owned by the broker: Close cancels its context and waits for it.
func (b *Broker) async(ctx context.Context, fn func(ctx context.Context) kmsg.Response) *server.Reply {
	r := server.NewPendingReply()
	ctx, cancel := mergeCancel(ctx, b.ctx)
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		defer cancel()
		if resp := fn(ctx); resp != nil {
			r.Complete(resp)
		} else {
			r.CompleteClose()
		}
	}()
	return r
}

// mergeCancel returns a context done when either parent is.
func mergeCancel(a, b context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(a)
	stop := context.AfterFunc(b, cancel)
	return ctx, func() { stop(); cancel() }
}

// errCode and errMessage read the Kafka error code an error carries and
// the detail it adds (internal/errcode).
var errCode, errMessage = errcode.Of, errcode.Message

func itoa(n int32) string { return strconv.Itoa(int(n)) }

func msDuration(ms int32) time.Duration {
	if ms <= 0 {
		return 0
	}
	return time.Duration(ms) * time.Millisecond
}

// ReusesFrame implements server.FrameReuser for Produce: the handler
// appends every batch before Serve returns (idempotence checks included)
// and what it may wait for afterwards (durability, the high watermark)
// reads only offsets, never the request's record bytes.
func (b *Broker) ReusesFrame(key int16) bool { return key == 0 }
