package broker

import (
	"errors"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"

	"weir/internal/config"
)

// KIP-951 leader hints: a Produce (v10+) or Fetch (v16+) answer that
// fails a partition with NOT_LEADER_OR_FOLLOWER or FENCED_LEADER_EPOCH
// carries the partition's current leader and epoch as this node's image
// knows them, and the endpoints of every leader it names, so the client
// goes there without a metadata refresh. A hint is given only when the
// image names a leader that is a registered, unfenced broker with an
// endpoint (a leader id never comes without its endpoint) and its epoch
// is not older than the one the client sent. weir.leader.hints.enable
// turns them off, for comparisons.

// leaderHint is one partition's hint.
type leaderHint struct {
	leader, epoch int32
	host          string
	port          int32
	rack          *string
}

// hintFor returns the hint for a partition whose request failed with
// err, if one should be given: the leader's endpoint on listener, the
// one the request came in on. clientEpoch is the leader epoch the request
// carried (-1 when none).
func (b *Broker) hintFor(t *topic, index int32, err error, clientEpoch int32, listener string) (leaderHint, bool) {
	if t == nil || !(errors.Is(err, kerr.NotLeaderForPartition) || errors.Is(err, kerr.FencedLeaderEpoch)) {
		return leaderHint{}, false
	}
	if !b.settings().Bool(config.LeaderHints) {
		return leaderHint{}, false
	}
	b.mu.RLock()
	var p *partition
	if index >= 0 && int(index) < len(t.partitions) {
		p = t.partitions[index]
	}
	b.mu.RUnlock()
	if p == nil {
		return leaderHint{}, false
	}
	leader, epoch := p.leaderAndEpoch()
	if leader < 0 || leader == b.cfg.NodeID || epoch < clientEpoch {
		return leaderHint{}, false
	}
	br, ok := b.image().Broker(leader)
	if !ok || br.Fenced {
		return leaderHint{}, false
	}
	mb, ok := b.endpointFor(br, listener)
	if !ok {
		return leaderHint{}, false
	}
	return leaderHint{leader: leader, epoch: epoch, host: mb.Host, port: mb.Port, rack: mb.Rack}, true
}

// hintSet collects the endpoints of the leaders a response names.
type hintSet []leaderHint

func (hs *hintSet) add(h leaderHint) {
	if !slices.ContainsFunc(*hs, func(x leaderHint) bool { return x.leader == h.leader }) {
		*hs = append(*hs, h)
	}
}
