package configadmin

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/config"
	"weir/internal/errcode"
)

// A config change is decided by the active controller against the
// committed configs (Policy, on the controller's node): the node that
// takes the request checks it against its own copy, to answer what is
// wrong with the request itself at once and in Kafka's order, then
// forwards what the request asks (its operations, or a legacy
// AlterConfigs' whole new set), never a difference computed from its
// copy, which may lag. It answers once it has applied the committed
// outcome.

// IncrementalAlter checks an IncrementalAlterConfigs request's resources
// (TOPIC and BROKER by internal/config, GROUP by the host's
// GroupConfigs; others get INVALID_REQUEST) and returns the response with
// each failure filled in, and the Forward that completes it with the
// controller's answers for those that passed; the Forward is nil when
// nothing is left to decide (all failed, or ValidateOnly).
func (m *Manager) IncrementalAlter(r *kmsg.IncrementalAlterConfigsRequest) (*kmsg.IncrementalAlterConfigsResponse, *Forward) {
	st := m.Settings()
	resp := r.ResponseKind().(*kmsg.IncrementalAlterConfigsResponse)
	fwd := kmsg.NewPtrIncrementalAlterConfigsRequest()
	for _, rr := range r.Resources {
		res := kmsg.NewIncrementalAlterConfigsResponseResource()
		res.ResourceType, res.ResourceName = rr.ResourceType, rr.ResourceName
		resp.Resources = append(resp.Resources, res)
	}
	f := m.checkEach(len(r.Resources), r.ValidateOnly,
		func(i int) error { return m.checkIncremental(st, r.Resources[i]) },
		func(i int, code int16, msg *string) {
			resp.Resources[i].ErrorCode, resp.Resources[i].ErrorMessage = code, msg
		},
		func(i int) { fwd.Resources = append(fwd.Resources, r.Resources[i]) })
	f.req, f.resp = fwd, resp
	return resp, f.orNil()
}

// Alter is IncrementalAlter for the legacy AlterConfigs, whose entries
// replace every dynamic override of a TOPIC or BROKER resource; other
// types get INVALID_REQUEST.
func (m *Manager) Alter(r *kmsg.AlterConfigsRequest) (*kmsg.AlterConfigsResponse, *Forward) {
	st := m.Settings()
	resp := r.ResponseKind().(*kmsg.AlterConfigsResponse)
	fwd := kmsg.NewPtrAlterConfigsRequest()
	for _, rr := range r.Resources {
		res := kmsg.NewAlterConfigsResponseResource()
		res.ResourceType, res.ResourceName = rr.ResourceType, rr.ResourceName
		resp.Resources = append(resp.Resources, res)
	}
	f := m.checkEach(len(r.Resources), r.ValidateOnly,
		func(i int) error { return m.checkReplace(st, r.Resources[i]) },
		func(i int, code int16, msg *string) {
			resp.Resources[i].ErrorCode, resp.Resources[i].ErrorMessage = code, msg
		},
		func(i int) { fwd.Resources = append(fwd.Resources, r.Resources[i]) })
	f.req, f.resp = fwd, resp
	return resp, f.orNil()
}

// checkEach checks a request's n resources in order: check is resource
// i's answer (nil when it passes), set writes an answer into resource
// i's place in the response, keep adds resource i to the request to
// forward, which takes those that passed unless validateOnly.
func (m *Manager) checkEach(n int, validateOnly bool, check func(i int) error, set func(i int, code int16, msg *string), keep func(i int)) *Forward {
	f := &Forward{m: m, set: set}
	for i := range n {
		err := check(i)
		set(i, errcode.Of(err), errcode.Message(err))
		if err == nil && !validateOnly {
			keep(i)
			f.slots = append(f.slots, i)
		}
	}
	return f
}

// checkIncremental checks one IncrementalAlterConfigs resource.
func (m *Manager) checkIncremental(st *config.Broker, rr kmsg.IncrementalAlterConfigsRequestResource) error {
	switch rr.ResourceType {
	case kmsg.ConfigResourceTypeTopic:
		return m.checkTopic(rr.ResourceName, func(current map[string]string) (map[string]string, *config.Error) {
			return st.IncrementalAlterTopic(current, rr.Configs)
		})
	case kmsg.ConfigResourceTypeBroker:
		_, e := st.IncrementalAlterBroker(rr.ResourceName, rr.Configs)
		return KafkaError(e)
	case kmsg.ConfigResourceTypeGroupConfig:
		return m.host.Groups().ValidateGroupConfig(rr.ResourceName, rr.Configs)
	}
	return unsupported(rr.ResourceType)
}

