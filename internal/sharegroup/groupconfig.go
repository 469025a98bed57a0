package sharegroup

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/config"
	wlog "weir/internal/log"
	"weir/internal/share"
)

// Group configs (the GROUP config resource): the share.* configs of
// Kafka's GroupConfig, recorded in the metadata log and applied by every
// broker to the group's share partitions it leads. The consumer.* and
// streams.* group configs are not served: setting one is INVALID_CONFIG,
// describing lists only share.*. Any group id is a valid resource,
// whether or not the group exists, as in Kafka.

// Names of the share group configs (Kafka's GroupConfig share.*).
const (
	cfgShareSessionTimeout   = "share.session.timeout.ms"
	cfgShareHeartbeat        = "share.heartbeat.interval.ms"
	cfgShareLockDuration     = "share.record.lock.duration.ms"
	cfgShareDeliveryLimit    = "share.delivery.count.limit"
	cfgShareMaxRecordLocks   = "share.partition.max.record.locks"
	cfgShareAutoOffsetReset  = "share.auto.offset.reset"
	cfgShareIsolationLevel   = "share.isolation.level"
	cfgShareRenewAck         = "share.renew.acknowledge.enable"
	cfgShareAssignmentPeriod = "share.assignment.interval.ms"
)

// groupConfigDef is one group config: its type, the broker setting it
// defaults to (Kafka's synonym), its default and its check.
type groupConfigDef struct {
	name    string
	typ     kmsg.ConfigType
	broker  string // synonym broker config, "" when none
	doc     string
	def     func(c *Config) string
	minimum int64                                          // for INT configs
	bounds  func(c *Config) (int64, int64, string, string) // extra range for INT configs
	check   func(v string) error                           // for STRING configs
}

func millisString(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) }

