package group

import (
	"maps"
	"regexp"
	"slices"
	"time"
)

// Subscription regexes of consumer-protocol groups, resolved as Kafka
// 4.3's coordinator resolves them (GroupMetadataManager.
// maybeUpdateRegularExpressions, TopicRegexResolver):
//
//   - A regex is resolved for the whole group: every member subscribed to
//     it gets the same topics.
//   - Only a heartbeat resolves, and it resolves every regex of the group
//     at once, keeping the topics its client's principal may DESCRIBE
//     (Client.Describable). With members of different principals the
//     group therefore holds what the principal of the last heartbeat
//     that refreshed may describe (Kafka's log names that member).
//   - A heartbeat refreshes when a member brings a regex the group has
//     not resolved, when topics changed since the last refresh, or when
//     the last one is RegexRefreshInterval old
//     (group.consumer.regex.refresh.interval.ms). ACLs changed since are
//     seen then, not before: a principal that lost DESCRIBE on a topic
//     keeps it assigned until the next refresh, as in Kafka.
//   - Topics, sessions and restarts do not resolve: they use the last
//     resolution (stored as records, like Kafka's
//     ConsumerGroupRegularExpression), less the topics deleted since.
//
// Kafka refreshes at most once per 10 s per group, after the heartbeat
// that asked (the resolution runs on an executor); here a heartbeat that
// finds a refresh due runs it at once, and any topic change (Kafka: a
// created topic) makes one due. Internal topics never match here; Kafka
// 4.3 matches every topic of its image.

// resolvedRegex is what one regex resolved to.
type resolvedRegex struct {
	topics []string // sorted
	at     time.Time
}

// subscribedRegexes returns the regexes the members subscribe to,
// compiled.
func (c *consumerGroup) subscribedRegexes() map[string]*regexp.Regexp {
	out := make(map[string]*regexp.Regexp)
	for _, m := range c.members {
		if m.re != nil {
			out[m.regex] = m.re
		}
	}
	return out
}

// regexRefreshDue reports whether a heartbeat must resolve the group's
// regexes again: one is not resolved yet, topics changed since the last
// refresh, or the last one is interval old. It allocates nothing: every
// heartbeat asks.
func (c *consumerGroup) regexRefreshDue(now time.Time, interval time.Duration) bool {
	for _, m := range c.members {
		if m.re != nil {
			return c.regexesStale || now.Sub(c.regexesAt) >= interval || c.unresolvedRegex()
		}
	}
	return false
}

// refreshRegexes resolves every regex the members subscribe to: the
// topics it matches in full (internal topics excepted) that describable
// keeps (nil keeps all). It reports whether the topics of any regex
// changed.
func (c *consumerGroup) refreshRegexes(topics Topics, describable func([]string) []string, now time.Time) bool {
	subs := c.subscribedRegexes()
	matched := make(map[string][]string, len(subs))
	var names []string // every topic some regex matched, once
	topics.EachTopic(func(ti TopicInfo) bool {
		if ti.Internal {
			return true
		}
		hit := false
		for r, re := range subs {
			if re.MatchString(ti.Name) {
				matched[r] = append(matched[r], ti.Name)
				hit = true
			}
		}
		if hit {
			names = append(names, ti.Name)
		}
		return true
	})
	if describable != nil && len(names) > 0 {
		allowed := make(map[string]bool, len(names))
		for _, n := range describable(names) {
			allowed[n] = true
		}
		for r := range matched {
			matched[r] = slices.DeleteFunc(matched[r], func(n string) bool { return !allowed[n] })
		}
	}
	changed := false
	for r := range subs {
		ts := matched[r]
		slices.Sort(ts)
		if !slices.Equal(c.regexes[r].topics, ts) {
			changed = true
		}
		c.regexes[r] = resolvedRegex{topics: ts, at: now}
	}
	c.regexesAt, c.regexesStale, c.dirtyRegexes = now, false, true
	return changed
}

// dropUnusedRegexes forgets the resolution of the regexes no member
// subscribes to any more.
func (c *consumerGroup) dropUnusedRegexes() {
	if len(c.regexes) == 0 {
		return
	}
	subs := c.subscribedRegexes()
	for r := range c.regexes {
		if _, ok := subs[r]; !ok {
			delete(c.regexes, r)
			c.goneRegexes[r] = true
		}
	}
}

// regexRecords returns the regex records of the unpersisted changes and
// clears their marks.
func (c *consumerGroup) regexRecords(groupID string) []Record {
	var recs []Record
	for _, r := range sortedKeysStr(c.goneRegexes) {
		if _, back := c.regexes[r]; !back {
			recs = append(recs, encodeRecord(decodedRecord{kind: recConsumerRegex, group: groupID, regex: r}))
		}
	}
	if c.dirtyRegexes {
		for _, r := range slices.Sorted(maps.Keys(c.regexes)) {
			rr := c.regexes[r]
			recs = append(recs, encodeRecord(decodedRecord{kind: recConsumerRegex, group: groupID, regex: r,
				resolved: &regexValue{topics: rr.topics, resolvedMs: rr.at.UnixMilli()}}))
		}
	}
	c.dirtyRegexes = false
	clear(c.goneRegexes)
	return recs
}

// unresolvedRegex reports whether a member subscribes to a regex the
// group has no resolution of.
func (c *consumerGroup) unresolvedRegex() bool {
	for _, m := range c.members {
		if m.re == nil {
			continue
		}
		if _, ok := c.regexes[m.regex]; !ok {
			return true
		}
	}
	return false
}
