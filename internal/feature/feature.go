package feature

import (
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
)

// TransactionVersion is the transaction.version weir implements, and the
// level a cluster runs at unless UpdateFeatures lowered it: KIP-890's
// transaction protocol (level 2: the epoch bumped at every EndTxn,
// partitions added by their leaders), which the transaction coordinator
// (internal/txn, its V2) serves beside the classic one. Clients then use
// Produce v12 and EndTxn v5. It is the one constant to change with the
// coordinator; the supported range (0 to it) and the default follow.
const TransactionVersion int16 = 2

// MetadataVersion is metadata.version 4.3-IV0 (30), the level of Kafka
// 4.3, whose API versions weir serves. weir's own metadata log has no
// other format to switch between, so it is the only level supported.
const MetadataVersion int16 = 30

// Feature is one versioned feature: the levels weir implements and the
// level a cluster runs at when the metadata log records none.
type Feature struct {
	Name     string
	Min, Max int16
	Default  int16
}

// Supported lists the features weir knows, by name. A feature at level 0
// is off; Kafka's brokers list such features as supported and leave them
// out of the finalized ones, and so does weir.
var Supported = []Feature{
	// Eligible leader replicas (KIP-966): not implemented.
	{Name: "eligible.leader.replicas.version", Min: 0, Max: 0, Default: 0},
	// The consumer group protocol (KIP-848): served.
	{Name: "group.version", Min: 1, Max: 1, Default: 1},
	// Voters added and removed at runtime (KIP-853): the quorum's voter
	// set is raft's configuration, which AddRaftVoter and RemoveRaftVoter
	// change.
	{Name: "kraft.version", Min: 1, Max: 1, Default: 1},
	{Name: "metadata.version", Min: MetadataVersion, Max: MetadataVersion, Default: MetadataVersion},
	// Share groups (KIP-932): served.
	{Name: "share.version", Min: 1, Max: 1, Default: 1},
	// Streams groups (KIP-1071): served at level 1; UpdateFeatures may
	// turn them off (level 0), and StreamsGroupHeartbeat is then refused.
	{Name: StreamsVersion, Min: 0, Max: 1, Default: 1},
	{Name: "transaction.version", Min: 0, Max: TransactionVersion, Default: TransactionVersion},
}

// StreamsVersion is the feature that enables streams groups.
const StreamsVersion = "streams.version"

// LevelOf returns the level a feature runs at: the recorded one, else
// its default (0 for unknown features).
func LevelOf(recorded map[string]int16, name string) int16 {
	if l, ok := recorded[name]; ok {
		return l
	}
	f, _ := Lookup(name)
	return f.Default
}

// Lookup returns a supported feature by name.
func Lookup(name string) (Feature, bool) {
	i := slices.IndexFunc(Supported, func(f Feature) bool { return f.Name == name })
	if i < 0 {
		return Feature{}, false
	}
	return Supported[i], true
}

// Level is a feature at its finalized level.
type Level struct {
	Name  string
	Level int16
}

// Finalized returns the level of every supported feature, by name: the
// recorded level (a metadata.Image's FeatureLevels) where the log has
// one, else the default. Features at level 0 are left out, as Kafka's
// ApiVersions leaves them out.
func Finalized(recorded map[string]int16) []Level {
	var out []Level
	for _, f := range Supported {
		level := f.Default
		if l, ok := recorded[f.Name]; ok {
			level = l
		}
		if level > 0 {
			out = append(out, Level{Name: f.Name, Level: level})
		}
	}
	return out
}

// Upgrade types of UpdateFeatures v1+ (v0 has AllowDowngrade instead).
const (
	UpgradeOnly     int8 = 1
	SafeDowngrade   int8 = 2
	UnsafeDowngrade int8 = 3
)

// CheckUpdate checks one UpdateFeatures change of name to level, given
// the level it runs at now: unknown features and levels outside the
// supported range are INVALID_UPDATE_VERSION, a downgrade without an
// upgrade type that allows it too, and an unknown upgrade type
// INVALID_REQUEST. Level 0 asks to turn a feature off: allowed only
// where 0 is in the supported range.
func CheckUpdate(name string, current, level int16, upgradeType int8) error {
	f, ok := Lookup(name)
	if !ok {
		return fmt.Errorf("%w: Invalid update version %d for feature %s. The controller does not support the given feature.", kerr.InvalidUpdateVersion, level, name)
	}
	if upgradeType < UpgradeOnly || upgradeType > UnsafeDowngrade {
		return fmt.Errorf("%w: Unknown upgrade type %d for feature %s.", kerr.InvalidRequest, upgradeType, name)
	}
	if level < f.Min || level > f.Max {
		return fmt.Errorf("%w: Invalid update version %d for feature %s. Local controller supports versions %d-%d.", kerr.InvalidUpdateVersion, level, name, f.Min, f.Max)
	}
	if level < current && upgradeType == UpgradeOnly {
		return fmt.Errorf("%w: Invalid update version %d for feature %s. Can't downgrade the version of this feature without setting the upgrade type to either safe or unsafe downgrade.", kerr.InvalidUpdateVersion, level, name)
	}
	return nil
}
