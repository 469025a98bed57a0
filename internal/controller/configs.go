package controller

import (
	"errors"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/errcode"
	"weir/internal/metadata"
)

// Config requests are decided here, against the controller's view of each
// resource's overrides: the committed configs plus the controller's own
// batches in flight. A broker that receives a request forwards what the
// request asks (its operations, or the whole new set of a legacy
// AlterConfigs), never a difference it computed from its own copy, which
// may lag: two requests sent through two brokers one after the other are
// then applied one after the other, each to what the other left.

// ConfigPolicy turns what a config request asks of one resource into the
// resource's new overrides, given its current ones (never modified), and
// checks them. The broker plugs in internal/config's validation; the
// default, PlainConfigs, checks only what the protocol requires. An error
// wrapping a kerr error is that resource's answer, with the text after
// the error's own name as the message.
type ConfigPolicy interface {
	// Incremental applies IncrementalAlterConfigs operations in order.
	Incremental(res metadata.ConfigResource, current map[string]string, ops []kmsg.IncrementalAlterConfigsRequestResourceConfig) (map[string]string, error)
	// Replace checks a legacy AlterConfigs resource's entries, which
	// become the resource's whole set of overrides.
	Replace(res metadata.ConfigResource, current map[string]string, entries []kmsg.AlterConfigsRequestResourceConfig) (map[string]string, error)
}

// PlainConfigs is the ConfigPolicy that stores names and values as given:
// SET, DELETE, APPEND and SUBTRACT in order, APPEND and SUBTRACT treating
// the current value as a comma-separated list; a null value for anything
// but DELETE, an unknown operation and a repeated name are
// INVALID_REQUEST.
type PlainConfigs struct{}

// Incremental implements ConfigPolicy.
func (PlainConfigs) Incremental(_ metadata.ConfigResource, current map[string]string, ops []kmsg.IncrementalAlterConfigsRequestResourceConfig) (map[string]string, error) {
	next := maps.Clone(current)
	if next == nil {
		next = map[string]string{}
	}
	for _, op := range ops {
		if op.Op != kmsg.IncrementalAlterConfigOpDelete && op.Value == nil {
			return nil, apiErr(kerr.InvalidRequest, "Null value not supported for : %s", op.Name)
		}
		switch op.Op {
		case kmsg.IncrementalAlterConfigOpSet:
			next[op.Name] = *op.Value
		case kmsg.IncrementalAlterConfigOpDelete:
			delete(next, op.Name)
		case kmsg.IncrementalAlterConfigOpAppend, kmsg.IncrementalAlterConfigOpSubtract:
			var items []string
			if v := next[op.Name]; v != "" {
				items = strings.Split(v, ",")
			}
			for _, it := range strings.Split(*op.Value, ",") {
				i := slices.Index(items, it)
				switch {
				case op.Op == kmsg.IncrementalAlterConfigOpAppend && i < 0:
					items = append(items, it)
				case op.Op == kmsg.IncrementalAlterConfigOpSubtract && i >= 0:
					items = slices.Delete(items, i, i+1)
				}
			}
			next[op.Name] = strings.Join(items, ",")
		default:
			return nil, apiErr(kerr.InvalidRequest, "Unknown operation %d for %s.", op.Op, op.Name)
		}
	}
	return next, nil
}

// Replace implements ConfigPolicy.
func (PlainConfigs) Replace(_ metadata.ConfigResource, _ map[string]string, entries []kmsg.AlterConfigsRequestResourceConfig) (map[string]string, error) {
	next := make(map[string]string, len(entries))
	for _, e := range entries {
		if _, dup := next[e.Name]; dup {
			return nil, apiErr(kerr.InvalidRequest, "Error due to duplicate config keys")
		}
		if e.Value == nil {
			return nil, apiErr(kerr.InvalidRequest, "Null value not supported for : %s", e.Name)
		}
		next[e.Name] = *e.Value
	}
	return next, nil
}

