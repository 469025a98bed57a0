package client

import "time"

var shareConsumerProps = map[string]prop{
	"group.id":                   strProp(""),
	"share.acquire.mode":         strProp("batch_optimized", "batch_optimized", "record_limit"),
	"share.acknowledgement.mode": strProp("implicit", "implicit", "explicit"),
	"max.poll.records":           intProp("500", 1),
	"fetch.min.bytes":            intProp("1", 0),
	"fetch.max.bytes":            intProp("52428800", 0),
	"fetch.max.wait.ms":          intProp("500", 0),
	"max.partition.fetch.bytes":  intProp("1048576", 0),
	"allow.auto.create.topics":   boolProp("true"),
	// weir's own: ask weir brokers where the backlog is
	// (wiretag.ShareFetchBacklog) and, in record_limit mode, take records
	// from the leader with the most waiting first. false falls back to
	// following the leaders that last returned records.
	"weir.share.fetch.backlog.hints": boolProp("true"),
	// weir's own: in record_limit mode, ask weir brokers to answer a
	// ShareFetch once its records are acquired and to report its
	// acknowledgements' durability later (wiretag.ShareFetchDeferAcks).
	// CommitSync, CommitAsync and Close still return only once every
	// acknowledgement sent is durable. false waits on every fetch, as
	// Kafka's protocol does.
	"weir.share.acknowledgement.defer": boolProp("true"),
}

type shareConfig struct {
	commonConfig
	groupID        string
	recordLimit    bool // share.acquire.mode=record_limit
	explicit       bool // share.acknowledgement.mode=explicit
	maxPollRecords int
	fetchMinBytes  int32
	fetchMaxBytes  int32
	fetchMaxWait   time.Duration
	partitionMax   int32
	autoCreate     bool
	backlogHints   bool
	deferAcks      bool // record_limit fetches carry wiretag.ShareFetchDeferAcks
}

func parseShareConfig(m map[string]string) (shareConfig, error) {
	p, err := parseProps(m, shareConsumerProps)
	if err != nil {
		return shareConfig{}, err
	}
	c := shareConfig{
		commonConfig:   p.common(),
		groupID:        p.str("group.id"),
		recordLimit:    p.str("share.acquire.mode") == "record_limit",
		explicit:       p.str("share.acknowledgement.mode") == "explicit",
		maxPollRecords: p.int("max.poll.records"),
		fetchMinBytes:  int32(p.int("fetch.min.bytes")),
		fetchMaxBytes:  int32(p.int("fetch.max.bytes")),
		fetchMaxWait:   p.ms("fetch.max.wait.ms"),
		partitionMax:   int32(p.int("max.partition.fetch.bytes")),
		autoCreate:     p.bool("allow.auto.create.topics"),
		backlogHints:   p.bool("weir.share.fetch.backlog.hints"),
	}
	c.deferAcks = c.recordLimit && p.bool("weir.share.acknowledgement.defer")
	if c.groupID == "" {
		return shareConfig{}, &ConfigError{Key: "group.id", Reason: "a share consumer needs a group"}
	}
	return c, nil
}
