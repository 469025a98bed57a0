package controller

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/feature"
	"weir/internal/metadata"
)

// UpdateFeatures handles UpdateFeatures (API 57): each change is checked
// (feature.CheckUpdate) against the level the feature runs at in the
// controller's view, and all are recorded as FeatureLevelRecords in one
// batch, or none when any is refused (those that passed answer with the
// refusal's code too); a
// change to the level a feature already runs at writes nothing.
// ValidateOnly checks without writing. v0's AllowDowngrade is a safe
// downgrade. From v2 the response has no per-feature results: the first
// refusal is the top-level error.
func (c *Controller) UpdateFeatures(req *kmsg.UpdateFeaturesRequest) (*kmsg.UpdateFeaturesResponse, []metadata.Record) {
	resp := kmsg.NewPtrUpdateFeaturesResponse()
	resp.Version = req.Version
	recorded := c.img.FeatureLevels()
	current := func(name string) int16 {
		if l, ok := recorded[name]; ok {
			return l
		}
		f, _ := feature.Lookup(name)
		return f.Default
	}
	seen := map[string]bool{}
	var (
		recs  []metadata.Record
		first error
	)
	for _, u := range req.FeatureUpdates {
		typ := u.UpgradeType
		if req.Version == 0 {
			typ = feature.UpgradeOnly
			if u.AllowDowngrade {
				typ = feature.SafeDowngrade
			}
		}
		var err error
		switch {
		case seen[u.Feature]:
			err = apiErr(kerr.InvalidRequest, "Feature %s was specified more than once.", u.Feature)
		default:
			err = feature.CheckUpdate(u.Feature, current(u.Feature), u.MaxVersionLevel, typ)
		}
		seen[u.Feature] = true
		if err != nil && first == nil {
			first = err
		}
		if err == nil && u.MaxVersionLevel != current(u.Feature) {
			recs = append(recs, &metadata.FeatureLevelRecord{Name: u.Feature, Level: u.MaxVersionLevel})
		}
		if req.Version < 2 {
			r := kmsg.NewUpdateFeaturesResponseResult()
			r.Feature = u.Feature
			r.ErrorCode, r.ErrorMessage = configErr(err)
			resp.Results = append(resp.Results, r)
		}
	}
	if first != nil {
		if req.Version >= 2 {
			resp.ErrorCode, resp.ErrorMessage = configErr(first)
		}
		// The batch is all or nothing: the changes that passed are not
		// written either, and say so.
		code, _ := configErr(first)
		for i := range resp.Results {
			if r := &resp.Results[i]; r.ErrorCode == 0 {
				msg := "Not applied: another update of the request was refused."
				r.ErrorCode, r.ErrorMessage = code, &msg
			}
		}
		return resp, nil
	}
	if req.ValidateOnly || len(recs) == 0 {
		return resp, nil
	}
	t := c.begin()
	for _, r := range recs {
		t.add(r)
	}
	out, err := t.commit()
	if err != nil {
		resp.ErrorCode, resp.ErrorMessage = codeAndMessage(err)
		for i := range resp.Results {
			resp.Results[i].ErrorCode, resp.Results[i].ErrorMessage = resp.ErrorCode, resp.ErrorMessage
		}
		return resp, nil
	}
	c.log.Info("feature levels updated", "features", len(out))
	return resp, out
}
