package broker

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/server"
)

// CreateTopics v2-7. Each topic is validated here (name, partition
// count, configs against internal/config), then the valid ones go to the
// controller in one request: it places the replicas over the active
// brokers (racks too) and commits every topic in one metadata batch. The
// handler answers once the created topics are in this node's registry (or
// the request's timeout passed), so a client's next request here finds
// them.
var _ = register(handler{key: 19, min: 2, max: 7, serve: (*Broker).handleCreateTopics})

func (b *Broker) handleCreateTopics(ctx context.Context, req *server.Request) *server.Reply {
	r := req.Body.(*kmsg.CreateTopicsRequest)
	return b.async(ctx, func(ctx context.Context) kmsg.Response { return b.createTopics(ctx, r) })
}

func (b *Broker) createTopics(ctx context.Context, r *kmsg.CreateTopicsRequest) kmsg.Response {
	resp := r.ResponseKind().(*kmsg.CreateTopicsResponse)
	seen := map[string]int{}
	for _, rt := range r.Topics {
		seen[rt.Topic]++
	}
	fwd := kmsg.NewPtrCreateTopicsRequest()
	fwd.Version, fwd.ValidateOnly, fwd.TimeoutMillis = r.Version, r.ValidateOnly, r.TimeoutMillis
	overrides := map[string]map[string]string{}
	at := map[string]int{}
	for _, rt := range r.Topics {
		st := kmsg.NewCreateTopicsResponseTopic()
		st.Topic = rt.Topic
		st.NumPartitions, st.ReplicationFactor = -1, -1
		configs, err := b.checkCreateTopic(&rt, seen[rt.Topic] > 1)
		if err != nil {
			st.ErrorCode = errCode(err)
			st.ErrorMessage = errMessage(err)
		} else {
			ft := rt
			ft.Configs = nil
			for _, k := range sortedKeys(configs) {
				c := kmsg.NewCreateTopicsRequestTopicConfig()
				c.Name, c.Value = k, ptr(configs[k])
				ft.Configs = append(ft.Configs, c)
			}
			if ft.NumPartitions == -1 && len(ft.ReplicaAssignment) == 0 {
				ft.NumPartitions = b.cfg.NumPartitions
			}
			fwd.Topics = append(fwd.Topics, ft)
			overrides[rt.Topic] = configs
			at[rt.Topic] = len(resp.Topics)
		}
		resp.Topics = append(resp.Topics, st)
	}
	if len(fwd.Topics) == 0 {
		return resp
	}
	timeout := time.Duration(r.TimeoutMillis) * time.Millisecond
	if timeout <= 0 || timeout > 60*time.Second {
		timeout = 60 * time.Second
	}
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cres, err := b.admin(wctx, fwd, func(res kmsg.Response) func() bool {
		if r.ValidateOnly {
			return nil
		}
		var created []string
		for _, st := range res.(*kmsg.CreateTopicsResponse).Topics {
			if st.ErrorCode == 0 {
				created = append(created, st.Topic)
			}
		}
		return func() bool {
			for _, n := range created {
				if b.lookupTopic(n) == nil {
					return false
				}
			}
			return true
		}
	})
	if err != nil {
		err = controllerError(err)
		for _, ft := range fwd.Topics {
			st := &resp.Topics[at[ft.Topic]]
			st.ErrorCode, st.ErrorMessage = errCode(err), errMessage(err)
		}
		return resp
	}
	for _, cst := range cres.(*kmsg.CreateTopicsResponse).Topics {
		i, ok := at[cst.Topic]
		if !ok {
			continue
		}
		st := &resp.Topics[i]
		st.ErrorCode, st.ErrorMessage = cst.ErrorCode, cst.ErrorMessage
		if cst.ErrorCode == 0 {
			st.TopicID = cst.TopicID
			st.NumPartitions, st.ReplicationFactor = cst.NumPartitions, cst.ReplicationFactor
			st.Configs = b.cfgAdmin.CreateTopicConfigs(overrides[cst.Topic])
		}
	}
	return resp
}

// checkCreateTopic validates what the controller does not: the name, the
// partition count against this broker's cap and the configs. It returns
// the topic's config overrides.
func (b *Broker) checkCreateTopic(rt *kmsg.CreateTopicsRequestTopic, duplicated bool) (map[string]string, error) {
	if duplicated {
		return nil, fmt.Errorf("%w: topic %q appears more than once in the request", kerr.InvalidRequest, rt.Topic)
	}
	if err := validateTopicName(rt.Topic); err != nil {
		return nil, err
	}
	n := rt.NumPartitions
	if len(rt.ReplicaAssignment) > 0 {
		if n != -1 || rt.ReplicationFactor != -1 {
			return nil, fmt.Errorf("%w: both a replica assignment and a partition count or replication factor were given", kerr.InvalidRequest)
		}
		n = int32(len(rt.ReplicaAssignment))
	}
	if n == -1 {
		n = b.cfg.NumPartitions
	}
	if err := b.checkPartitionCount(n); err != nil {
		return nil, err
	}
	if b.lookupTopic(rt.Topic) != nil {
		return nil, fmt.Errorf("%w: topic %q already exists", kerr.TopicAlreadyExists, rt.Topic)
	}
	configs, cerr := b.settings().CreateTopicOverrides(rt.Configs)
	if cerr != nil {
		return nil, configError(cerr)
	}
	if _, err := b.topicLogConfig(configs); err != nil {
		return nil, err
	}
	return configs, nil
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
