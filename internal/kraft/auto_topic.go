package kraft

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/metadata"
)

// InternalTopic is an internal topic as the service keeping its state
// wants it created: __consumer_offsets, __transaction_state,
// __share_group_state.
type InternalTopic struct {
	Name       string
	Partitions int32
	// ReplicationFactor is the replicas wanted (offsets.topic.replication.factor
	// and the like); the topic gets at most the active brokers, at least
	// one, so that a cluster smaller than the default can create it.
	ReplicationFactor int16
	// Configs returns the topic's configs for the replication factor it
	// is created with (min.insync.replicas is capped by it); nil for
	// none.
	Configs func(replicationFactor int16) map[string]string
}

// TopicAdmin is the part of a ControllerClient that creates topics.
type TopicAdmin interface {
	Admin(ctx context.Context, req kmsg.Request) (kmsg.Response, error)
}

// AutoTopicCreationConfig configures an AutoTopicCreationManager.
type AutoTopicCreationConfig struct {
	// Image is the metadata image this node has applied: whether a topic
	// exists and how many brokers are active.
	Image func() *metadata.Image
	// Admin sends CreateTopics to the active controller.
	Admin TopicAdmin
	// Applied waits until this node has applied a topic's creation (the
	// broker's registry knows it), for Ensure to return only once the
	// topic can be used here; nil waits for nothing.
	Applied func(ctx context.Context, topic string) error
	// Logger reports creations started in the background that failed.
	Logger *slog.Logger
	// Timeout bounds a creation started by EnsureAsync (default 30 s).
	Timeout time.Duration
}

// AutoTopicCreationManager creates the internal topics a broker's
// coordinators need on first use, through the controller, as Kafka's
// AutoTopicCreationManager does for FindCoordinator: at most one
// background creation per topic at a time, the clients retrying
// meanwhile. It owns the goroutines EnsureAsync starts; Close stops them
// and waits.
type AutoTopicCreationManager struct {
	cfg    AutoTopicCreationConfig
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu       sync.Mutex // guards creating and closed; a leaf
	creating map[string]bool
	closed   bool
}

// NewAutoTopicCreationManager returns a manager; Close it.
func NewAutoTopicCreationManager(cfg AutoTopicCreationConfig) *AutoTopicCreationManager {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 30 * time.Second
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &AutoTopicCreationManager{cfg: cfg, ctx: ctx, cancel: cancel, creating: make(map[string]bool)}
}

// Ensure creates t through the controller unless this node's image has
// it, and returns once this node has applied it (Config.Applied). A
// topic created meanwhile by another node (TOPIC_ALREADY_EXISTS) is no
// error.
func (m *AutoTopicCreationManager) Ensure(ctx context.Context, t InternalTopic) error {
	if err := m.create(ctx, t); err != nil {
		return err
	}
	if m.cfg.Applied == nil {
		return nil
	}
	if err := m.cfg.Applied(ctx, t.Name); err != nil {
		return fmt.Errorf("kraft: %s not applied here: %w", t.Name, err)
	}
	return nil
}

// create asks the controller for t unless the image has it.
func (m *AutoTopicCreationManager) create(ctx context.Context, t InternalTopic) error {
	img := m.cfg.Image()
	if _, ok := img.TopicByName(t.Name); ok {
		return nil
	}
	active := 0
	for _, br := range img.Brokers() {
		if br.Active() {
			active++
		}
	}
	rf := max(min(t.ReplicationFactor, int16(active)), 1)
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = t.Name, t.Partitions, rf
	if t.Configs != nil {
		for k, v := range t.Configs(rf) {
			c := kmsg.NewCreateTopicsRequestTopicConfig()
			c.Name, c.Value = k, &v
			rt.Configs = append(rt.Configs, c)
		}
	}
	req.Topics = append(req.Topics, rt)
	resp, err := m.cfg.Admin.Admin(ctx, req)
	if err != nil {
		return fmt.Errorf("kraft: create %s: %w", t.Name, err)
	}
	topics := resp.(*kmsg.CreateTopicsResponse).Topics
	if len(topics) != 1 {
		return fmt.Errorf("kraft: create %s: %w: %d topics answered", t.Name, kerr.UnknownServerError, len(topics))
	}
	if code := topics[0].ErrorCode; code != 0 && code != kerr.TopicAlreadyExists.Code {
		return fmt.Errorf("kraft: create %s: %w", t.Name, kerr.ErrorForCode(code))
	}
	return nil
}

// EnsureAsync starts Ensure(t) off the caller's path unless a creation of
// t.Name is under way (until this node has applied it) or the manager is
// closed; a failure is logged.
func (m *AutoTopicCreationManager) EnsureAsync(t InternalTopic) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed || m.creating[t.Name] {
		return
	}
	m.creating[t.Name] = true
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		ctx, cancel := context.WithTimeout(m.ctx, m.cfg.Timeout)
		defer cancel()
		if err := m.Ensure(ctx, t); err != nil {
			m.cfg.Logger.Warn("could not create an internal topic", "topic", t.Name, "err", err)
		}
		m.mu.Lock()
		delete(m.creating, t.Name)
		m.mu.Unlock()
	}()
}

// Close abandons the creations under way and waits for their goroutines.
func (m *AutoTopicCreationManager) Close() {
	m.mu.Lock()
	m.closed = true
	m.mu.Unlock()
	m.cancel()
	m.wg.Wait()
}