// checkReplace checks one legacy AlterConfigs resource.
func (m *Manager) checkReplace(st *config.Broker, rr kmsg.AlterConfigsRequestResource) error {
	switch rr.ResourceType {
	case kmsg.ConfigResourceTypeTopic:
		return m.checkTopic(rr.ResourceName, func(map[string]string) (map[string]string, *config.Error) {
			return st.AlterTopic(rr.Configs)
		})
	case kmsg.ConfigResourceTypeBroker:
		_, e := st.AlterBroker(rr.ResourceName, rr.Configs)
		return KafkaError(e)
	}
	return unsupported(rr.ResourceType)
}

// checkTopic checks a topic's new overrides as change computes them from
// this node's copy: the name, then a bad config, as Kafka reports it,
// then an unknown topic. internal/config's alterations validate the
// whole new set as a topic's settings resolve it (ValidateTopicOverrides),
// so overrides that pass make a log configuration.
func (m *Manager) checkTopic(name string, change func(current map[string]string) (map[string]string, *config.Error)) error {
	if err := checkTopicName(name); err != nil {
		return err
	}
	current, ok := m.host.TopicConfigs(name)
	if _, e := change(current); e != nil {
		return KafkaError(e)
	}
	if !ok {
		return kerr.UnknownTopicOrPartition
	}
	return nil
}

// Forward is the part of a config request that passed this node's
// checks, waiting for the controller's decision.
type Forward struct {
	m     *Manager
	req   kmsg.Request  // the resources to decide
	resp  kmsg.Response // the response Decide completes
	slots []int         // req's i-th resource answers the request's resource slots[i]
	set   func(slot int, code int16, msg *string)
}

func (f *Forward) orNil() *Forward {
	if len(f.slots) == 0 {
		return nil
	}
	return f
}

// Decide has the controller decide the forwarded resources, waits until
// this node has applied the outcome, and returns the response completed
// with each resource's answer (or the failure, for every one of them).
// It blocks: the caller runs it off the request path.
func (f *Forward) Decide(ctx context.Context) kmsg.Response {
	answers, err := f.m.decide(ctx, f.req)
	for i, slot := range f.slots {
		if err != nil {
			f.set(slot, errcode.Of(err), errcode.Message(err))
			continue
		}
		f.set(slot, answers[i].code, answers[i].msg)
	}
	return f.resp
}

// resourceAnswer is one config resource's error code and message.
type resourceAnswer struct {
	code int16
	msg  *string
}

// decide has the active controller decide req and returns each
// resource's answer, in order, once this node has applied the outcome,
// so that the client's next request here sees it. An error is every
// resource's answer.
func (m *Manager) decide(ctx context.Context, req kmsg.Request) ([]resourceAnswer, error) {
	ctx, cancel := context.WithTimeout(ctx, m.timeout)
	defer cancel()
	resp, offset, err := m.host.Forward(ctx, req)
	if err != nil {
		return nil, err
	}
	var out []resourceAnswer
	switch r := resp.(type) {
	case *kmsg.IncrementalAlterConfigsResponse:
		for _, res := range r.Resources {
			out = append(out, resourceAnswer{res.ErrorCode, res.ErrorMessage})
		}
	case *kmsg.AlterConfigsResponse:
		for _, res := range r.Resources {
			out = append(out, resourceAnswer{res.ErrorCode, res.ErrorMessage})
		}
	}
	if want := configResources(req); len(out) != want {
		return nil, fmt.Errorf("%w: the controller answered %d of %d resources", kerr.UnknownServerError, len(out), want)
	}
	if offset < 0 {
		// Every weir controller says where; without it there is
		// nothing to wait for.
		m.logger.Warn("controller did not say where a config change committed", "api", kmsg.NameForKey(req.Key()))
		return out, nil
	}
	if err := m.host.WaitApplied(ctx, offset); err != nil {
		return nil, fmt.Errorf("%w: the change committed at metadata offset %d was not applied here in time", kerr.RequestTimedOut, offset)
	}
	return out, nil
}

func configResources(req kmsg.Request) int {
	switch r := req.(type) {
	case *kmsg.IncrementalAlterConfigsRequest:
		return len(r.Resources)
	case *kmsg.AlterConfigsRequest:
		return len(r.Resources)
	}
	return 0
}
