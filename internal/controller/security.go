package controller

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/auth/scram"
	"weir/internal/authz"
	"weir/internal/metadata"
	"weir/internal/quota"
)

// CreateAcls handles CreateAcls (API 30): each valid ACL gets a random
// id and one record, all in one batch. An ACL equal to one that exists,
// or to an earlier one of the request, succeeds without a record, as in
// Kafka. An invalid one gets INVALID_REQUEST with Kafka's message
// (authz.ValidateCreation). Whether the caller may create ACLs
// (CLUSTER ALTER) and whether an authorizer is configured is the
// broker's to check.
func (c *Controller) CreateAcls(req *kmsg.CreateACLsRequest) (*kmsg.CreateACLsResponse, []metadata.Record) {
	resp := kmsg.NewPtrCreateACLsResponse()
	resp.Version = req.Version
	t := c.begin()
	for i := range req.Creations {
		cr := &req.Creations[i]
		r := kmsg.NewCreateACLsResponseResult()
		if err := authz.ValidateCreation(cr); err != nil {
			r.ErrorCode, r.ErrorMessage = codeAndMessage(apiErr(kerr.InvalidRequest, "%s", err.Error()))
			resp.Results = append(resp.Results, r)
			continue
		}
		rec := &metadata.AccessControlEntryRecord{ResourceType: int8(cr.ResourceType), ResourceName: cr.ResourceName,
			PatternType: int8(cr.ResourcePatternType), Principal: cr.Principal, Host: cr.Host,
			Operation: int8(cr.Operation), PermissionType: int8(cr.PermissionType)}
		if _, exists := t.b.ACLs().Find((*metadata.ACL)(rec)); !exists {
			rec.ID = t.newACLID()
			t.add(rec)
		}
		resp.Results = append(resp.Results, r)
	}
	recs, err := t.commit()
	if err != nil {
		dropped(resp.Results, err, func(r *kmsg.CreateACLsResponseResult, code int16, msg *string) {
			if r.ErrorCode == 0 {
				r.ErrorCode, r.ErrorMessage = code, msg
			}
		})
		return resp, nil
	}
	if len(recs) > 0 {
		c.log.Info("acls created", "acls", len(recs))
	}
	return resp, recs
}

func (t *txn) newACLID() [16]byte {
	for {
		id := t.newTopicID()
		if _, taken := t.b.ACLs().Get(id); !taken {
			return id
		}
	}
}

// maxACLRemovals bounds the ACLs one DeleteAcls removes, as Kafka's
// controller does.
const maxACLRemovals = 10000

// DeleteAcls handles DeleteAcls (API 31): each filter removes every ACL
// it matches (authz.Filter, Kafka's matching) and lists them; an ACL two
// filters match is listed by both and removed once. A filter with
// unknown codes gets INVALID_REQUEST. All removals are one batch.
func (c *Controller) DeleteAcls(req *kmsg.DeleteACLsRequest) (*kmsg.DeleteACLsResponse, []metadata.Record) {
	resp := kmsg.NewPtrDeleteACLsResponse()
	resp.Version = req.Version
	t := c.begin()
	all := t.base.ACLs().All()
	removed := map[[16]byte]bool{}
	for i := range req.Filters {
		f := authz.DeleteFilter(&req.Filters[i])
		r := kmsg.NewDeleteACLsResponseResult()
		if err := f.Validate(); err != nil {
			r.ErrorCode, r.ErrorMessage = codeAndMessage(apiErr(kerr.InvalidRequest, "%s", err.Error()))
			resp.Results = append(resp.Results, r)
			continue
		}
		var matched []*metadata.ACL
		fresh := 0
		for _, ma := range all {
			if a := authz.FromImage(ma); f.Matches(&a) {
				matched = append(matched, ma)
				if !removed[ma.ID] {
					fresh++
				}
			}
		}
		if len(removed)+fresh > maxACLRemovals {
			r.ErrorCode, r.ErrorMessage = codeAndMessage(apiErr(kerr.UnknownServerError, "Cannot remove more than %d acls in a single delete operation.", maxACLRemovals))
			resp.Results = append(resp.Results, r)
			continue
		}
		for _, ma := range matched {
			m := kmsg.NewDeleteACLsResponseResultMatchingACL()
			m.ResourceType, m.ResourceName = kmsg.ACLResourceType(ma.ResourceType), ma.ResourceName
			m.ResourcePatternType = kmsg.ACLResourcePatternType(ma.PatternType)
			m.Principal, m.Host = ma.Principal, ma.Host
			m.Operation, m.PermissionType = kmsg.ACLOperation(ma.Operation), kmsg.ACLPermissionType(ma.PermissionType)
			r.MatchingACLs = append(r.MatchingACLs, m)
			if !removed[ma.ID] {
				removed[ma.ID] = true
				t.add(&metadata.RemoveAccessControlEntryRecord{ID: ma.ID})
			}
		}
		resp.Results = append(resp.Results, r)
	}
	recs, err := t.commit()
	if err != nil {
		dropped(resp.Results, err, func(r *kmsg.DeleteACLsResponseResult, code int16, msg *string) {
			r.ErrorCode, r.ErrorMessage, r.MatchingACLs = code, msg, nil
		})
		return resp, nil
	}
	if len(recs) > 0 {
		c.log.Info("acls deleted", "acls", len(recs))
	}
	return resp, recs
}

