package controller

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/authz"
	"weir/internal/metadata"
)

// runSecurity runs the transcript commands of ACLs, SCRAM credentials
// and client quotas (testdata/transcripts/acls.txt, scram.txt,
// quotas.txt). Each input line is one item of the request:
//
//	create-acls       ALLOW|DENY <principal> <op> <type>:<pattern>:<name> [host=<h>]
//	delete-acls       [type=] [name=] [pattern=] [principal=] [host=] [op=] [perm=]
//	alter-scram       upsert <user> <mechanism> iterations=<n> password=<p> [salt=<s>]
//	                  delete <user> <mechanism>
//	                  (user "-" is the empty name)
//	describe-scram quiet  one user a line; none for every user
//	alter-quotas [validate-only]
//	                  <type>=<name|<default>>[,...] [set <key>=<value>]... [remove <key>]...
//
// Codes may be written as numbers, to send what a client would not.
func (h *harness) runSecurity(t *testing.T, d *datadriven.TestData, out *strings.Builder) ([]metadata.Record, bool) {
	var lines []string
	if in := strings.TrimSpace(d.Input); in != "" {
		lines = strings.Split(in, "\n")
	}
	switch d.Cmd {
	case "create-acls":
		req := kmsg.NewPtrCreateACLsRequest()
		req.Version = 3
		for _, l := range lines {
			f := strings.Fields(l)
			c := kmsg.NewCreateACLsRequestCreation()
			res := strings.SplitN(f[3], ":", 3)
			c.PermissionType = kmsg.ACLPermissionType(code(t, f[0], authz.ParsePermission))
			c.Principal = f[1]
			c.Operation = kmsg.ACLOperation(code(t, f[2], authz.ParseOperation))
			c.ResourceType = kmsg.ACLResourceType(code(t, res[0], authz.ParseResourceType))
			c.ResourcePatternType = kmsg.ACLResourcePatternType(code(t, res[1], authz.ParsePatternType))
			c.ResourceName, c.Host = res[2], "*"
			if len(f) > 4 {
				c.Host = strings.TrimPrefix(f[4], "host=")
			}
			req.Creations = append(req.Creations, c)
		}
		resp, recs := h.c.CreateAcls(req)
		for i, r := range resp.Results {
			fmt.Fprintf(out, "%s: %s\n", lines[i], errWithMessage(r.ErrorCode, r.ErrorMessage))
		}
		return recs, true
	case "delete-acls":
		req := kmsg.NewPtrDeleteACLsRequest()
		req.Version = 3
		for _, l := range lines {
			f := kmsg.NewDeleteACLsRequestFilter()
			f.ResourceType, f.ResourcePatternType, f.Operation, f.PermissionType = 1, 1, 1, 1
			for _, kv := range strings.Fields(l) {
				k, v, _ := strings.Cut(kv, "=")
				switch k {
				case "type":
					f.ResourceType = kmsg.ACLResourceType(code(t, v, authz.ParseResourceType))
				case "pattern":
					f.ResourcePatternType = kmsg.ACLResourcePatternType(code(t, v, authz.ParsePatternType))
				case "op":
					f.Operation = kmsg.ACLOperation(code(t, v, authz.ParseOperation))
				case "perm":
					f.PermissionType = kmsg.ACLPermissionType(code(t, v, authz.ParsePermission))
				case "name":
					f.ResourceName = &v
				case "principal":
					f.Principal = &v
				case "host":
					f.Host = &v
				default:
					t.Fatalf("filter key %q", k)
				}
			}
			req.Filters = append(req.Filters, f)
		}
		resp, recs := h.c.DeleteAcls(req)
		for i, r := range resp.Results {
			fmt.Fprintf(out, "%s: %s\n", lines[i], errWithMessage(r.ErrorCode, r.ErrorMessage))
			for _, m := range r.MatchingACLs {
				a := authz.FromImage(&metadata.ACL{ResourceType: int8(m.ResourceType), ResourceName: m.ResourceName, PatternType: int8(m.ResourcePatternType),
					Principal: m.Principal, Host: m.Host, Operation: int8(m.Operation), PermissionType: int8(m.PermissionType)})
				fmt.Fprintf(out, "  matched %s\n", &a)
			}
		}
		return recs, true
	case "alter-scram":
		req := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
		for _, l := range lines {
			f := strings.Fields(l)
			if f[1] == "-" { // the empty user name
				f[1] = ""
			}
			mech := mechanismCode(t, f[2])
			switch f[0] {
			case "delete":
				req.Deletions = append(req.Deletions, kmsg.AlterUserSCRAMCredentialsRequestDeletion{Name: f[1], Mechanism: mech})
			case "upsert":
				u := kmsg.NewAlterUserSCRAMCredentialsRequestUpsertion()
				u.Name, u.Mechanism, u.Salt = f[1], mech, []byte("salt-"+f[1])
				password := ""
				for _, kv := range f[3:] {
					k, v, _ := strings.Cut(kv, "=")
					switch k {
					case "iterations":
						n, _ := strconv.Atoi(v)
						u.Iterations = int32(n)
					case "password":
						password = v
					case "salt":
						u.Salt = []byte(v)
					}
				}
				if m, ok := scramMechanism(mech); ok && password != "" {
					u.SaltedPassword, _ = m.SaltedPassword(password, u.Salt, int(max(u.Iterations, 1)))
				}
				req.Upsertions = append(req.Upsertions, u)
			default:
				t.Fatalf("alter-scram %q", f[0])
			}
		}
		resp, recs := h.c.AlterUserScramCredentials(req)
		for _, r := range resp.Results {
			fmt.Fprintf(out, "%s: %s\n", r.User, errWithMessage(r.ErrorCode, r.ErrorMessage))
		}
		return recs, true
	case "alter-quotas":
		req := kmsg.NewPtrAlterClientQuotasRequest()
		req.ValidateOnly = d.HasArg("validate-only")
		for _, l := range lines {
			f := strings.Fields(l)
			e := kmsg.NewAlterClientQuotasRequestEntry()
			for _, part := range strings.Split(f[0], ",") {
				typ, name, _ := strings.Cut(part, "=")
				p := kmsg.AlterClientQuotasRequestEntryEntity{Type: typ}
				if name != "<default>" {
					p.Name = &name
				}
				e.Entity = append(e.Entity, p)
			}
			for i := 1; i+1 < len(f); i += 2 {
				op := kmsg.AlterClientQuotasRequestEntryOp{}
				switch f[i] {
				case "set":
					k, v, _ := strings.Cut(f[i+1], "=")
					op.Key = k
					op.Value, _ = strconv.ParseFloat(v, 64)
				case "remove":
					op.Key, op.Remove = f[i+1], true
				default:
					t.Fatalf("alter-quotas op %q", f[i])
				}
				e.Ops = append(e.Ops, op)
			}
			req.Entries = append(req.Entries, e)
		}
		resp, recs := h.c.AlterClientQuotas(req)
		for _, r := range resp.Entries {
			var parts []string
			for _, p := range r.Entity {
				name := "<default>"
				if p.Name != nil {
					name = *p.Name
				}
				parts = append(parts, p.Type+"="+name)
			}
			fmt.Fprintf(out, "%s: %s\n", strings.Join(parts, ","), errWithMessage(r.ErrorCode, r.ErrorMessage))
		}
		return recs, true
	case "describe-scram":
		req := kmsg.NewPtrDescribeUserSCRAMCredentialsRequest()
		for _, l := range lines {
			req.Users = append(req.Users, kmsg.DescribeUserSCRAMCredentialsRequestUser{Name: strings.TrimSpace(l)})
		}
		resp := DescribeUserScramCredentials(h.committed, req)
		for _, r := range resp.Results {
			fmt.Fprintf(out, "%s: %s", r.User, errWithMessage(r.ErrorCode, r.ErrorMessage))
			for _, c := range r.CredentialInfos {
				fmt.Fprintf(out, " %s/%d", metadata.ScramMechanismName(c.Mechanism), c.Iterations)
			}
			out.WriteByte('\n')
		}
		return nil, true
	case "acls":
		for _, ma := range h.c.Image().ACLs().All() {
			a := authz.FromImage(ma)
			fmt.Fprintf(out, "%s\n", &a)
		}
		if out.Len() == 0 {
			out.WriteString("none\n")
		}
		return nil, true
	}
	return nil, false
}

