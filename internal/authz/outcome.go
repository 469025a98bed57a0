package authz

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/metadata"
)

// Topics resolves topic ids and names against the image a request is
// served with.
type Topics interface {
	// TopicName is the name of a topic id.
	TopicName(id [16]byte) (string, bool)
	// TopicID is the id of a topic name; ok reports whether it exists.
	TopicID(name string) (id [16]byte, ok bool)
	// Partitions is the partition count of a topic name; ok reports
	// whether it exists.
	Partitions(name string) (n int32, ok bool)
}

type imageTopics struct{ img *metadata.Image }

// ImageTopics resolves topics in an image.
func ImageTopics(img *metadata.Image) Topics { return imageTopics{img} }

func (t imageTopics) TopicName(id [16]byte) (string, bool) {
	tp, ok := t.img.Topic(id)
	if !ok {
		return "", false
	}
	return tp.Name(), true
}

func (t imageTopics) TopicID(name string) ([16]byte, bool) {
	tp, ok := t.img.TopicByName(name)
	if !ok {
		return [16]byte{}, false
	}
	return tp.ID(), true
}

func (t imageTopics) Partitions(name string) (int32, bool) {
	tp, ok := t.img.TopicByName(name)
	if !ok {
		return 0, false
	}
	return tp.NumPartitions(), true
}

// Env is what authorizing a request needs besides the checker.
type Env struct {
	Topics Topics
	// AutoCreateTopics is the broker's auto.create.topics.enable: a
	// Metadata request that would create topics needs CREATE for them.
	AutoCreateTopics bool
}

// Outcome is what authorization makes of one request. Either Rejected,
// and Response is the whole answer (nothing of the request is served);
// or Request is what to serve: the request itself, or a copy without the
// items the principal may not touch, so that the handler never sees
// them. The handler serves Request as it would any request and passes
// its response to Finish, which adds the answers of the denied items,
// leaves out what the principal may not see, and fills the
// authorized-operations fields Kafka fills. The handler leaves those
// fields at their defaults.
type Outcome[Req kmsg.Request, Resp kmsg.Response] struct {
	Rejected bool
	Response Resp
	Request  Req
	// Partial reports that items were denied and left out of Request:
	// the answer has errors, and a handler that waits for data (a fetch
	// below its MinBytes) answers at once, as Kafka does with errors.
	Partial bool
	finish  []func(Resp)
}

// Finish completes the response to Request, in place, and returns it.
func (o *Outcome[Req, Resp]) Finish(resp Resp) Resp {
	for _, f := range o.finish {
		f(resp)
	}
	return resp
}

func (o *Outcome[Req, Resp]) then(f func(Resp)) { o.finish = append(o.finish, f) }

func serve[Req kmsg.Request, Resp kmsg.Response](req Req) *Outcome[Req, Resp] {
	return &Outcome[Req, Resp]{Request: req}
}

func reject[Req kmsg.Request, Resp kmsg.Response](req Req, resp Resp) *Outcome[Req, Resp] {
	resp.SetVersion(req.GetVersion())
	return &Outcome[Req, Resp]{Rejected: true, Response: resp, Request: req}
}

// Verdict is an Outcome without its types, for code that treats every
// API alike (Authorize).
type Verdict struct {
	// Reject, when not nil, is the whole answer.
	Reject kmsg.Response
	// Request is what to serve.
	Request kmsg.Request
	// Partial is Outcome.Partial.
	Partial bool
	// Finish completes the response to Request; Finishes reports whether
	// it does anything (else it returns its argument).
	Finish   func(kmsg.Response) kmsg.Response
	Finishes bool
	// Checker is the principal's checker, for the rare handler that must
	// authorize what the request only leads to (the internal topics a
	// streams group heartbeat creates); nil when authorization is off,
	// which allows everything.
	Checker *Checker
}

func identity(r kmsg.Response) kmsg.Response { return r }

func verdict[Req kmsg.Request, Resp kmsg.Response](o *Outcome[Req, Resp]) Verdict {
	if o.Rejected {
		return Verdict{Reject: o.Response, Request: o.Request, Finish: identity}
	}
	if len(o.finish) == 0 {
		return Verdict{Request: o.Request, Partial: o.Partial, Finish: identity}
	}
	return Verdict{Request: o.Request, Partial: o.Partial, Finishes: true,
		Finish: func(r kmsg.Response) kmsg.Response { return o.Finish(r.(Resp)) }}
}

// Kafka's default messages of the errors authorization answers with.
var defaultMessages = map[int16]string{
	kerr.TopicAuthorizationFailed.Code:           "Topic authorization failed.",
	kerr.GroupAuthorizationFailed.Code:           "Group authorization failed.",
	kerr.ClusterAuthorizationFailed.Code:         "Cluster authorization failed.",
	kerr.TransactionalIDAuthorizationFailed.Code: "Transactional Id authorization failed.",
	kerr.SecurityDisabled.Code:                   "Security features are disabled.",
}

// message is Kafka's default message of an error, as a response field.
func message(e *kerr.Error) *string {
	m, ok := defaultMessages[e.Code]
	if !ok {
		return nil
	}
	return &m
}

var (
	errTopic   = kerr.TopicAuthorizationFailed
	errGroup   = kerr.GroupAuthorizationFailed
	errCluster = kerr.ClusterAuthorizationFailed
	errTxn     = kerr.TransactionalIDAuthorizationFailed
)

// topicNamer names the topics of a request: by name, or by id resolved
// in the image. An id the image does not know has no name; such items
// are left to the handler (UNKNOWN_TOPIC_ID).
func topicName(env Env, name string, id [16]byte) (string, bool) {
	if id != [16]byte{} {
		if env.Topics == nil {
			return "", false
		}
		return env.Topics.TopicName(id)
	}
	return name, true
}

// memo answers a question about a name once per request.
func memo(f func(string) bool) func(string) bool {
	seen := map[string]bool{}
	return func(name string) bool {
		v, ok := seen[name]
		if !ok {
			v = f(name)
			seen[name] = v
		}
		return v
	}
}

// can returns a memoized check of op on resources of type t.
func (c *Checker) can(op Operation, t ResourceType) func(string) bool {
	return memo(func(name string) bool { return c.Allowed(op, t, name) })
}

// errorOf is the kerr error of a code authorization answers with.
func errorOf(code int16) *kerr.Error {
	for _, e := range []*kerr.Error{errTopic, errGroup, errCluster, errTxn, kerr.SecurityDisabled} {
		if e.Code == code {
			return e
		}
	}
	return kerr.UnknownServerError
}
