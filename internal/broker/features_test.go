package broker

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/feature"
	"weir/internal/txn"
)

// ApiVersions v3+ lists every supported feature and the finalized ones
// (level 0 left out), epoch the image's offset; UpdateFeatures through a
// broker accepts the levels weir implements and refuses others. (A change
// of level is the controller's and tested there: every level weir
// supports is the one it runs at.)
func TestFeatures(t *testing.T) {
	tb := startBroker(t, t.TempDir(), nil)
	ctx := testCtx(t)
	c := newClient(t, tb.addr)
	versions := func() *kmsg.ApiVersionsResponse {
		req := kmsg.NewPtrApiVersionsRequest()
		req.Version = 4
		req.ClientSoftwareName, req.ClientSoftwareVersion = "test", "1"
		return request[*kmsg.ApiVersionsResponse](t, ctx, c, req)
	}
	finalized := func(r *kmsg.ApiVersionsResponse) map[string]int16 {
		m := map[string]int16{}
		for _, f := range r.FinalizedFeatures {
			if f.MinVersionLevel != f.MaxVersionLevel {
				t.Fatalf("%s finalized %d-%d", f.Name, f.MinVersionLevel, f.MaxVersionLevel)
			}
			m[f.Name] = f.MaxVersionLevel
		}
		return m
	}
	// One level for transaction.version: the feature's constant is the
	// protocol the transaction coordinator serves.
	if feature.TransactionVersion != int16(txn.V2) {
		t.Fatalf("transaction.version %d, the coordinator serves %d", feature.TransactionVersion, txn.V2)
	}
	r := versions()
	if len(r.SupportedFeatures) != len(feature.Supported) {
		t.Fatalf("%d supported features, want %d", len(r.SupportedFeatures), len(feature.Supported))
	}
	fin := finalized(r)
	if fin["metadata.version"] != feature.MetadataVersion || fin["group.version"] != 1 || fin["share.version"] != 1 ||
		fin["transaction.version"] != feature.TransactionVersion || fin[feature.StreamsVersion] != 1 {
		t.Fatalf("finalized %v", fin)
	}
	if _, ok := fin["eligible.leader.replicas.version"]; ok {
		t.Fatal("a feature at level 0 is listed as finalized")
	}
	if r.FinalizedFeaturesEpoch != tb.b.image().Offset() {
		t.Fatalf("epoch %d, image at %d", r.FinalizedFeaturesEpoch, tb.b.image().Offset())
	}

	update := func(name string, level int16) *kmsg.UpdateFeaturesResponse {
		req := kmsg.NewPtrUpdateFeaturesRequest()
		req.Version = 2
		u := kmsg.NewUpdateFeaturesRequestFeatureUpdate()
		u.Feature, u.MaxVersionLevel, u.UpgradeType = name, level, feature.UpgradeOnly
		req.FeatureUpdates = append(req.FeatureUpdates, u)
		return request[*kmsg.UpdateFeaturesResponse](t, ctx, c, req)
	}
	if resp := update("share.version", 2); resp.ErrorCode != kerr.InvalidUpdateVersion.Code {
		t.Fatalf("share.version 2: %v", kerr.ErrorForCode(resp.ErrorCode))
	}
	if resp := update("group.version", 1); resp.ErrorCode != 0 {
		t.Fatalf("group.version 1: %v %v", kerr.ErrorForCode(resp.ErrorCode), resp.ErrorMessage)
	}
	if got := finalized(versions())["group.version"]; got != 1 {
		t.Fatalf("group.version %d after the update", got)
	}
}