// IncrementalAlterConfigs handles IncrementalAlterConfigs (API 44) for
// TOPIC, BROKER and GROUP resources: each resource's operations are
// merged into its overrides in the controller's view by the ConfigPolicy,
// and the differences are recorded, every resource in one batch (none
// with ValidateOnly).
func (c *Controller) IncrementalAlterConfigs(req *kmsg.IncrementalAlterConfigsRequest) (*kmsg.IncrementalAlterConfigsResponse, []metadata.Record) {
	resp := kmsg.NewPtrIncrementalAlterConfigsResponse()
	resp.Version = req.Version
	errs, recs := c.alterConfigs(len(req.Resources), req.ValidateOnly, func(i int, current func(metadata.ConfigResource) map[string]string) (metadata.ConfigResource, map[string]string, error) {
		rr := &req.Resources[i]
		return mergeResource(rr.ResourceType, rr.ResourceName, current, true, func(res metadata.ConfigResource, cur map[string]string) (map[string]string, error) {
			return c.cfg.Configs.Incremental(res, cur, rr.Configs)
		})
	})
	for i, rr := range req.Resources {
		out := kmsg.NewIncrementalAlterConfigsResponseResource()
		out.ResourceType, out.ResourceName = rr.ResourceType, rr.ResourceName
		out.ErrorCode, out.ErrorMessage = configErr(errs[i])
		resp.Resources = append(resp.Resources, out)
	}
	return resp, recs
}

// LegacyAlterConfigs handles AlterConfigs (API 33) for TOPIC and BROKER
// resources: each resource's entries, checked by the ConfigPolicy,
// replace its overrides, so a key the request does not name is deleted
// whoever set it. Every resource is one batch (none with ValidateOnly).
func (c *Controller) LegacyAlterConfigs(req *kmsg.AlterConfigsRequest) (*kmsg.AlterConfigsResponse, []metadata.Record) {
	resp := kmsg.NewPtrAlterConfigsResponse()
	resp.Version = req.Version
	errs, recs := c.alterConfigs(len(req.Resources), req.ValidateOnly, func(i int, current func(metadata.ConfigResource) map[string]string) (metadata.ConfigResource, map[string]string, error) {
		rr := &req.Resources[i]
		return mergeResource(rr.ResourceType, rr.ResourceName, current, false, func(res metadata.ConfigResource, cur map[string]string) (map[string]string, error) {
			return c.cfg.Configs.Replace(res, cur, rr.Configs)
		})
	})
	for i, rr := range req.Resources {
		out := kmsg.NewAlterConfigsResponseResource()
		out.ResourceType, out.ResourceName = rr.ResourceType, rr.ResourceName
		out.ErrorCode, out.ErrorMessage = configErr(errs[i])
		resp.Resources = append(resp.Resources, out)
	}
	return resp, recs
}

// mergeResource names a request's resource and has merge compute its new
// overrides from the current ones: TOPIC and BROKER resources, and GROUP
// ones when groups is set; others are INVALID_REQUEST.
func mergeResource(typ kmsg.ConfigResourceType, name string, current func(metadata.ConfigResource) map[string]string, groups bool,
	merge func(res metadata.ConfigResource, current map[string]string) (map[string]string, error)) (metadata.ConfigResource, map[string]string, error) {
	res := metadata.ConfigResource{Type: metadata.ResourceType(typ), Name: name}
	switch {
	case res.Type == metadata.ResourceTopic, res.Type == metadata.ResourceBroker, groups && res.Type == metadata.ResourceGroup:
	default:
		return res, nil, apiErr(kerr.InvalidRequest, "Unsupported resource type %v.", typ)
	}
	next, err := merge(res, current(res))
	return res, next, err
}

