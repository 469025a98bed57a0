package kraft

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/controller"
	"weir/internal/metadata"
)

// TestDecideSecurityRequests: the controller decides CreateAcls,
// DeleteAcls, AlterClientQuotas and AlterUserScramCredentials, and their
// records apply.
func TestDecideSecurityRequests(t *testing.T) {
	img, _, err := metadata.Empty().Apply(1, []metadata.Record{brokerRec(1)})
	if err != nil {
		t.Fatal(err)
	}
	c := controller.New(controller.Config{}, img)
	create := kmsg.NewPtrCreateACLsRequest()
	cr := kmsg.NewCreateACLsRequestCreation()
	cr.ResourceType, cr.ResourceName, cr.Principal, cr.Host, cr.Operation, cr.PermissionType = 2, "t", "User:a", "*", 3, 3
	create.Creations = append(create.Creations, cr)
	quotas := kmsg.NewPtrAlterClientQuotasRequest()
	e := kmsg.NewAlterClientQuotasRequestEntry()
	e.Entity = []kmsg.AlterClientQuotasRequestEntryEntity{{Type: "user", Name: kmsg.StringPtr("a")}}
	e.Ops = []kmsg.AlterClientQuotasRequestEntryOp{{Key: "producer_byte_rate", Value: 1024}}
	quotas.Entries = append(quotas.Entries, e)
	scram := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
	scram.Upsertions = append(scram.Upsertions, kmsg.AlterUserSCRAMCredentialsRequestUpsertion{Name: "a", Mechanism: 1, Iterations: 4096, Salt: []byte("s"), SaltedPassword: make([]byte, 32)})
	deleteAll := kmsg.NewPtrDeleteACLsRequest()
	f := kmsg.NewDeleteACLsRequestFilter()
	f.ResourceType, f.ResourcePatternType, f.Operation, f.PermissionType = 1, 1, 1, 1
	deleteAll.Filters = append(deleteAll.Filters, f)
	for i, req := range []kmsg.Request{create, quotas, scram, deleteAll} {
		resp, recs, err := decide(c, req)
		if err != nil || resp.Key() != req.Key() || len(recs) != 1 {
			t.Fatalf("%s: %v, %d records, %v", kmsg.NameForKey(req.Key()), resp, len(recs), err)
		}
		if img, _, err = img.Apply(int64(2+i), recs); err != nil {
			t.Fatalf("%s: %v", kmsg.NameForKey(req.Key()), err)
		}
	}
	if img.ACLs().Len() != 0 || img.ClientQuotas().Len() != 1 {
		t.Fatalf("acls %d quotas %d", img.ACLs().Len(), img.ClientQuotas().Len())
	}
	if _, ok := img.ScramCredential("a", metadata.ScramSHA256); !ok {
		t.Fatal("no credential")
	}
}
