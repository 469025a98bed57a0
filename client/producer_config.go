package client

import (
	"fmt"
	"math"
	"strings"
	"time"

	"weir/client/internal/records"
	"weir/client/partitioner"
)

// Java class names accepted for partitioner.class. The short names work too.
const (
	RoundRobinPartitionerClass    = "org.apache.kafka.clients.producer.RoundRobinPartitioner"
	DefaultPartitionerClass       = "org.apache.kafka.clients.producer.internals.DefaultPartitioner"
	UniformStickyPartitionerClass = "org.apache.kafka.clients.producer.UniformStickyPartitioner"
)

var producerProps = map[string]prop{
	"acks":                                  strProp("all", "all", "-1", "0", "1"),
	"batch.size":                            intProp("16384", 0),
	"linger.ms":                             longProp("5", 0),
	"buffer.memory":                         longProp("33554432", 0),
	"max.block.ms":                          longProp("60000", 0),
	"max.in.flight.requests.per.connection": intProp("5", 1),
	"max.request.size":                      intProp("1048576", 0),
	"compression.type":                      strProp("none", "none", "gzip", "snappy", "lz4", "zstd"),
	"compression.gzip.level":                {kind: kInt, def: "-1", min: -1, max: 9},
	"compression.lz4.level":                 {kind: kInt, def: "9", min: 1, max: 17},
	"compression.zstd.level":                {kind: kInt, def: "3", min: -131072, max: 22},
	"delivery.timeout.ms":                   intProp("120000", 0),
	"retries":                               intProp(fmt.Sprint(math.MaxInt32), 0),
	"enable.idempotence":                    boolProp("true"),
	"partitioner.class":                     strProp(""),
	"partitioner.adaptive.partitioning.enable": boolProp("true"),
	"partitioner.availability.timeout.ms":      longProp("0", 0),
	"partitioner.ignore.keys":                  boolProp("false"),
	"allow.auto.create.topics":                 boolProp("true"),
	"transaction.timeout.ms":                   intProp("60000", 0),
	"transactional.id":                         strProp(""),
	// Extensions, not Kafka properties.
	"weir.partitioner.adaptive.weighting": strProp("batches", "batches", "bytes", "bytes-inverse"),
	"weir.compression.snappy.framing":     strProp("xerial", "xerial", "raw"),
	"weir.transaction.classic":            boolProp("false"),
	// A broker whose produce requests take several times as long as the
	// others' gets one request at a time instead of
	// max.in.flight.requests.per.connection (slownode.go).
	"weir.producer.adaptive.in.flight": boolProp("true"),
}

type producerConfig struct {
	commonConfig
	acks             int16
	batchSize        int
	linger           time.Duration
	bufferMemory     int64
	maxBlock         time.Duration
	maxInFlight      int
	adaptiveInFlight bool
	maxRequestSize   int
	codec            records.Codec
	codecOpts        records.Options
	deliveryTimeout  time.Duration
	retries          int
	idempotent       bool
	idempotentSet    bool // the user set enable.idempotence explicitly
	partitionerClass string
	part             partitioner.Config
	autoCreate       bool
	txnTimeout       time.Duration
	transactionalID  string
	txnClassic       bool // weir.transaction.classic: never KIP-890's protocol
}

