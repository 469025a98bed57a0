package configadmin

import (
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/metadata"
)

// FuzzAlterChecks: any resource of either config request (and of
// DescribeConfigs), however malformed, is answered with one of the codes a config check gives,
// without a panic; it is forwarded exactly when it passed and the
// request is not ValidateOnly; the controller's policy answers the same
// operations with a code or new overrides, never a panic.
func FuzzAlterChecks(f *testing.F) {
	f.Add(int8(2), "t", int8(0), "retention.ms", "100", false, true)
	f.Add(int8(2), "missing", int8(0), "retention.ms", "soon", false, false)
	f.Add(int8(4), "1", int8(2), "log.retention.ms", "1", true, true)
	f.Add(int8(4), "", int8(1), "node.id", "", false, false)
	f.Add(int8(32), "g", int8(0), groupKey, "1000", false, true)
	f.Add(int8(2), "t", int8(3), "cleanup.policy", "compact", false, true)
	f.Add(int8(8), "1", int8(9), "", "", true, false)
	allowed := []int16{0, kerr.InvalidConfig.Code, kerr.InvalidRequest.Code, kerr.UnknownTopicOrPartition.Code, kerr.InvalidTopicException.Code}
	f.Fuzz(func(t *testing.T, typ int8, name string, op int8, key, value string, null, validateOnly bool) {
		h := &fakeHost{}
		m := newManager(t, nil, h)
		var v *string
		if !null {
			v = &value
		}
		ir := kmsg.NewIncrementalAlterConfigsRequestResource()
		ir.ResourceType, ir.ResourceName = kmsg.ConfigResourceType(typ), name
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Op, c.Name, c.Value = kmsg.IncrementalAlterConfigOp(op), key, v
		ir.Configs = append(ir.Configs, c)
		lr := kmsg.NewAlterConfigsRequestResource()
		lr.ResourceType, lr.ResourceName = ir.ResourceType, name
		lc := kmsg.NewAlterConfigsRequestResourceConfig()
		lc.Name, lc.Value = key, v
		lr.Configs = append(lr.Configs, lc)
		for _, tc := range []alterCase{{name: "incremental", incremental: &ir}, {name: "legacy", legacy: &lr}} {
			got, fwd, _ := tc.run(t, m, h, validateOnly)
			if !slices.Contains(allowed, got.ErrorCode) {
				t.Fatalf("%s: code %s (%s)", tc.name, code(got.ErrorCode), deref(got.ErrorMessage))
			}
			if (got.ErrorCode == 0 && !validateOnly) != (fwd != nil) {
				t.Fatalf("%s: code %s, validate-only %v, forwarded %v", tc.name, code(got.ErrorCode), validateOnly, fwd != nil)
			}
			h.forwarded = nil
		}
		dr := kmsg.NewDescribeConfigsRequestResource()
		dr.ResourceType, dr.ResourceName, dr.ConfigNames = ir.ResourceType, name, []string{key}
		dreq := kmsg.NewPtrDescribeConfigsRequest()
		dreq.Version, dreq.IncludeSynonyms, dreq.IncludeDocumentation = 4, null, validateOnly
		dreq.Resources = append(dreq.Resources, dr)
		if d := m.Describe(dreq).Resources[0]; !slices.Contains(allowed, d.ErrorCode) || (d.ErrorCode != 0 && len(d.Configs) > 0) {
			t.Fatalf("describe: %s (%s) with %d configs", code(d.ErrorCode), deref(d.ErrorMessage), len(d.Configs))
		}
		res := metadata.ConfigResource{Type: metadata.ResourceType(typ), Name: name}
		p := m.Policy()
		for _, err := range []error{
			second(p.Incremental(res, map[string]string{"retention.ms": "1"}, ir.Configs)),
			second(p.Replace(res, nil, lr.Configs)),
		} {
			if c := codeOf(err); !slices.Contains(allowed, c) {
				t.Fatalf("policy: %v", err)
			}
		}
	})
}

func second[T any](_ T, err error) error { return err }
