package authz

import (
	"cmp"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/metadata"
)

// Kafka's messages when no authorizer is configured.
var (
	noAuthorizerDescribe = "No Authorizer is configured on the broker"
	noAuthorizer         = "No Authorizer is configured."
)

// DescribeAcls (API 29): DESCRIBE on the cluster, else
// CLUSTER_AUTHORIZATION_FAILED; without an authorizer,
// SECURITY_DISABLED. The handler answers with DescribeACLs.
func DescribeAcls(c *Checker, _ Env, req *kmsg.DescribeACLsRequest) *Outcome[*kmsg.DescribeACLsRequest, *kmsg.DescribeACLsResponse] {
	var code int16
	var msg *string
	switch {
	case !c.AllowedCluster(OpDescribe):
		code, msg = errCluster.Code, message(errCluster)
	case !c.Enabled():
		code, msg = kerr.SecurityDisabled.Code, &noAuthorizerDescribe
	default:
		return serve[*kmsg.DescribeACLsRequest, *kmsg.DescribeACLsResponse](req)
	}
	resp := kmsg.NewPtrDescribeACLsResponse()
	resp.ErrorCode, resp.ErrorMessage = code, msg
	return reject(req, resp)
}

// aclAdminDenial is the error of a CreateAcls or DeleteAcls: no ALTER on
// the cluster, or no authorizer.
func aclAdminDenial(c *Checker) (int16, *string) {
	switch {
	case !c.AllowedCluster(OpAlter):
		return errCluster.Code, message(errCluster)
	case !c.Enabled():
		return kerr.SecurityDisabled.Code, &noAuthorizer
	}
	return 0, nil
}

// CreateAcls (API 30): ALTER on the cluster, else every ACL answers
// CLUSTER_AUTHORIZATION_FAILED; without an authorizer,
// SECURITY_DISABLED. Served by the controller (controller.CreateAcls).
func CreateAcls(c *Checker, _ Env, req *kmsg.CreateACLsRequest) *Outcome[*kmsg.CreateACLsRequest, *kmsg.CreateACLsResponse] {
	code, msg := aclAdminDenial(c)
	if code == 0 {
		return serve[*kmsg.CreateACLsRequest, *kmsg.CreateACLsResponse](req)
	}
	resp := kmsg.NewPtrCreateACLsResponse()
	for range req.Creations {
		r := kmsg.NewCreateACLsResponseResult()
		r.ErrorCode, r.ErrorMessage = code, msg
		resp.Results = append(resp.Results, r)
	}
	return reject(req, resp)
}

// DeleteAcls (API 31): as CreateAcls, per filter. Served by the
// controller (controller.DeleteAcls).
func DeleteAcls(c *Checker, _ Env, req *kmsg.DeleteACLsRequest) *Outcome[*kmsg.DeleteACLsRequest, *kmsg.DeleteACLsResponse] {
	code, msg := aclAdminDenial(c)
	if code == 0 {
		return serve[*kmsg.DeleteACLsRequest, *kmsg.DeleteACLsResponse](req)
	}
	resp := kmsg.NewPtrDeleteACLsResponse()
	for range req.Filters {
		r := kmsg.NewDeleteACLsResponseResult()
		r.ErrorCode, r.ErrorMessage = code, msg
		resp.Results = append(resp.Results, r)
	}
	return reject(req, resp)
}

// DescribeACLs answers DescribeAcls from an image's ACLs: the ACLs the
// request's filter matches, grouped by resource pattern (type, name,
// pattern type), in that order; a filter with an unknown code answers
// INVALID_REQUEST.
func DescribeACLs(set *metadata.ACLs, req *kmsg.DescribeACLsRequest) *kmsg.DescribeACLsResponse {
	resp := kmsg.NewPtrDescribeACLsResponse()
	resp.Version = req.Version
	f := DescribeFilter(req)
	if err := f.Validate(); err != nil {
		msg := err.Error()
		resp.ErrorCode, resp.ErrorMessage = kerr.InvalidRequest.Code, &msg
		return resp
	}
	var matched []ACL
	for _, ma := range set.All() {
		if a := FromImage(ma); f.Matches(&a) {
			matched = append(matched, a)
		}
	}
	slices.SortFunc(matched, func(a, b ACL) int {
		return cmp.Or(cmp.Compare(a.ResourceType, b.ResourceType), strings.Compare(a.ResourceName, b.ResourceName),
			cmp.Compare(a.PatternType, b.PatternType), strings.Compare(a.Principal.String(), b.Principal.String()),
			strings.Compare(a.Host, b.Host), cmp.Compare(a.Operation, b.Operation), cmp.Compare(a.Permission, b.Permission))
	})
	for _, a := range matched {
		n := len(resp.Resources)
		if n == 0 || resp.Resources[n-1].ResourceType != kmsg.ACLResourceType(a.ResourceType) ||
			resp.Resources[n-1].ResourceName != a.ResourceName || resp.Resources[n-1].ResourcePatternType != kmsg.ACLResourcePatternType(a.PatternType) {
			r := kmsg.NewDescribeACLsResponseResource()
			r.ResourceType, r.ResourceName, r.ResourcePatternType = kmsg.ACLResourceType(a.ResourceType), a.ResourceName, kmsg.ACLResourcePatternType(a.PatternType)
			resp.Resources = append(resp.Resources, r)
			n++
		}
		e := kmsg.NewDescribeACLsResponseResourceACL()
		e.Principal, e.Host = a.Principal.String(), a.Host
		e.Operation, e.PermissionType = kmsg.ACLOperation(a.Operation), kmsg.ACLPermissionType(a.Permission)
		resp.Resources[n-1].ACLs = append(resp.Resources[n-1].ACLs, e)
	}
	return resp
}

