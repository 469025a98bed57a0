package feature

import (
	"errors"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Finalized: defaults where the log records nothing, recorded levels
// over them, level 0 left out; every default lies in its range.
func TestFinalized(t *testing.T) {
	for _, f := range Supported {
		if f.Default < f.Min || f.Default > f.Max || f.Min < 0 {
			t.Errorf("%s: default %d outside %d-%d", f.Name, f.Default, f.Min, f.Max)
		}
	}
	if !slices.IsSortedFunc(Supported, func(a, b Feature) int {
		if a.Name < b.Name {
			return -1
		}
		return 1
	}) {
		t.Error("Supported is not sorted by name")
	}
	names := func(ls []Level) map[string]int16 {
		m := map[string]int16{}
		for _, l := range ls {
			m[l.Name] = l.Level
		}
		return m
	}
	def := names(Finalized(nil))
	want := map[string]int16{"group.version": 1, "kraft.version": 1, "metadata.version": MetadataVersion, "share.version": 1, StreamsVersion: 1}
	if TransactionVersion > 0 {
		want["transaction.version"] = TransactionVersion
	}
	if len(def) != len(want) {
		t.Fatalf("defaults %v, want %v", def, want)
	}
	for k, v := range want {
		if def[k] != v {
			t.Fatalf("defaults %v, want %v", def, want)
		}
	}
	got := names(Finalized(map[string]int16{"group.version": 0, "streams.version": 1, "unknown.version": 3}))
	if _, ok := got["group.version"]; ok {
		t.Fatal("a recorded level 0 is listed")
	}
	if got["streams.version"] != 1 {
		t.Fatal("a recorded level is not listed")
	}
	if _, ok := got["unknown.version"]; ok {
		t.Fatal("a feature weir does not know is listed")
	}
}

func TestCheckUpdate(t *testing.T) {
	for _, tc := range []struct {
		name    string
		feature string
		current int16
		level   int16
		typ     int8
		want    error
	}{
		{"same level", "group.version", 1, 1, UpgradeOnly, nil},
		{"metadata.version as it is", "metadata.version", MetadataVersion, MetadataVersion, UpgradeOnly, nil},
		{"above the range", "group.version", 1, 2, UpgradeOnly, kerr.InvalidUpdateVersion},
		{"below the range", "share.version", 1, 0, SafeDowngrade, kerr.InvalidUpdateVersion},
		{"unknown feature", "nope.version", 0, 1, UpgradeOnly, kerr.InvalidUpdateVersion},
		{"unknown upgrade type", "group.version", 1, 1, 7, kerr.InvalidRequest},
		{"metadata.version upgrade past 4.3", "metadata.version", MetadataVersion, MetadataVersion + 1, UpgradeOnly, kerr.InvalidUpdateVersion},
		{"transaction.version past what is served", "transaction.version", TransactionVersion, TransactionVersion + 1, UpgradeOnly, kerr.InvalidUpdateVersion},
		{"a downgrade needs a downgrade type", "kraft.version", 2, 1, UpgradeOnly, kerr.InvalidUpdateVersion},
		{"a safe downgrade", "kraft.version", 2, 1, SafeDowngrade, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckUpdate(tc.feature, tc.current, tc.level, tc.typ)
			if (tc.want == nil) != (err == nil) || (tc.want != nil && !errors.Is(err, tc.want)) {
				t.Fatalf("err %v, want %v", err, tc.want)
			}
		})
	}
}

func TestLevelOf(t *testing.T) {
	for _, tc := range []struct {
		recorded map[string]int16
		name     string
		want     int16
	}{
		{nil, StreamsVersion, 1},
		{map[string]int16{StreamsVersion: 0}, StreamsVersion, 0},
		{nil, "eligible.leader.replicas.version", 0},
		{nil, "unknown.version", 0},
	} {
		if got := LevelOf(tc.recorded, tc.name); got != tc.want {
			t.Errorf("LevelOf(%v, %s) = %d, want %d", tc.recorded, tc.name, got, tc.want)
		}
	}
}