func code[T ~int8](t *testing.T, s string, parse func(string) (T, error)) int8 {
	if n, err := strconv.Atoi(s); err == nil {
		return int8(n)
	}
	v, err := parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return int8(v)
}

func mechanismCode(t *testing.T, s string) int8 {
	switch s {
	case "SCRAM-SHA-256":
		return metadata.ScramSHA256
	case "SCRAM-SHA-512":
		return metadata.ScramSHA512
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatalf("mechanism %q", s)
	}
	return int8(n)
}

// formatSecurityRecord formats the records of ACLs, credentials and
// quotas without what is random (ACL ids) or long (keys).
func formatSecurityRecord(before *metadata.Image, r metadata.Record) (string, bool) {
	switch r := r.(type) {
	case *metadata.AccessControlEntryRecord:
		a := authz.FromImage((*metadata.ACL)(r))
		return "acl " + a.String(), true
	case *metadata.RemoveAccessControlEntryRecord:
		if ma, ok := before.ACLs().Get(r.ID); ok {
			a := authz.FromImage(ma)
			return "remove-acl " + a.String(), true
		}
	case *metadata.UserScramCredentialRecord:
		return fmt.Sprintf("scram-credential user=%s mechanism=%s iterations=%d salt=%q stored-key=%d bytes server-key=%d bytes",
			r.Name, metadata.ScramMechanismName(r.Mechanism), r.Iterations, r.Salt, len(r.StoredKey), len(r.ServerKey)), true
	}
	return "", false
}