// scramMechanism is a mechanism of AlterUserScramCredentials' numbering.
func scramMechanism(m int8) (scram.Mechanism, bool) {
	return scram.ByName(metadata.ScramMechanismName(m))
}

// AlterUserScramCredentials handles AlterUserScramCredentials (API 51)
// as Kafka's controller does: a user named twice in the request
// (deletion or upsertion, any mechanism) gets DUPLICATE_RESOURCE and
// nothing changes for it; an empty user name or too few (under 4096) or
// too many (over 16384) iterations UNACCEPTABLE_CREDENTIAL; an unknown
// mechanism UNSUPPORTED_SASL_MECHANISM; deleting a credential that does
// not exist RESOURCE_NOT_FOUND. An upsertion stores the salt, the
// iterations and the keys derived from the salted password the client
// computed, never the password. Results list the successes (deletions,
// then upsertions, in request order), then the failures.
//
// A salted password that is not the mechanism hash's size (32 or 64
// bytes) is UNACCEPTABLE_CREDENTIAL here; Kafka derives keys from any
// length (an empty one fails with UNKNOWN_SERVER_ERROR). Clients always
// send the hash's size.
func (c *Controller) AlterUserScramCredentials(req *kmsg.AlterUserSCRAMCredentialsRequest) (*kmsg.AlterUserSCRAMCredentialsResponse, []metadata.Record) {
	resp := kmsg.NewPtrAlterUserSCRAMCredentialsResponse()
	resp.Version = req.Version
	type failure struct {
		user string
		err  error
	}
	var failures []failure
	failed := map[string]int{} // user -> index in failures
	fail := func(user string, err error) {
		if i, ok := failed[user]; ok {
			failures[i].err = err
			return
		}
		failed[user] = len(failures)
		failures = append(failures, failure{user, err})
	}
	duplicate := apiErr(kerr.DuplicateResource, "A user credential cannot be altered twice in the same request")
	named := map[string]int{}
	for _, d := range req.Deletions {
		named[d.Name]++
	}
	for _, u := range req.Upsertions {
		named[u.Name]++
	}
	validName := func(user string, m int8) error {
		switch {
		case user == "":
			return apiErr(kerr.UnacceptableCredential, "Username must not be empty")
		case metadata.ScramMechanismName(m) == "":
			return apiErr(kerr.UnsupportedSaslMechanism, "Unknown SCRAM mechanism")
		}
		return nil
	}
	t := c.begin()
	var ok []string
	for _, d := range req.Deletions {
		if named[d.Name] > 1 {
			fail(d.Name, duplicate)
			continue
		}
		if err := validName(d.Name, d.Mechanism); err != nil {
			fail(d.Name, err)
			continue
		}
		if _, exists := t.base.ScramCredential(d.Name, d.Mechanism); !exists {
			fail(d.Name, apiErr(kerr.ResourceNotFound, "Attempt to delete a user credential that does not exist"))
			continue
		}
		t.add(&metadata.RemoveUserScramCredentialRecord{Name: d.Name, Mechanism: d.Mechanism})
		ok = append(ok, d.Name)
	}
	for _, u := range req.Upsertions {
		if named[u.Name] > 1 {
			fail(u.Name, duplicate)
			continue
		}
		var err error
		switch err = validName(u.Name, u.Mechanism); {
		case err != nil:
		case u.Iterations < metadata.ScramMinIterations:
			err = apiErr(kerr.UnacceptableCredential, "Too few iterations")
		case u.Iterations > metadata.ScramMaxIterations:
			err = apiErr(kerr.UnacceptableCredential, "Too many iterations")
		}
		if err != nil {
			fail(u.Name, err)
			continue
		}
		m, _ := scramMechanism(u.Mechanism)
		cred, err := m.CredentialFromSaltedPassword(u.SaltedPassword, u.Salt, int(u.Iterations))
		if err != nil {
			fail(u.Name, apiErr(kerr.UnacceptableCredential, "The salted password is not a %s hash", m.Name()))
			continue
		}
		t.add(&metadata.UserScramCredentialRecord{Name: u.Name, Mechanism: u.Mechanism, Salt: cred.Salt,
			StoredKey: cred.StoredKey, ServerKey: cred.ServerKey, Iterations: u.Iterations})
		ok = append(ok, u.Name)
	}
	recs, err := t.commit()
	if err != nil {
		for _, user := range ok {
			fail(user, err)
		}
		ok, recs = nil, nil
	}
	for _, user := range ok {
		r := kmsg.NewAlterUserSCRAMCredentialsResponseResult()
		r.User = user
		resp.Results = append(resp.Results, r)
	}
	for _, f := range failures {
		r := kmsg.NewAlterUserSCRAMCredentialsResponseResult()
		r.User = f.user
		r.ErrorCode, r.ErrorMessage = codeAndMessage(f.err)
		resp.Results = append(resp.Results, r)
	}
	if len(recs) > 0 {
		c.log.Info("scram credentials altered", "records", len(recs))
	}
	return resp, recs
}

