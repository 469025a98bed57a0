package client

import (
	"strings"
	"time"
)

var consumerProps = map[string]prop{
	"group.id":                      strProp(""),
	"group.instance.id":             strProp(""),
	"group.protocol":                strProp("classic", "classic", "consumer"),
	"group.remote.assignor":         strProp(""),
	"partition.assignment.strategy": {kind: kList, def: "org.apache.kafka.clients.consumer.RangeAssignor,org.apache.kafka.clients.consumer.CooperativeStickyAssignor"},
	"session.timeout.ms":            intProp("45000", 0),
	"heartbeat.interval.ms":         intProp("3000", 0),
	"max.poll.interval.ms":          intProp("300000", 1),
	"max.poll.records":              intProp("500", 1),
	"enable.auto.commit":            boolProp("true"),
	"auto.commit.interval.ms":       intProp("5000", 0),
	"auto.offset.reset":             strProp("latest", "latest", "earliest", "none"),
	"fetch.min.bytes":               intProp("1", 0),
	"fetch.max.bytes":               intProp("52428800", 0),
	"fetch.max.wait.ms":             intProp("500", 0),
	"max.partition.fetch.bytes":     intProp("1048576", 0),
	"isolation.level":               strProp("read_uncommitted", "read_uncommitted", "read_committed"),
	"check.crcs":                    boolProp("true"),
	"allow.auto.create.topics":      boolProp("true"),
	"exclude.internal.topics":       boolProp("true"),
}

type consumerConfig struct {
	commonConfig
	groupID          string
	instanceID       string
	protocol         string
	remoteAssignor   string
	assignors        []string // short names: range, roundrobin, cooperative-sticky
	sessionTimeout   time.Duration
	heartbeat        time.Duration
	maxPollInterval  time.Duration
	maxPollRecords   int
	autoCommit       bool
	autoCommitEvery  time.Duration
	reset            string
	fetchMinBytes    int32
	fetchMaxBytes    int32
	fetchMaxWait     time.Duration
	partitionMax     int32
	isolation        int8
	autoCreateTopics bool
}

// assignorName maps Java assignor class names to protocol names.
func assignorName(class string) (string, bool) {
	switch class[strings.LastIndexByte(class, '.')+1:] {
	case "RangeAssignor", "range":
		return "range", true
	case "RoundRobinAssignor", "roundrobin":
		return "roundrobin", true
	case "CooperativeStickyAssignor", "cooperative-sticky":
		return "cooperative-sticky", true
	}
	return "", false
}

func parseConsumerConfig(m map[string]string) (consumerConfig, error) {
	p, err := parseProps(m, consumerProps)
	if err != nil {
		return consumerConfig{}, err
	}
	c := consumerConfig{
		commonConfig:     p.common(),
		groupID:          p.str("group.id"),
		instanceID:       p.str("group.instance.id"),
		protocol:         p.str("group.protocol"),
		remoteAssignor:   p.str("group.remote.assignor"),
		sessionTimeout:   p.ms("session.timeout.ms"),
		heartbeat:        p.ms("heartbeat.interval.ms"),
		maxPollInterval:  p.ms("max.poll.interval.ms"),
		maxPollRecords:   p.int("max.poll.records"),
		autoCommit:       p.bool("enable.auto.commit"),
		autoCommitEvery:  p.ms("auto.commit.interval.ms"),
		reset:            p.str("auto.offset.reset"),
		fetchMinBytes:    int32(p.int("fetch.min.bytes")),
		fetchMaxBytes:    int32(p.int("fetch.max.bytes")),
		fetchMaxWait:     p.ms("fetch.max.wait.ms"),
		partitionMax:     int32(p.int("max.partition.fetch.bytes")),
		autoCreateTopics: p.bool("allow.auto.create.topics"),
	}
	if p.str("isolation.level") == "read_committed" {
		c.isolation = 1
	}
	for _, a := range p.list("partition.assignment.strategy") {
		n, ok := assignorName(a)
		if !ok {
			return consumerConfig{}, &ConfigError{Key: "partition.assignment.strategy", Value: a, Reason: "unknown assignor class"}
		}
		c.assignors = append(c.assignors, n)
	}
	if len(c.assignors) == 0 {
		return consumerConfig{}, &ConfigError{Key: "partition.assignment.strategy", Reason: "at least one assignor is required"}
	}
	if c.protocol == "classic" && p.set["group.remote.assignor"] {
		return consumerConfig{}, &ConfigError{Key: "group.remote.assignor", Value: c.remoteAssignor, Reason: "only valid with group.protocol=consumer"}
	}
	if c.protocol == "consumer" {
		for _, k := range []string{"session.timeout.ms", "heartbeat.interval.ms", "partition.assignment.strategy"} {
			if p.set[k] {
				return consumerConfig{}, &ConfigError{Key: k, Value: p.str(k), Reason: "not supported with group.protocol=consumer (the broker decides)"}
			}
		}
	}
	if c.heartbeat >= c.sessionTimeout && c.protocol == "classic" {
		return consumerConfig{}, &ConfigError{Key: "heartbeat.interval.ms", Value: p.str("heartbeat.interval.ms"), Reason: "must be lower than session.timeout.ms"}
	}
	return c, nil
}
