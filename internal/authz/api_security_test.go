package authz

import (
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/metadata"
)

func TestDescribeACLs(t *testing.T) {
	var recs []metadata.Record
	for i, acl := range fuzzACLs() {
		recs = append(recs, &metadata.AccessControlEntryRecord{ID: [16]byte{byte(10 - i)}, ResourceType: int8(acl.ResourceType),
			ResourceName: acl.ResourceName, PatternType: int8(acl.PatternType), Principal: acl.Principal.String(), Host: acl.Host,
			Operation: int8(acl.Operation), PermissionType: int8(acl.Permission)})
	}
	img, _, err := metadata.Empty().Apply(0, recs)
	if err != nil {
		t.Fatal(err)
	}
	describe := func(rt ResourceType, name *string, pt PatternType, principal *string) string {
		req := kmsg.NewPtrDescribeACLsRequest()
		req.Version = 2
		req.ResourceType, req.ResourceName, req.ResourcePatternType, req.Principal = kmsg.ACLResourceType(rt), name, kmsg.ACLResourcePatternType(pt), principal
		req.Operation, req.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
		resp := DescribeACLs(img.ACLs(), req)
		if resp.ErrorCode != 0 {
			return kerr.ErrorForCode(resp.ErrorCode).Error()
		}
		var out []string
		for _, r := range resp.Resources {
			var entries []string
			for _, e := range r.ACLs {
				entries = append(entries, e.Principal+"/"+Operation(e.Operation).String()+"/"+Permission(e.PermissionType).String())
			}
			out = append(out, r.ResourceType.String()+":"+r.ResourcePatternType.String()+":"+r.ResourceName+"="+strings.Join(entries, ","))
		}
		return strings.Join(out, " ")
	}
	u, t1, alice := "u", "t", "User:alice"
	for _, tt := range []struct {
		name      string
		rt        ResourceType
		res       *string
		pt        PatternType
		principal *string
		want      string
	}{
		{"all, grouped and sorted", ResourceAny, nil, PatternAny, nil,
			"TOPIC:LITERAL:t=User:alice/READ/ALLOW TOPIC:LITERAL:u=User:alice/DESCRIBE/DENY TOPIC:PREFIXED:u=User:alice/WRITE/ALLOW " +
				"GROUP:LITERAL:*=User:*/READ/ALLOW CLUSTER:LITERAL:kafka-cluster=User:alice/DESCRIBE/ALLOW TRANSACTIONAL_ID:PREFIXED:tx=Group:ops/TWO_PHASE_COMMIT/ALLOW"},
		{"one resource, any pattern", ResourceTopic, &u, PatternAny, nil, "TOPIC:LITERAL:u=User:alice/DESCRIBE/DENY TOPIC:PREFIXED:u=User:alice/WRITE/ALLOW"},
		{"match", ResourceTopic, &t1, PatternMatch, nil, "TOPIC:LITERAL:t=User:alice/READ/ALLOW"},
		{"principal", ResourceAny, nil, PatternAny, &alice, "TOPIC:LITERAL:t=User:alice/READ/ALLOW TOPIC:LITERAL:u=User:alice/DESCRIBE/DENY " +
			"TOPIC:PREFIXED:u=User:alice/WRITE/ALLOW CLUSTER:LITERAL:kafka-cluster=User:alice/DESCRIBE/ALLOW"},
		{"none", ResourceUser, nil, PatternAny, nil, ""},
		{"unknown pattern", ResourceAny, nil, PatternUnknown, nil, kerr.InvalidRequest.Error()},
	} {
		if got := describe(tt.rt, tt.res, tt.pt, tt.principal); got != tt.want {
			t.Errorf("%s:\n got %s\nwant %s", tt.name, got, tt.want)
		}
	}
}

// Without an authorizer the ACL admin APIs answer SECURITY_DISABLED;
// with one, a principal without the cluster operation gets
// CLUSTER_AUTHORIZATION_FAILED first.
func TestACLAdminWithoutAuthorizer(t *testing.T) {
	off := NewChecker(nil, &Config{}, alice)
	on := NewChecker(NewIndex(nil), &Config{Enabled: true}, alice)
	create := &kmsg.CreateACLsRequest{Version: 3, Creations: make([]kmsg.CreateACLsRequestCreation, 2)}
	del := &kmsg.DeleteACLsRequest{Version: 3, Filters: make([]kmsg.DeleteACLsRequestFilter, 1)}
	desc := &kmsg.DescribeACLsRequest{Version: 3}
	for _, tt := range []struct {
		c    *Checker
		want int16
	}{{off, kerr.SecurityDisabled.Code}, {on, kerr.ClusterAuthorizationFailed.Code}} {
		for _, req := range []kmsg.Request{create, del, desc} {
			v := Authorize(tt.c, Env{}, req)
			codes := errorCodes(v.Reject)
			if v.Reject == nil || len(codes) == 0 || codes[0] != tt.want {
				t.Errorf("%s: %v, want %d everywhere", kmsg.NameForKey(req.Key()), codes, tt.want)
			}
			for _, c := range codes {
				if c != tt.want {
					t.Errorf("%s: code %d, want %d", kmsg.NameForKey(req.Key()), c, tt.want)
				}
			}
		}
	}
}
