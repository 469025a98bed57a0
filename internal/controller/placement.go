package controller

import (
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"

	"weir/internal/metadata"
)

// place assigns replicas to n new partitions, numbered from start, with
// replication factor rf, over the given brokers (the active ones), the
// way Kafka's rack-aware round robin does:
//
//   - Brokers are arranged so that consecutive ones are in different
//     racks (rack by rack, each rack's brokers by id, interleaved), or
//     simply by id when no broker has a rack.
//   - Partition p's first replica, its preferred leader, is the broker
//     at (p + startIndex) mod brokers: leadership goes round the brokers.
//   - Its other replicas follow the first at a distance that shifts by
//     one every time the partitions wrap around the brokers, so that the
//     followers of one broker's partitions spread over all the others.
//     When racks are known, a replica skips a broker whose rack already
//     holds one of the partition's replicas while some rack holds none,
//     and a broker already used while some broker is unused.
//
// startIndex and the initial shift are random, so that many small topics
// do not all start on the same broker. A broker without a rack counts as
// being in the rack "", when others have racks.
func place(rng *rand.Rand, brokers []*metadata.Broker, start, n int32, rf int16) ([][]int32, error) {
	if int(rf) > len(brokers) {
		return nil, apiErr(kerr.InvalidReplicationFactor, "Unable to replicate the partition %d time(s): The target replication factor of %d cannot be reached because only %d broker(s) are registered.",
			rf, rf, len(brokers))
	}
	arranged, rackOf := arrange(brokers)
	nb := len(arranged)
	startIndex, shift := rng.IntN(nb), rng.IntN(nb)
	numRacks := 0
	if rackOf != nil {
		racks := map[string]bool{}
		for _, r := range rackOf {
			racks[r] = true
		}
		numRacks = len(racks)
	}
	out := make([][]int32, n)
	for i := range out {
		p := int(start) + i
		if p > 0 && p%nb == 0 {
			shift++
		}
		first := (p + startIndex) % nb
		replicas := make([]int32, 1, rf)
		replicas[0] = arranged[first]
		if rackOf == nil {
			for j := range int(rf) - 1 {
				replicas = append(replicas, arranged[replicaIndex(first, shift, j, nb)])
			}
		} else {
			replicas = placeRackAware(replicas, arranged, rackOf, first, shift*numRacks, numRacks, int(rf))
		}
		out[i] = replicas
	}
	return out, nil
}

// replicaIndex is the position of a partition's (j+2)th replica: never
// the first replica's own position.
func replicaIndex(first, shift, j, n int) int {
	return (first + 1 + (shift+j)%(n-1)) % n
}

func placeRackAware(replicas, arranged []int32, rackOf map[int32]string, first, shift, numRacks, rf int) []int32 {
	usedRacks := map[string]bool{rackOf[replicas[0]]: true}
	used := map[int32]bool{replicas[0]: true}
	k := 0
	for len(replicas) < rf {
		b := arranged[replicaIndex(first, shift, k, len(arranged))]
		k++
		if usedRacks[rackOf[b]] && len(usedRacks) < numRacks {
			continue
		}
		if used[b] && len(used) < len(arranged) {
			continue
		}
		replicas = append(replicas, b)
		usedRacks[rackOf[b]] = true
		used[b] = true
	}
	return replicas
}

// arrange returns the broker ids in placement order, and each broker's
// rack (nil when no broker has one).
func arrange(brokers []*metadata.Broker) ([]int32, map[int32]string) {
	ids := make([]int32, len(brokers))
	for i, b := range brokers {
		ids[i] = b.ID
	}
	slices.Sort(ids)
	if !slices.ContainsFunc(brokers, func(b *metadata.Broker) bool { return b.Rack != "" }) {
		return ids, nil
	}
	rackOf := make(map[int32]string, len(brokers))
	byRack := map[string][]int32{}
	for _, b := range brokers {
		rackOf[b.ID] = b.Rack
	}
	for _, id := range ids {
		byRack[rackOf[id]] = append(byRack[rackOf[id]], id)
	}
	racks := make([]string, 0, len(byRack))
	for r := range byRack {
		racks = append(racks, r)
	}
	slices.SortFunc(racks, strings.Compare)
	arranged := make([]int32, 0, len(ids))
	for i := 0; len(arranged) < len(ids); i++ {
		for _, r := range racks {
			if i < len(byRack[r]) {
				arranged = append(arranged, byRack[r][i])
			}
		}
	}
	return arranged, rackOf
}

// usableBrokers are the brokers new replicas may go to: the active ones.
func usableBrokers(img *metadata.Image) []*metadata.Broker {
	var out []*metadata.Broker
	for _, b := range img.Brokers() {
		if b.Active() {
			out = append(out, b)
		}
	}
	return out
}
