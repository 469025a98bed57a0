package broker

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/config"
	"weir/internal/controller"
	"weir/internal/internaltopics"
	"weir/internal/kraft"
	"weir/internal/metadata"
)

// QuorumConfig says how the broker takes part in the metadata quorum
// (kraft.QuorumConfig); the zero value is a single node.
type QuorumConfig = kraft.QuorumConfig

// Listener is one endpoint of the broker: a listener's name (Kafka's
// upper case), the host and port clients are told, and its security
// protocol (Kafka's ids: 0 PLAINTEXT, 1 SSL, 2 SASL_PLAINTEXT, 3 SASL_SSL).
type Listener struct {
	Name             string
	Host             string
	Port             int32
	SecurityProtocol int16
}

// defaultListener is the listener of a broker given no Listeners.
const (
	defaultListener   = "PLAINTEXT"
	securityPlaintext = 0
)

// interBrokerListener is the listener other brokers are reached on.
func (b *Broker) interBrokerListener() string {
	_, ib := b.listeners()
	return ib
}

// endpointFor is a broker's endpoint on the listener a request came in
// on (or, for requests of this broker's own and listeners without a
// name, the inter-broker listener), as Metadata reports it. As in Kafka, a
// broker without that listener is not reported.
func (b *Broker) endpointFor(br *metadata.Broker, listener string) (kmsg.MetadataResponseBroker, bool) {
	if listener == "" {
		listener = b.interBrokerListener()
	}
	for _, e := range br.Endpoints {
		if e.Listener != listener {
			continue
		}
		mb := kmsg.NewMetadataResponseBroker()
		mb.NodeID, mb.Host, mb.Port = br.ID, e.Host, int32(e.Port)
		if br.Rack != "" {
			rack := br.Rack
			mb.Rack = &rack
		}
		return mb, true
	}
	return kmsg.MetadataResponseBroker{}, false
}

// openQuorum opens this node of the metadata quorum and the client the
// broker sends controller requests with.
func (b *Broker) openQuorum() error {
	j, err := kraft.Join(kraft.JoinConfig{
		NodeID: b.cfg.NodeID, DataDir: b.cfg.DataDir, Quorum: b.cfg.Quorum, Logger: b.logger,
		Controller: controller.Config{
			DefaultPartitions:        b.cfg.NumPartitions,
			DefaultReplicationFactor: int16(b.settings().Int(config.DefaultReplicationFactor)),
			Logger:                   b.logger,
			Configs:                  b.cfgAdmin.Policy(),
		},
		InterBrokerListener: b.interBrokerListener, KnownBrokers: b.knownBrokers,
		ClientID: brokerClientPrefix + itoa(b.cfg.NodeID), Dial: b.cfg.InterBrokerDial,
	})
	if err != nil {
		return fmt.Errorf("broker: %w", err)
	}
	b.node, b.ctl, b.clusterID = j.Node, j.Client, j.ClusterID
	b.autoTopics = kraft.NewAutoTopicCreationManager(kraft.AutoTopicCreationConfig{Image: j.Node.Image, Admin: b.ctl, Logger: b.logger,
		Applied: func(ctx context.Context, name string) error {
			return b.waitRegistry(ctx, func() bool { return b.lookupTopic(name) != nil })
		}})
	return nil
}

// brokerEpoch is this broker's registration epoch (0 before it
// registered), for the controller's producer id blocks.
func (b *Broker) brokerEpoch() int64 {
	if b.life == nil {
		return 0
	}
	return b.life.Epoch()
}

// knownBrokers lists the listeners of the other brokers in the image.
func (b *Broker) knownBrokers() []string {
	var out []string
	for _, br := range b.node.Image().Brokers() {
		if br.ID == b.cfg.NodeID {
			continue
		}
		if mb, ok := b.endpointFor(br, ""); ok {
			out = append(out, net.JoinHostPort(mb.Host, strconv.Itoa(int(mb.Port))))
		}
	}
	return out
}

