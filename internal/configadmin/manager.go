package configadmin

import (
	"fmt"
	"log/slog"
	"maps"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"weir/internal/config"
	wlog "weir/internal/log"
	"weir/internal/metadata"
)

// DefaultTimeout bounds how long a forwarded change may take to be
// decided by the controller and applied on this node.
const DefaultTimeout = 30 * time.Second

// Options configure a Manager.
type Options struct {
	// NodeID is this node's id: the BROKER resource whose dynamic
	// configs apply here besides the cluster-wide defaults.
	NodeID int32
	// Static is the configuration read at start-up, without dynamic
	// overrides; it is the settings in force until the first
	// ApplyBrokerConfigs.
	Static *config.Broker
	Host   Host
	Logger *slog.Logger
	// Timeout bounds a forwarded change (DefaultTimeout when zero).
	Timeout time.Duration
}

// Manager is one node's config service: the settings in force, the
// answers to DescribeConfigs, the checks of AlterConfigs and
// IncrementalAlterConfigs before they are forwarded, and the controller's
// ConfigPolicy (Policy).
type Manager struct {
	nodeID  int32
	static  *config.Broker
	conf    atomic.Pointer[config.Broker]
	host    Host
	logger  *slog.Logger
	timeout time.Duration
}

// New returns a Manager whose settings in force are o.Static.
func New(o Options) *Manager {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	m := &Manager{nodeID: o.NodeID, static: o.Static, host: o.Host, logger: o.Logger, timeout: o.Timeout}
	m.conf.Store(o.Static)
	return m
}

// Settings is the broker configuration in force: the static properties
// with the dynamic overrides last applied. It is replaced whole, never
// changed, so callers may keep it.
func (m *Manager) Settings() *config.Broker { return m.conf.Load() }

// ApplyBrokerConfigs makes img's dynamic broker configs (the cluster-wide
// defaults and this node's) the settings in force, as Kafka's
// DynamicBrokerConfig does on each metadata update, dropping (and
// logging) entries that may not be set dynamically. It returns the
// settings it replaced and the new ones; changed is false, and nothing
// is replaced, when img holds what is in force already. One goroutine
// calls it: the metadata loop.
func (m *Manager) ApplyBrokerConfigs(img *metadata.Image) (prev, next *config.Broker, changed bool) {
	clusterWide := img.Configs(BrokerResource(""))
	node := img.Configs(BrokerResource(strconv.Itoa(int(m.nodeID))))
	prev = m.Settings()
	if maps.Equal(prev.DynamicConfigs(false), clusterWide) && maps.Equal(prev.DynamicConfigs(true), node) {
		return prev, prev, false
	}
	next, dropped := m.static.WithDynamic(clusterWide, node)
	for _, d := range dropped {
		m.logger.Warn("dynamic broker config dropped", "reason", d)
	}
	m.conf.Store(next)
	return prev, next, true
}

// TopicOverrides returns a topic's overrides in img, nil when it has
// none.
func TopicOverrides(img *metadata.Image, name string) map[string]string {
	m := img.Configs(metadata.ConfigResource{Type: metadata.ResourceTopic, Name: name})
	if len(m) == 0 {
		return nil
	}
	return m
}

// BrokerResource names a broker config resource in the image: "" for the
// cluster-wide defaults, else the node id.
func BrokerResource(name string) metadata.ConfigResource {
	return metadata.ConfigResource{Type: metadata.ResourceBroker, Name: name}
}

// TopicLogConfig resolves a topic's log settings from the settings in
// force and the topic's overrides; an error wraps INVALID_CONFIG.
func (m *Manager) TopicLogConfig(overrides map[string]string) (wlog.Config, error) {
	return topicLogConfig(m.Settings(), overrides)
}

func topicLogConfig(st *config.Broker, overrides map[string]string) (wlog.Config, error) {
	t, err := st.Topic(overrides)
	if err != nil {
		return wlog.Config{}, fmt.Errorf("%w: %v", kerr.InvalidConfig, err)
	}
	return t.LogConfig(), nil
}

// KafkaError turns a config package error into a Go error wrapping its
// Kafka code (nil for nil, never a typed nil).
func KafkaError(e *config.Error) error {
	if e == nil {
		return nil
	}
	if ke := kerr.TypedErrorForCode(e.Code); ke != nil {
		return fmt.Errorf("%w: %s", ke, e.Message)
	}
	return fmt.Errorf("%w: %s", kerr.InvalidConfig, e.Message)
}
