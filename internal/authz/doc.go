// Package authz is weir's authorizer: Kafka's StandardAuthorizer as a
// pure decision function over the ACLs of the metadata image, and what
// each Kafka API checks with it.
//
// # What it owns
//
//   - The codes of Kafka's ACL model (codes.go): resource types (topic,
//     group, cluster, transactional id, delegation token, user), pattern
//     types (LITERAL, PREFIXED, and in filters ANY and MATCH), operations
//     and permissions, with Kafka's names and wire codes; principals
//     ("User:alice") and client hosts as Kafka's ACLs spell them
//     (principal.go).
//   - The broker configs authorizer.class.name (Kafka's
//     StandardAuthorizer class, or nothing), super.users and
//     allow.everyone.if.no.acl.found (config.go).
//   - Decisions (decide.go): Decide, DecideByResourceType and the
//     authorized-operations bitfields, as pure functions of an Index of
//     ACLs, the Config, the Session and the action. Deny wins; an ALLOW
//     for READ, WRITE, DELETE or ALTER implies DESCRIBE and one for
//     ALTER_CONFIGS implies DESCRIBE_CONFIGS; an operation on a resource
//     that no ACL names is denied unless allow.everyone.if.no.acl.found.
//     testdata/decide holds transcripts of them.
//   - ACL filters and creations as DescribeAcls, CreateAcls and
//     DeleteAcls carry them: validation with Kafka's messages and
//     Kafka's matching (filter.go). The controller decides CreateAcls and
//     DeleteAcls with them; DescribeACLs answers DescribeAcls from the
//     image (api_security.go).
//   - What every API checks (rules.go, api_*.go): APIs is the table, per
//     API key, of the operations and resources Kafka 4.3 checks and how
//     a denial answers (the whole request with a *_AUTHORIZATION_FAILED
//     code, the denied items with it, or the items hidden); one function
//     per API (Produce, Fetch, Metadata, ...) applies it to a request and
//     returns an Outcome: rejected with the whole answer, or the request
//     to serve (a copy without the denied items, which the handler never
//     sees) and Finish, which completes the handler's response with the
//     denials, hides what must not be seen and fills the
//     authorized-operations bitfields. Authorize dispatches any request.
//     testdata/apis holds a transcript per API.
//
// A broker handler uses it so:
//
//	chk := authorizer.For(img, session)            // per request
//	o := authz.Produce(chk, authz.Env{Topics: authz.ImageTopics(img)}, req)
//	if o.Rejected {
//		return o.Response
//	}
//	resp := serve(o.Request)                       // the handler as without authorization
//	return o.Finish(resp)
//
// # What it does not own
//
// Authentication (who the principal is, from SASL or a client
// certificate) belongs to the connection edge; it hands the broker a
// Session. Storing ACLs: they are records of the metadata log
// (internal/metadata) written by the controller (internal/controller).
//
// # Concurrency
//
// Decisions are pure and take no lock. An Authorizer caches the Index
// of the last ACL set it saw in an atomic pointer; image ACL sets are
// never modified, so a set's pointer says whether the index is current.
// A Checker belongs to one request.
package authz