// TestSecurityNothingPendingOnErrors: a decision that refuses
// everything returns no records and leaves nothing in flight.
func TestSecurityNothingPendingOnErrors(t *testing.T) {
	h := cluster(t, 1)
	req := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
	req.Deletions = append(req.Deletions, kmsg.AlterUserSCRAMCredentialsRequestDeletion{Name: "nobody", Mechanism: 1})
	resp, recs := h.c.AlterUserScramCredentials(req)
	if len(recs) != 0 || h.c.Pending() != 0 || resp.Results[0].ErrorCode != kerr.ResourceNotFound.Code {
		t.Fatalf("recs %v pending %d results %+v", recs, h.c.Pending(), resp.Results)
	}
}

// TestScramCredentialAsConfigured: the credential an upsertion stores is
// the one a SCRAM server derives from the password (what kafka-configs
// --add-config 'SCRAM-SHA-256=[password=...]' means).
func TestScramCredentialAsConfigured(t *testing.T) {
	for _, mech := range []int8{metadata.ScramSHA256, metadata.ScramSHA512} {
		h := cluster(t, 1)
		m, _ := scramMechanism(mech)
		salt := []byte("0123456789abcdef")
		salted, err := m.SaltedPassword("alice-secret", salt, 8192)
		if err != nil {
			t.Fatal(err)
		}
		req := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
		req.Upsertions = append(req.Upsertions, kmsg.AlterUserSCRAMCredentialsRequestUpsertion{
			Name: "alice", Mechanism: mech, Iterations: 8192, Salt: salt, SaltedPassword: salted})
		resp, recs := h.c.AlterUserScramCredentials(req)
		if len(recs) != 1 || resp.Results[0].ErrorCode != 0 {
			t.Fatalf("%s: %+v, %d records", m.Name(), resp.Results, len(recs))
		}
		want, err := m.NewCredential("alice-secret", salt, 8192)
		if err != nil {
			t.Fatal(err)
		}
		r := recs[0].(*metadata.UserScramCredentialRecord)
		if !bytes.Equal(r.StoredKey, want.StoredKey) || !bytes.Equal(r.ServerKey, want.ServerKey) || !bytes.Equal(r.Salt, salt) || int(r.Iterations) != want.Iterations {
			t.Fatalf("%s: stored %x/%x, want %x/%x", m.Name(), r.StoredKey, r.ServerKey, want.StoredKey, want.ServerKey)
		}
	}
}