// groupConfigDefs is the table, in Kafka's order.
var groupConfigDefs = []groupConfigDef{
	{
		name: cfgShareSessionTimeout, typ: kmsg.ConfigTypeInt, broker: "group.share.session.timeout.ms", minimum: 1,
		doc: "The timeout to detect client failures when using the share group protocol.",
		def: func(c *Config) string { return millisString(c.SessionTimeout) },
		bounds: func(c *Config) (int64, int64, string, string) {
			return c.MinSessionTimeout.Milliseconds(), c.MaxSessionTimeout.Milliseconds(), "group.share.min.session.timeout.ms", "group.share.max.session.timeout.ms"
		},
	},
	{
		name: cfgShareHeartbeat, typ: kmsg.ConfigTypeInt, broker: "group.share.heartbeat.interval.ms", minimum: 1,
		doc: "The heartbeat interval given to the members.",
		def: func(c *Config) string { return millisString(c.HeartbeatInterval) },
		bounds: func(c *Config) (int64, int64, string, string) {
			return c.MinHeartbeatInterval.Milliseconds(), c.MaxHeartbeatInterval.Milliseconds(), "group.share.min.heartbeat.interval.ms", "group.share.max.heartbeat.interval.ms"
		},
	},
	{
		name: cfgShareLockDuration, typ: kmsg.ConfigTypeInt, broker: "group.share.record.lock.duration.ms", minimum: 1000,
		doc: "The record acquisition lock duration in milliseconds for share groups.",
		def: func(c *Config) string { return millisString(c.RecordLockDuration) },
		bounds: func(c *Config) (int64, int64, string, string) {
			return c.MinRecordLockDuration.Milliseconds(), c.MaxRecordLockDuration.Milliseconds(), "group.share.min.record.lock.duration.ms", "group.share.max.record.lock.duration.ms"
		},
	},
	{
		name: cfgShareDeliveryLimit, typ: kmsg.ConfigTypeInt, broker: "group.share.delivery.count.limit", minimum: 2,
		doc: "The maximum number of delivery attempts for a record delivered to a share group.",
		def: func(c *Config) string { return strconv.Itoa(int(c.DeliveryCountLimit)) },
		bounds: func(c *Config) (int64, int64, string, string) {
			return int64(c.MinDeliveryCountLimit), int64(c.MaxDeliveryCountLimit), "group.share.min.delivery.count.limit", "group.share.max.delivery.count.limit"
		},
	},
	{
		name: cfgShareMaxRecordLocks, typ: kmsg.ConfigTypeInt, broker: "group.share.partition.max.record.locks", minimum: 100,
		doc: "Share-group record lock limit per share-partition.",
		def: func(c *Config) string { return strconv.Itoa(int(c.PartitionMaxRecordLocks)) },
		bounds: func(c *Config) (int64, int64, string, string) {
			return int64(c.MinPartitionMaxRecordLocks), int64(c.MaxPartitionMaxRecordLocks), "group.share.min.partition.max.record.locks", "group.share.max.partition.max.record.locks"
		},
	},
	{
		name: cfgShareAutoOffsetReset, typ: kmsg.ConfigTypeString,
		doc: "The strategy to initialize the share-partition start offset: latest, earliest or by_duration:<ISO-8601 duration>.",
		def: func(c *Config) string { return c.AutoOffsetReset },
		check: func(v string) error {
			if _, err := share.ParseOffsetReset(v); err != nil {
				return fmt.Errorf("Invalid value %s for configuration %s: must be latest, earliest or by_duration:<ISO-8601 duration>", v, cfgShareAutoOffsetReset)
			}
			return nil
		},
	},
	{
		name: cfgShareIsolationLevel, typ: kmsg.ConfigTypeString,
		doc: "Controls how to read records written transactionally (read_committed or read_uncommitted).",
		def: func(*Config) string { return "read_uncommitted" },
		check: func(v string) error {
			if v != "read_committed" && v != "read_uncommitted" {
				return fmt.Errorf("Invalid value %s for configuration %s: String must be one of: read_committed, read_uncommitted", v, cfgShareIsolationLevel)
			}
			return nil
		},
	},
	{
		name: cfgShareRenewAck, typ: kmsg.ConfigTypeBoolean,
		doc: "Whether the renew acknowledge type is enabled for the share group.",
		def: func(*Config) string { return "true" },
	},
	{
		name: cfgShareAssignmentPeriod, typ: kmsg.ConfigTypeInt, broker: "group.share.assignment.interval.ms", minimum: 0,
		doc: "The minimum interval between assignment recomputations (stored; weir assigns on every epoch change).",
		def: func(*Config) string { return "1000" },
	},
}

// GroupConfigNames lists the group configs served, in Kafka's order.
func GroupConfigNames() []string {
	out := make([]string, len(groupConfigDefs))
	for i, d := range groupConfigDefs {
		out[i] = d.name
	}
	return out
}

func groupConfigDefFor(name string) *groupConfigDef {
	for i := range groupConfigDefs {
		if groupConfigDefs[i].name == name {
			return &groupConfigDefs[i]
		}
	}
	return nil
}

// validate checks one value as Kafka's GroupConfig does; the error text is
// Kafka's.
func (d *groupConfigDef) validate(v string, sc *Config) error {
	switch d.typ {
	case kmsg.ConfigTypeInt:
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 32)
		if err != nil {
			return fmt.Errorf("Invalid value %s for configuration %s: Not a number of type INT", v, d.name)
		}
		if n < d.minimum {
			return fmt.Errorf("Invalid value %d for configuration %s: Value must be at least %d", n, d.name, d.minimum)
		}
		if d.bounds != nil {
			lo, hi, loName, hiName := d.bounds(sc)
			if n < lo {
				return fmt.Errorf("%s must be greater than or equal to %s", d.name, loName)
			}
			if n > hi {
				return fmt.Errorf("%s must be less than or equal to %s", d.name, hiName)
			}
		}
	case kmsg.ConfigTypeBoolean:
		if s := strings.ToLower(strings.TrimSpace(v)); s != "true" && s != "false" {
			return fmt.Errorf("Invalid value %s for configuration %s: Expected value to be either true or false", v, d.name)
		}
	case kmsg.ConfigTypeString:
		if d.check != nil {
			return d.check(v)
		}
	}
	return nil
}