// DescribeClientQuotas (API 48): DESCRIBE_CONFIGS on the cluster, else
// CLUSTER_AUTHORIZATION_FAILED. The handler answers with quota.Describe.
func DescribeClientQuotas(c *Checker, _ Env, req *kmsg.DescribeClientQuotasRequest) *Outcome[*kmsg.DescribeClientQuotasRequest, *kmsg.DescribeClientQuotasResponse] {
	return clusterOnly(c, req, OpDescribeConfigs, func(r *kmsg.DescribeClientQuotasResponse) {
		r.ErrorCode, r.ErrorMessage = errCluster.Code, message(errCluster)
	})
}

// AlterClientQuotas (API 49): ALTER_CONFIGS on the cluster, else every
// entity answers CLUSTER_AUTHORIZATION_FAILED. Served by the controller
// (controller.AlterClientQuotas).
func AlterClientQuotas(c *Checker, _ Env, req *kmsg.AlterClientQuotasRequest) *Outcome[*kmsg.AlterClientQuotasRequest, *kmsg.AlterClientQuotasResponse] {
	return clusterOnly(c, req, OpAlterConfigs, func(r *kmsg.AlterClientQuotasResponse) {
		for _, e := range req.Entries {
			out := kmsg.NewAlterClientQuotasResponseEntry()
			out.ErrorCode, out.ErrorMessage = errCluster.Code, message(errCluster)
			for _, p := range e.Entity {
				out.Entity = append(out.Entity, kmsg.AlterClientQuotasResponseEntryEntity{Type: p.Type, Name: p.Name})
			}
			r.Entries = append(r.Entries, out)
		}
	})
}

// DescribeUserScramCredentials (API 50): DESCRIBE on the cluster, else
// CLUSTER_AUTHORIZATION_FAILED. The handler answers with
// controller.DescribeUserScramCredentials.
func DescribeUserScramCredentials(c *Checker, _ Env, req *kmsg.DescribeUserSCRAMCredentialsRequest) *Outcome[*kmsg.DescribeUserSCRAMCredentialsRequest, *kmsg.DescribeUserSCRAMCredentialsResponse] {
	return clusterOnly(c, req, OpDescribe, func(r *kmsg.DescribeUserSCRAMCredentialsResponse) {
		r.ErrorCode, r.ErrorMessage = errCluster.Code, message(errCluster)
	})
}

// AlterUserScramCredentials (API 51): ALTER on the cluster, else every
// user answers CLUSTER_AUTHORIZATION_FAILED. Served by the controller
// (controller.AlterUserScramCredentials).
func AlterUserScramCredentials(c *Checker, _ Env, req *kmsg.AlterUserSCRAMCredentialsRequest) *Outcome[*kmsg.AlterUserSCRAMCredentialsRequest, *kmsg.AlterUserSCRAMCredentialsResponse] {
	return clusterOnly(c, req, OpAlter, func(r *kmsg.AlterUserSCRAMCredentialsResponse) {
		add := func(user string) {
			out := kmsg.NewAlterUserSCRAMCredentialsResponseResult()
			out.User, out.ErrorCode, out.ErrorMessage = user, errCluster.Code, message(errCluster)
			r.Results = append(r.Results, out)
		}
		for _, d := range req.Deletions {
			add(d.Name)
		}
		for _, u := range req.Upsertions {
			add(u.Name)
		}
	})
}
