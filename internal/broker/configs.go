package broker

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/config"
	"weir/internal/metadata"
	"weir/internal/server"
)

// Config resources are answered by internal/config; these helpers find the
// resource, store what changed and apply it.

// describeResource answers one DescribeConfigs resource.
func (b *Broker) describeResource(typ kmsg.ConfigResourceType, name string, opts config.DescribeOptions) ([]config.Entry, error) {
	switch typ {
	case kmsg.ConfigResourceTypeTopic:
		if err := validateTopicName(name); err != nil {
			return nil, err
		}
		t := b.lookupTopic(name)
		if t == nil {
			return nil, kerr.UnknownTopicOrPartition
		}
		b.mu.RLock()
		overrides := t.configs
		b.mu.RUnlock()
		entries, e := b.settings().DescribeTopic(overrides, opts)
		return entries, configError(e)
	case kmsg.ConfigResourceTypeBroker:
		entries, e := b.settings().DescribeBroker(name, opts)
		return entries, configError(e)
	}
	return nil, fmt.Errorf("%w: resource type %v is not supported", kerr.InvalidRequest, typ)
}

// A config change is decided by the active controller against the
// committed configs (configPolicy, on the controller's node): the broker
// that takes the request checks it against its own copy, to answer what
// is wrong with the request itself at once and in Kafka's order, then
// forwards what the request asks (its operations, or a legacy
// AlterConfigs' whole new set), never a difference computed from its
// copy, which may lag. It answers once it has applied the committed
// outcome.

// checkTopicAlter checks a topic's new overrides as change computes them
// from this node's copy: a bad config first, as Kafka reports it, then an
// unknown topic.
func (b *Broker) checkTopicAlter(name string, change func(current map[string]string) (map[string]string, *config.Error)) error {
	if err := validateTopicName(name); err != nil {
		return err
	}
	b.mu.RLock()
	t := b.topics[name]
	var current map[string]string
	if t != nil {
		current = t.configs
	}
	b.mu.RUnlock()
	next, e := change(current)
	if e != nil {
		return configError(e)
	}
	if t == nil {
		return kerr.UnknownTopicOrPartition
	}
	_, err := b.topicLogConfig(next)
	return err
}

// checkBrokerAlter checks new dynamic broker configs as change computes
// them from this node's settings.
func (b *Broker) checkBrokerAlter(change func(st *config.Broker) (map[string]string, *config.Error)) error {
	_, e := change(b.settings())
	return configError(e)
}

// decideConfigs has the active controller decide req (an
// IncrementalAlterConfigs or AlterConfigs of the resources that passed
// this node's checks) and returns each resource's answer, in order, once
// this node has applied the outcome, so that the client's next request
// here sees it. An error is every resource's answer.
func (b *Broker) decideConfigs(ctx context.Context, req kmsg.Request) ([]resourceAnswer, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	resp, offset, err := b.ctl.AdminAt(ctx, req)
	if err != nil {
		return nil, controllerError(err)
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
		b.logger.Warn("controller did not say where a config change committed", "api", kmsg.NameForKey(req.Key()))
		return out, nil
	}
	if err := b.waitApplied(ctx, offset); err != nil {
		return nil, fmt.Errorf("%w: the change committed at metadata offset %d was not applied here in time", kerr.RequestTimedOut, offset)
	}
	return out, nil
}

// resourceAnswer is one config resource's error code and message.
type resourceAnswer struct {
	code int16
	msg  *string
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

// forwardConfigs has the controller decide fwd, the resources of a
// config request that passed this node's checks, off the request path,
// and completes resp with each one's answer (slots[i] is the response
// slot of fwd's i-th resource; set writes one).
func (b *Broker) forwardConfigs(ctx context.Context, fwd kmsg.Request, resp kmsg.Response, slots []int, set func(slot int, code int16, msg *string)) *server.Reply {
	if len(slots) == 0 {
		return server.Ready(resp)
	}
	return b.async(ctx, func(ctx context.Context) kmsg.Response {
		answers, err := b.decideConfigs(ctx, fwd)
		for i, slot := range slots {
			if err != nil {
				set(slot, errCode(err), errMessage(err))
				continue
			}
			set(slot, answers[i].code, answers[i].msg)
		}
		return resp
	})
}

// configPolicy is the active controller's ConfigPolicy on this node:
// internal/config's checks for TOPIC and BROKER resources, the share
// groups' for GROUP resources, over the controller's current configs.
type configPolicy struct{ b *Broker }

func (p configPolicy) Incremental(res metadata.ConfigResource, current map[string]string, ops []kmsg.IncrementalAlterConfigsRequestResourceConfig) (map[string]string, error) {
	switch res.Type {
	case metadata.ResourceTopic:
		next, e := p.b.settings().IncrementalAlterTopic(current, ops)
		return p.topic(next, e)
	case metadata.ResourceBroker:
		next, e := p.b.settings().MergeBrokerOps(res.Name, current, ops)
		return next, configError(e)
	case metadata.ResourceGroup:
		return p.b.shares.MergeGroupConfigs(res.Name, current, ops)
	}
	return nil, fmt.Errorf("%w: resource type %d is not supported", kerr.InvalidRequest, res.Type)
}

func (p configPolicy) Replace(res metadata.ConfigResource, _ map[string]string, entries []kmsg.AlterConfigsRequestResourceConfig) (map[string]string, error) {
	switch res.Type {
	case metadata.ResourceTopic:
		next, e := p.b.settings().AlterTopic(entries)
		return p.topic(next, e)
	case metadata.ResourceBroker:
		next, e := p.b.settings().ReplaceBroker(res.Name, entries)
		return next, configError(e)
	}
	return nil, fmt.Errorf("%w: resource type %d is not supported", kerr.InvalidRequest, res.Type)
}

// topic checks that a topic's new overrides make a log configuration.
func (p configPolicy) topic(next map[string]string, e *config.Error) (map[string]string, error) {
	if e != nil {
		return nil, configError(e)
	}
	if _, err := p.b.topicLogConfig(next); err != nil {
		return nil, err
	}
	return next, nil
}