// groupSettings are a share group's effective settings: the broker's
// defaults overridden by the group's configs.
type groupSettings struct {
	part        share.Config
	group       share.GroupConfig
	offsetReset share.OffsetReset
	renewAck    bool
}

// settingsFor resolves overrides (already validated) over the broker's
// defaults.
func (c *Config) settingsFor(overrides map[string]string) groupSettings {
	val := func(name string) string {
		if v, ok := overrides[name]; ok {
			return strings.TrimSpace(v)
		}
		return groupConfigDefFor(name).def(c)
	}
	num := func(name string) int64 {
		n, _ := strconv.ParseInt(val(name), 10, 64)
		return n
	}
	reset, err := share.ParseOffsetReset(val(cfgShareAutoOffsetReset))
	if err != nil {
		reset = share.OffsetReset{Kind: "latest"}
	}
	return groupSettings{
		part: share.Config{
			LockDuration:       time.Duration(num(cfgShareLockDuration)) * time.Millisecond,
			DeliveryCountLimit: int16(num(cfgShareDeliveryLimit)),
			MaxRecordLocks:     int32(num(cfgShareMaxRecordLocks)),
		},
		group: share.GroupConfig{
			HeartbeatInterval: time.Duration(num(cfgShareHeartbeat)) * time.Millisecond,
			SessionTimeout:    time.Duration(num(cfgShareSessionTimeout)) * time.Millisecond,
			MaxSize:           c.MaxGroupSize,
		},
		offsetReset: reset,
		renewAck:    strings.ToLower(val(cfgShareRenewAck)) != "false",
	}
}

// alterGroupConfigs applies IncrementalAlterConfigs operations to a group's
// overrides and returns the new overrides, or the Kafka error.
func (c *Config) alterGroupConfigs(current map[string]string, ops []kmsg.IncrementalAlterConfigsRequestResourceConfig) (map[string]string, error) {
	next := maps.Clone(current)
	if next == nil {
		next = map[string]string{}
	}
	seen := map[string]bool{}
	for _, op := range ops {
		if seen[op.Name] {
			return nil, fmt.Errorf("%w: Error due to duplicate config keys", kerr.InvalidRequest)
		}
		seen[op.Name] = true
		d := groupConfigDefFor(op.Name)
		if d == nil {
			return nil, fmt.Errorf("%w: Unknown group config name: %s", kerr.InvalidConfig, op.Name)
		}
		switch op.Op {
		case kmsg.IncrementalAlterConfigOpSet:
			if op.Value == nil {
				return nil, fmt.Errorf("%w: Null value not supported for : %s", kerr.InvalidRequest, op.Name)
			}
			if err := d.validate(*op.Value, c); err != nil {
				return nil, fmt.Errorf("%w: %v", kerr.InvalidConfig, err)
			}
			next[op.Name] = *op.Value
		case kmsg.IncrementalAlterConfigOpDelete:
			delete(next, op.Name)
		case kmsg.IncrementalAlterConfigOpAppend, kmsg.IncrementalAlterConfigOpSubtract:
			return nil, fmt.Errorf("%w: Config value append is not allowed for config key: %s", kerr.InvalidConfig, op.Name)
		default:
			return nil, fmt.Errorf("%w: Unknown operation type %d", kerr.InvalidRequest, op.Op)
		}
	}
	return next, nil
}

