package authz

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/metadata"
	"weir/internal/protocol"
)

// fuzzIndex allows and denies a little of everything.
func fuzzIndex() *Index { return NewIndex(fuzzACLs()) }

// FuzzAuthorize decodes a request of any API with checks from arbitrary
// bytes and authorizes it: nothing panics, and what is served, rejected
// and finished encodes at the request's version.
func FuzzAuthorize(f *testing.F) {
	for key, ss := range samples() {
		for _, s := range ss {
			f.Add(uint8(key), uint8(s.req.GetVersion()), s.req.AppendTo(nil))
		}
	}
	keys := make([]int16, len(APIs))
	for i, api := range APIs {
		keys[i] = api.Key
	}
	cfg := &Config{Enabled: true}
	idx := fuzzIndex()
	f.Fuzz(func(t *testing.T, keySel, version uint8, body []byte) {
		key := keys[int(keySel)%len(keys)]
		req := kmsg.RequestForKey(key)
		if req == nil {
			return
		}
		v := int16(version) % (req.MaxVersion() + 1)
		if protocol.Check(key, v, body) != nil {
			return
		}
		req.SetVersion(v)
		if req.ReadFrom(body) != nil {
			return
		}
		out := Authorize(NewChecker(idx, cfg, alice), testEnv, req)
		if out.Reject != nil {
			out.Reject.AppendTo(nil)
			return
		}
		out.Request.AppendTo(nil)
		resp := req.ResponseKind()
		resp.SetVersion(v)
		out.Finish(resp).AppendTo(nil)
	})
}

// FuzzFilter: whatever a DescribeAcls filter holds, DescribeACLs answers
// without panicking, lists exactly the ACLs the filter matches, or
// refuses a filter with unknown codes.
func FuzzFilter(f *testing.F) {
	f.Add(int8(1), int8(1), int8(1), int8(1), "t", "User:alice", "*", uint8(0))
	f.Add(int8(2), int8(2), int8(3), int8(3), "u1", "User:alice", "*", uint8(7))
	f.Add(int8(4), int8(3), int8(8), int8(2), ClusterName, "User:*", "10.0.0.1", uint8(1))
	f.Add(int8(0), int8(9), int8(16), int8(-1), "", "", "", uint8(2))
	recs := []metadata.Record{}
	for i, acl := range fuzzACLs() {
		r := &metadata.AccessControlEntryRecord{ID: [16]byte{byte(i + 1)}, ResourceType: int8(acl.ResourceType), ResourceName: acl.ResourceName,
			PatternType: int8(acl.PatternType), Principal: acl.Principal.String(), Host: acl.Host, Operation: int8(acl.Operation), PermissionType: int8(acl.Permission)}
		recs = append(recs, r)
	}
	img, _, err := metadata.Empty().Apply(0, recs)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, rt, pt, op, perm int8, name, principal, host string, nulls uint8) {
		req := kmsg.NewPtrDescribeACLsRequest()
		req.Version = 3
		req.ResourceType, req.ResourcePatternType = kmsg.ACLResourceType(rt), kmsg.ACLResourcePatternType(pt)
		req.Operation, req.PermissionType = kmsg.ACLOperation(op), kmsg.ACLPermissionType(perm)
		if nulls&1 == 0 {
			req.ResourceName = &name
		}
		if nulls&2 == 0 {
			req.Principal = &principal
		}
		if nulls&4 == 0 {
			req.Host = &host
		}
		resp := DescribeACLs(img.ACLs(), req)
		f := DescribeFilter(req)
		if resp.ErrorCode != 0 {
			if f.Validate() == nil {
				t.Fatalf("valid filter refused: %+v", resp)
			}
			return
		}
		listed := 0
		for _, r := range resp.Resources {
			for _, e := range r.ACLs {
				p, _ := ParsePrincipal(e.Principal)
				a := ACL{ResourceType: ResourceType(r.ResourceType), ResourceName: r.ResourceName, PatternType: PatternType(r.ResourcePatternType),
					Principal: p, Host: e.Host, Operation: Operation(e.Operation), Permission: Permission(e.PermissionType)}
				if !f.Matches(&a) {
					t.Fatalf("listed %s, which the filter does not match", &a)
				}
				listed++
			}
		}
		want := 0
		for _, a := range fuzzACLs() {
			if f.Matches(&a) {
				want++
			}
		}
		if listed != want {
			t.Fatalf("listed %d of the %d ACLs the filter matches", listed, want)
		}
		resp.AppendTo(nil)
	})
}

func fuzzACLs() []ACL {
	return []ACL{
		a(Allow, "User:alice", OpRead, ResourceTopic, PatternLiteral, "t", "*"),
		a(Allow, "User:alice", OpWrite, ResourceTopic, PatternPrefixed, "u", "*"),
		a(Deny, "User:alice", OpDescribe, ResourceTopic, PatternLiteral, "u", "*"),
		a(Allow, "User:*", OpRead, ResourceGroup, PatternLiteral, "*", "*"),
		a(Allow, "User:alice", OpDescribe, ResourceCluster, PatternLiteral, ClusterName, "*"),
		a(Allow, "Group:ops", OpTwoPhaseCommit, ResourceTransactionalID, PatternPrefixed, "tx", "10.0.0.1"),
	}
}

// FuzzValidateCreation: every ACL ValidateCreation accepts is one the
// metadata image accepts.
func FuzzValidateCreation(f *testing.F) {
	f.Add(int8(2), "t", int8(3), "User:alice", "*", int8(3), int8(3))
	f.Add(int8(4), ClusterName, int8(4), "User:*", "10.0.0.1", int8(15), int8(2))
	f.Add(int8(1), "", int8(2), "alice", "", int8(1), int8(1))
	f.Fuzz(func(t *testing.T, rt int8, name string, pt int8, principal, host string, op, perm int8) {
		c := kmsg.CreateACLsRequestCreation{ResourceType: kmsg.ACLResourceType(rt), ResourceName: name, ResourcePatternType: kmsg.ACLResourcePatternType(pt),
			Principal: principal, Host: host, Operation: kmsg.ACLOperation(op), PermissionType: kmsg.ACLPermissionType(perm)}
		err := ValidateCreation(&c)
		rec := &metadata.AccessControlEntryRecord{ID: [16]byte{1}, ResourceType: rt, ResourceName: name, PatternType: pt,
			Principal: principal, Host: host, Operation: op, PermissionType: perm}
		_, _, applyErr := metadata.Empty().Apply(0, []metadata.Record{rec})
		if err == nil && applyErr != nil {
			t.Fatalf("accepted %+v, which the image refuses: %v", c, applyErr)
		}
	})
}