// Start joins the cluster once the listener is bound (SetAdvertised):
// it registers with the controller, follows the metadata log, waits until
// the controller unfences this broker, makes sure the internal topics
// exist and starts the group and share coordinators. Call it once, after
// New and before serving clients' requests.
func (b *Broker) Start(ctx context.Context) (err error) {
	defer func() {
		if err != nil { // the clients' held requests would wait for ever
			b.joined.Close()
		}
	}()
	timeout := b.cfg.Quorum.StartTimeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	local := ctx // applying the image here is local work, not bounded by timeout
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	ls, _ := b.listeners()
	var regs []kmsg.BrokerRegistrationRequestListener
	for _, l := range ls {
		r := kmsg.NewBrokerRegistrationRequestListener()
		r.Name, r.Host, r.Port, r.SecurityProtocol = l.Name, l.Host, uint16(l.Port), l.SecurityProtocol
		regs = append(regs, r)
	}
	var rack *string
	if b.cfg.Rack != "" {
		rack = &b.cfg.Rack
	}
	life, err := kraft.StartLifecycle(kraft.LifecycleConfig{
		BrokerID: b.cfg.NodeID, ClusterID: b.clusterID,
		Listeners: regs, Rack: rack,
		Client: b.ctl, Ready: b.leadershipReady,
		// The registry's image: the controller unfences (and elects) this
		// broker once it serves what it reports.
		Metadata:          kraft.MetadataFuncs{Img: b.image, Chg: b.regChanged},
		HeartbeatInterval: b.cfg.Quorum.HeartbeatInterval,
		// Registering and catching up are small requests: retry them
		// soon, since each wait is start-up latency.
		RetryInterval: 10 * time.Millisecond,
		Logger:        b.logger,
	})
	if err != nil {
		return err
	}
	b.life = life
	if err := life.AwaitUnfenced(local, ctx, func() bool { return b.image().Offset() < b.node.Image().Offset() }); err != nil {
		return fmt.Errorf("broker: start-up timeout %v: %w", timeout, err)
	}
	// Clients learn of this broker from the image: wait until the
	// registry reflects the unfencing of this registration. On a restart
	// the image replayed from disk holds the previous run's registration,
	// unfenced, until this run's (fenced) one is applied over it.
	epoch := life.Epoch()
	if err := b.waitRegistry(local, func() bool {
		br, ok := b.image().Broker(b.cfg.NodeID)
		return ok && !br.Fenced && br.Epoch >= epoch
	}); err != nil {
		return fmt.Errorf("broker: unfencing not applied here: %w", err)
	}
	if b.cfg.Quorum.Single(b.cfg.NodeID) {
		// A cluster creates it on the first FindCoordinator, once its
		// brokers are up to hold the replicas; a single node at once.
		if err := b.ensureOffsetsTopic(ctx); err != nil {
			return err
		}
	}
	if err := b.shareState.Start(); err != nil {
		return fmt.Errorf("broker: share state: %w", err)
	}
	if err := b.shares.LoadGroups(b.ctx); err != nil {
		return fmt.Errorf("broker: load share groups: %w", err)
	}
	b.started.Store(true)
	img := b.node.Image()
	for _, res := range img.ConfigResources() {
		if res.Type == metadata.ResourceGroup {
			b.shares.ApplyGroupConfigs(res.Name, img.Configs(res))
		}
	}
	b.reloadGroups()
	b.txnLeadershipChanged()
	if n, wait := b.joined.Waiting(); n > 0 {
		lvl := slog.LevelInfo
		if wait > 5*time.Second { // a client may time out first
			lvl = slog.LevelWarn
		}
		b.logger.Log(b.ctx, lvl, "serving clients' requests held while joining", "requests", n, "longest_wait", wait)
	}
	b.joined.Open()
	b.logger.Info("broker active", "node", b.cfg.NodeID, "cluster_id", b.clusterID)
	return nil
}

// ControlledShutdown asks the controller to move every leadership this
// broker holds and waits until it lets the broker go (or ctx ends).
func (b *Broker) ControlledShutdown(ctx context.Context) error {
	if b.life == nil {
		return nil
	}
	start := time.Now()
	err := b.life.Shutdown(ctx)
	b.logger.Info("controlled shutdown", "took", time.Since(start), "err", err)
	return err
}

// ensureOffsetsTopic creates __consumer_offsets through the controller
// unless it exists, and waits until the registry has it.
func (b *Broker) ensureOffsetsTopic(ctx context.Context) error {
	return b.ensureInternalTopic(ctx, offsetsTopic, b.cfg.OffsetsPartitions)
}

// ensureOffsetsTopicAsync starts creating __consumer_offsets unless a
// creation is under way.
func (b *Broker) ensureOffsetsTopicAsync() {
	b.autoTopics.EnsureAsync(internaltopics.Group(b.settings(), offsetsTopic, b.cfg.OffsetsPartitions))
}

// ensureInternalTopic creates an internal topic through the controller
// unless it exists, and waits until the registry has it
// (kraft.AutoTopicCreationManager).
func (b *Broker) ensureInternalTopic(ctx context.Context, name string, partitions int32) error {
	return b.autoTopics.Ensure(ctx, internaltopics.Group(b.settings(), name, partitions))
}

func ptr[T any](v T) *T { return &v }

// admin sends an admin request to the active controller and waits until
// this broker has applied its outcome: the metadata offset the controller
// says it committed at (requests at versions with tagged fields), and
// done's condition if any, so that a client's next request here sees it.
func (b *Broker) admin(ctx context.Context, req kmsg.Request, done func(kmsg.Response) func() bool) (kmsg.Response, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	resp, offset, err := b.ctl.AdminAt(ctx, req)
	if err != nil {
		return nil, err
	}
	if offset >= 0 {
		if err := b.waitApplied(ctx, offset); err != nil {
			b.logger.Warn("controller change not applied here in time", "api", kmsg.NameForKey(req.Key()), "offset", offset, "err", err)
		}
	}
	if done != nil {
		if cond := done(resp); cond != nil {
			if err := b.waitRegistry(ctx, cond); err != nil {
				b.logger.Warn("controller change not applied here in time", "api", kmsg.NameForKey(req.Key()), "err", err)
			}
		}
	}
	return resp, nil
}

// waitApplied waits until this broker's registry has applied the
// metadata log up to offset.
func (b *Broker) waitApplied(ctx context.Context, offset int64) error {
	return b.waitRegistry(ctx, func() bool {
		img := b.image()
		return img != nil && img.Offset() >= offset
	})
}

// waitRegistry waits until cond holds, checking after each metadata
// update this broker applies; cond never sees an update half applied.
func (b *Broker) waitRegistry(ctx context.Context, cond func() bool) error {
	for {
		ch := b.regChanged()
		b.applyMu.RLock()
		ok := cond()
		b.applyMu.RUnlock()
		if ok {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// regChanged returns a channel closed at the next registry update.
func (b *Broker) regChanged() <-chan struct{} {
	b.regMu.Lock()
	defer b.regMu.Unlock()
	return b.regCh
}

func (b *Broker) signalRegistry() {
	b.regMu.Lock()
	close(b.regCh)
	b.regCh = make(chan struct{})
	b.regMu.Unlock()
}

// controllerError turns a failed controller call into the Kafka error a
// client should see (kraft.ClientError).
var controllerError = kraft.ClientError

func parseNodeID(s string) (int32, bool) {
	n, err := strconv.ParseInt(s, 10, 32)
	return int32(n), err == nil
}