// AlterClientQuotas handles AlterClientQuotas (API 49): each entry's
// entity and values are checked as Kafka does (quota.ParseAlteration);
// a valid entry records its changed values and its removals of set keys,
// an invalid one changes nothing and gets INVALID_REQUEST. An entity
// named by two entries gets "Ignoring duplicate entity" for both, and
// neither changes it (Kafka answers the same but keeps the first one's
// changes). One result per entity, in request order; with ValidateOnly
// nothing is written.
func (c *Controller) AlterClientQuotas(req *kmsg.AlterClientQuotasRequest) (*kmsg.AlterClientQuotasResponse, []metadata.Record) {
	resp := kmsg.NewPtrAlterClientQuotasResponse()
	resp.Version = req.Version
	type result struct {
		entry *kmsg.AlterClientQuotasRequestEntry
		alt   quota.Alteration
		err   *quota.Error
	}
	var results []*result
	byEntity := map[metadata.QuotaEntity]*result{}
	for i := range req.Entries {
		e := &req.Entries[i]
		alt, err := quota.ParseAlteration(e)
		if prev, dup := byEntity[alt.Entity]; dup && metadata.ValidQuotaEntity(alt.Entity) {
			prev.err = &quota.Error{Code: kerr.InvalidRequest, Message: "Ignoring duplicate entity " + quota.EntityString(alt.Entity)}
			continue
		}
		r := &result{entry: e, alt: alt, err: err}
		if metadata.ValidQuotaEntity(alt.Entity) {
			byEntity[alt.Entity] = r
		}
		results = append(results, r)
	}
	t := c.begin()
	for _, r := range results {
		if r.err == nil {
			for _, rec := range r.alt.Records(t.b.ClientQuotas().Get(r.alt.Entity)) {
				t.add(rec)
			}
		}
	}
	var recs []metadata.Record
	var err error
	if !req.ValidateOnly {
		recs, err = t.commit()
	}
	for _, r := range results {
		out := kmsg.NewAlterClientQuotasResponseEntry()
		for _, p := range r.entry.Entity {
			ee := kmsg.NewAlterClientQuotasResponseEntryEntity()
			ee.Type, ee.Name = p.Type, p.Name
			out.Entity = append(out.Entity, ee)
		}
		switch {
		case r.err != nil:
			out.ErrorCode, out.ErrorMessage = r.err.Code.Code, &r.err.Message
		case err != nil:
			out.ErrorCode, out.ErrorMessage = codeAndMessage(err)
		}
		resp.Entries = append(resp.Entries, out)
	}
	if len(recs) > 0 {
		c.log.Info("client quotas altered", "records", len(recs))
	}
	return resp, recs
}

// DescribeUserScramCredentials answers DescribeUserScramCredentials (API
// 50) from an image, as any Kafka broker does from its metadata: the
// mechanisms and iterations of each user named (every user when none
// is), RESOURCE_NOT_FOUND for a user without credentials and
// DUPLICATE_RESOURCE for a user named twice. Salts and keys are never
// shown. It needs no controller: a broker calls it with its own image.
func DescribeUserScramCredentials(img *metadata.Image, req *kmsg.DescribeUserSCRAMCredentialsRequest) *kmsg.DescribeUserSCRAMCredentialsResponse {
	resp := kmsg.NewPtrDescribeUserSCRAMCredentialsResponse()
	resp.Version = req.Version
	creds := map[string][]kmsg.DescribeUserSCRAMCredentialsResponseResultCredentialInfo{}
	var users []string
	img.EachScramCredential(func(user string, m int8, c metadata.ScramCredential) bool {
		if _, seen := creds[user]; !seen {
			users = append(users, user)
		}
		creds[user] = append(creds[user], kmsg.DescribeUserSCRAMCredentialsResponseResultCredentialInfo{Mechanism: m, Iterations: c.Iterations})
		return true
	})
	named := map[string]int{}
	if len(req.Users) > 0 {
		users = users[:0]
		for _, u := range req.Users {
			if named[u.Name]++; named[u.Name] == 1 {
				users = append(users, u.Name)
			}
		}
	}
	for _, user := range users {
		r := kmsg.NewDescribeUserSCRAMCredentialsResponseResult()
		r.User = user
		switch c, ok := creds[user]; {
		case named[user] > 1:
			r.ErrorCode, r.ErrorMessage = codeAndMessage(apiErr(kerr.DuplicateResource,
				"Cannot describe SCRAM credentials for the same user twice in a single request: %s", user))
		case !ok:
			r.ErrorCode, r.ErrorMessage = codeAndMessage(apiErr(kerr.ResourceNotFound,
				"Attempt to describe a user credential that does not exist: %s", user))
		default:
			r.CredentialInfos = c
		}
		resp.Results = append(resp.Results, r)
	}
	return resp
}