// alterConfigs decides n resources: merge(i) names resource i and its new
// overrides, computed from current, which reads the controller's view as
// it stands with the resources before i applied (a request naming one
// resource twice sees its own first change). The differences are
// recorded in one batch.
func (c *Controller) alterConfigs(n int, validateOnly bool, merge func(i int, current func(metadata.ConfigResource) map[string]string) (metadata.ConfigResource, map[string]string, error)) ([]error, []metadata.Record) {
	errs := make([]error, n)
	var (
		changes []ConfigChange
		index   []int // changes[j] answers resource index[j]
	)
	decided := map[metadata.ConfigResource]map[string]string{}
	current := func(res metadata.ConfigResource) map[string]string {
		if m, ok := decided[res]; ok {
			return m
		}
		return c.img.Configs(res)
	}
	for i := range n {
		res, next, err := merge(i, current)
		if err != nil {
			errs[i] = err
			continue
		}
		if validateOnly {
			if _, ok := c.img.TopicByName(res.Name); res.Type == metadata.ResourceTopic && !ok {
				errs[i] = apiErr(kerr.UnknownTopicOrPartition, "Topic %s does not exist.", res.Name)
			}
			continue
		}
		old := current(res)
		ch := ConfigChange{Resource: res, Set: map[string]string{}}
		for k, v := range next {
			if was, ok := old[k]; !ok || was != v {
				ch.Set[k] = v
			}
		}
		for k := range old {
			if _, ok := next[k]; !ok {
				ch.Delete = append(ch.Delete, k)
			}
		}
		slices.Sort(ch.Delete)
		decided[res] = next
		changes = append(changes, ch)
		index = append(index, i)
	}
	if len(changes) == 0 {
		return errs, nil
	}
	cerrs, recs := c.AlterConfigs(changes)
	for j, err := range cerrs {
		if err != nil {
			errs[index[j]] = err
		}
	}
	return errs, recs
}

// configErr is a resource's error code and message: the controller's own
// errors as everywhere, a policy's kerr error with the text after the
// error's name.
func configErr(err error) (int16, *string) {
	var ae *apiError
	if err == nil || errors.As(err, &ae) {
		return codeAndMessage(err)
	}
	return errcode.Of(err), errcode.Message(err)
}

// ConfigChange sets and deletes config keys of one resource.
type ConfigChange struct {
	Resource metadata.ConfigResource
	Set      map[string]string
	Delete   []string
}

// AlterConfigs records config changes, one batch for all of them, and
// returns an error per change (nil when accepted): UNKNOWN_TOPIC_OR_PARTITION
// for a topic that does not exist, INVALID_REQUEST for a broker resource
// whose name is not a broker id. Like CreateTopics, it records values as
// given: validating and merging them (incremental operations) is the
// caller's job.
func (c *Controller) AlterConfigs(changes []ConfigChange) ([]error, []metadata.Record) {
	errs := make([]error, len(changes))
	t := c.begin()
	for i, ch := range changes {
		switch ch.Resource.Type {
		case metadata.ResourceTopic:
			if _, ok := t.b.TopicByName(ch.Resource.Name); !ok {
				errs[i] = apiErr(kerr.UnknownTopicOrPartition, "Topic %s does not exist.", ch.Resource.Name)
				continue
			}
		case metadata.ResourceBroker:
			if n := ch.Resource.Name; n != "" {
				if id, err := strconv.ParseInt(n, 10, 32); err != nil || id < 0 || strconv.Itoa(int(id)) != n {
					errs[i] = apiErr(kerr.InvalidRequest, "Unexpected broker id %q.", n)
					continue
				}
			}
		case metadata.ResourceGroup:
			if ch.Resource.Name == "" {
				errs[i] = apiErr(kerr.InvalidRequest, "Group name must not be empty.")
				continue
			}
		default:
			errs[i] = apiErr(kerr.InvalidRequest, "Unsupported resource type %d.", ch.Resource.Type)
			continue
		}
		if _, empty := ch.Set[""]; empty || slices.Contains(ch.Delete, "") {
			errs[i] = apiErr(kerr.InvalidRequest, "A config key is empty.")
			continue
		}
		for _, k := range slices.Sorted(maps.Keys(ch.Set)) {
			t.add(&metadata.ConfigRecord{Resource: ch.Resource.Type, Name: ch.Resource.Name, Key: k, Value: ch.Set[k]})
		}
		for _, k := range ch.Delete {
			t.add(&metadata.ConfigRecord{Resource: ch.Resource.Type, Name: ch.Resource.Name, Key: k, Delete: true})
		}
	}
	recs, err := t.commit()
	if err != nil {
		for i := range errs {
			if errs[i] == nil {
				errs[i] = err
			}
		}
		return errs, nil
	}
	return errs, recs
}