func parseProducerConfig(m map[string]string, o options) (producerConfig, error) {
	p, err := parseProps(m, producerProps)
	if err != nil {
		return producerConfig{}, err
	}
	c := producerConfig{
		commonConfig:     p.common(),
		batchSize:        p.int("batch.size"),
		linger:           p.ms("linger.ms"),
		bufferMemory:     p.long("buffer.memory"),
		maxBlock:         p.ms("max.block.ms"),
		maxInFlight:      p.int("max.in.flight.requests.per.connection"),
		adaptiveInFlight: p.bool("weir.producer.adaptive.in.flight"),
		maxRequestSize:   p.int("max.request.size"),
		deliveryTimeout:  p.ms("delivery.timeout.ms"),
		retries:          p.int("retries"),
		idempotent:       p.bool("enable.idempotence"),
		idempotentSet:    p.set["enable.idempotence"],
		partitionerClass: p.str("partitioner.class"),
		autoCreate:       p.bool("allow.auto.create.topics"),
		txnTimeout:       p.ms("transaction.timeout.ms"),
		transactionalID:  p.str("transactional.id"),
		txnClassic:       p.bool("weir.transaction.classic"),
	}
	switch p.str("acks") {
	case "all", "-1":
		c.acks = -1
	case "0":
		c.acks = 0
	case "1":
		c.acks = 1
	}
	c.codec, _ = records.ParseCodec(strings.ToLower(p.str("compression.type")))
	if p.str("weir.compression.snappy.framing") == "raw" {
		c.codecOpts.Snappy = records.SnappyRaw
	}
	switch c.codec {
	case records.Gzip:
		c.codecOpts.Level = p.int("compression.gzip.level")
	case records.LZ4:
		c.codecOpts.Level = p.int("compression.lz4.level")
	case records.Zstd:
		c.codecOpts.Level = p.int("compression.zstd.level")
	}
	c.part = partitioner.Config{
		BatchSize:             c.batchSize,
		Adaptive:              p.bool("partitioner.adaptive.partitioning.enable"),
		AvailabilityTimeoutMs: p.long("partitioner.availability.timeout.ms"),
		IgnoreKeys:            p.bool("partitioner.ignore.keys"),
	}
	switch p.str("weir.partitioner.adaptive.weighting") {
	case "bytes":
		c.part.Weighting = partitioner.WeightBytes
	case "bytes-inverse":
		c.part.Weighting = partitioner.WeightBytesInverse
	}
	if c.partitionerClass != "" {
		if _, err := c.customPartitioner(o); err != nil {
			return producerConfig{}, err
		}
	}
	// The Java client's cross-property rules.
	if p.set["delivery.timeout.ms"] && c.deliveryTimeout < c.linger+c.requestTimeout {
		return producerConfig{}, &ConfigError{Key: "delivery.timeout.ms", Value: p.str("delivery.timeout.ms"),
			Reason: "should be equal to or larger than linger.ms + request.timeout.ms"}
	}
	c.deliveryTimeout = max(c.deliveryTimeout, c.linger+c.requestTimeout)
	if c.transactionalID != "" {
		// A transactional producer is idempotent, as in Java.
		if c.idempotentSet && !c.idempotent {
			return producerConfig{}, &ConfigError{Key: "enable.idempotence", Value: "false", Reason: "cannot be false with a transactional.id"}
		}
		c.idempotent, c.idempotentSet = true, true
	}
	if c.idempotent {
		switch {
		case c.acks != -1:
			if c.idempotentSet {
				return producerConfig{}, &ConfigError{Key: "acks", Value: p.str("acks"), Reason: "must be all in order to use the idempotent producer"}
			}
			c.idempotent = false
		case c.maxInFlight > 5:
			if c.idempotentSet {
				return producerConfig{}, &ConfigError{Key: "max.in.flight.requests.per.connection", Value: p.str("max.in.flight.requests.per.connection"), Reason: "must be at most 5 to use the idempotent producer"}
			}
			c.idempotent = false
		case c.retries == 0:
			if c.idempotentSet {
				return producerConfig{}, &ConfigError{Key: "retries", Value: "0", Reason: "must be greater than 0 to use the idempotent producer"}
			}
			c.idempotent = false
		}
	}
	return c, nil
}

// customPartitioner resolves partitioner.class: a built-in Java class name,
// or a name registered with WithPartitioner. nil means the built-in logic.
func (c producerConfig) customPartitioner(o options) (partitioner.Partitioner, error) {
	name := c.partitionerClass
	if name == "" {
		return nil, nil
	}
	if p, ok := o.partitioners[name]; ok {
		return p, nil
	}
	short := name[strings.LastIndexByte(name, '.')+1:]
	switch short {
	case "RoundRobinPartitioner":
		return partitioner.RoundRobin(), nil
	case "DefaultPartitioner":
		return partitioner.StickyPerBatch(o.rand, false), nil
	case "UniformStickyPartitioner":
		return partitioner.StickyPerBatch(o.rand, true), nil
	}
	return nil, &ConfigError{Key: "partitioner.class", Value: name, Reason: "class " + name + " could not be found (register it with WithPartitioner)"}
}