// describeGroupConfigs answers DescribeConfigs for a GROUP resource as
// Kafka does: every share group config, GROUP_CONFIG when the group sets
// it, else the broker default (DEFAULT_CONFIG), with the broker synonym.
func (c *Config) describeGroupConfigs(overrides map[string]string, opts config.DescribeOptions) []config.Entry {
	var out []config.Entry
	for i := range groupConfigDefs {
		d := &groupConfigDefs[i]
		if len(opts.Keys) > 0 && !slices.Contains(opts.Keys, d.name) {
			continue
		}
		def := d.def(c)
		e := kmsg.NewDescribeConfigsResponseResourceConfig()
		e.Name = d.name
		e.ConfigType = d.typ
		var syns []config.SynonymEntry
		if v, ok := overrides[d.name]; ok {
			s := kmsg.NewDescribeConfigsResponseResourceConfigConfigSynonym()
			s.Name, s.Value, s.Source = d.name, kmsg.StringPtr(v), kmsg.ConfigSourceGroupConfig
			syns = append(syns, s)
		}
		s := kmsg.NewDescribeConfigsResponseResourceConfigConfigSynonym()
		s.Name, s.Value, s.Source = d.name, kmsg.StringPtr(def), kmsg.ConfigSourceDefaultConfig
		if d.broker != "" {
			s.Name = d.broker
		}
		syns = append(syns, s)
		e.Value = syns[0].Value
		e.Source = syns[0].Source
		e.IsDefault = e.Source == kmsg.ConfigSourceDefaultConfig
		if opts.IncludeSynonyms {
			e.ConfigSynonyms = syns
		}
		if opts.IncludeDocumentation {
			e.Documentation = kmsg.StringPtr(d.doc)
		}
		out = append(out, e)
	}
	return out
}

// DescribeGroupConfig answers DescribeConfigs for one GROUP resource.
func (m *Manager) DescribeGroupConfig(group string, opts config.DescribeOptions) ([]config.Entry, error) {
	if group == "" {
		return nil, fmt.Errorf("%w: Group name must not be empty", kerr.InvalidRequest)
	}
	return m.cfg.describeGroupConfigs(m.groupConfigs(group), opts), nil
}

// ValidateGroupConfig checks IncrementalAlterConfigs operations on one
// GROUP resource against this node's copy of the group's configs. The
// change itself is decided by the active controller against the
// committed configs (MergeGroupConfigs on its node) and recorded in the
// metadata log, so every broker applies the same group configs
// (ApplyGroupConfigs) to the share partitions it leads.
func (m *Manager) ValidateGroupConfig(group string, ops []kmsg.IncrementalAlterConfigsRequestResourceConfig) error {
	if group == "" {
		return fmt.Errorf("%w: Group name must not be empty", kerr.InvalidRequest)
	}
	_, err := m.cfg.alterGroupConfigs(m.groupConfigs(group), ops)
	return err
}

// MergeGroupConfigs applies IncrementalAlterConfigs operations to a
// group's current overrides (never modified) and returns the new ones,
// or the Kafka error: the active controller's merge for GROUP resources.
func (m *Manager) MergeGroupConfigs(group string, current map[string]string, ops []kmsg.IncrementalAlterConfigsRequestResourceConfig) (map[string]string, error) {
	if group == "" {
		return nil, fmt.Errorf("%w: Group name must not be empty", kerr.InvalidRequest)
	}
	return m.cfg.alterGroupConfigs(current, ops)
}

// ApplyGroupConfigs takes a group's configs from the metadata image, which
// keeps them durable, and applies them to the group and its share
// partitions at once (group configs are dynamic).
func (m *Manager) ApplyGroupConfigs(group string, next map[string]string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if maps.Equal(m.configs[group], next) {
		return
	}
	if len(next) == 0 {
		delete(m.configs, group)
	} else {
		m.configs[group] = maps.Clone(next)
	}
	if g, ok := m.groups[group]; ok {
		g.settings = m.cfg.settingsFor(next)
		g.g.SetConfig(g.settings.group)
		for _, sp := range g.parts {
			sp.mu.Lock()
			sp.cfg = g.settings.part
			if sp.p != nil {
				sp.p.SetConfig(sp.cfg)
			}
			sp.mu.Unlock()
		}
	}
	m.logger.Info("share group config changed", "group", group, "overrides", len(next))
}

// isolation is a group's share.isolation.level (read_uncommitted unless
// set).
func (m *Manager) isolation(group string) wlog.Isolation {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.configs[group][cfgShareIsolationLevel] == "read_committed" {
		return wlog.ReadCommitted
	}
	return wlog.ReadUncommitted
}

// groupConfigs returns a group's config overrides.
func (m *Manager) groupConfigs(group string) map[string]string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return maps.Clone(m.configs[group])
}
