package authz

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// authorizationFailedMessage is the message Kafka's controller gives a
// topic CreateTopics may not create.
const authorizationFailedMessage = "Authorization failed."

// count counts the names.
func count(names []string) map[string]int {
	m := make(map[string]int, len(names))
	for _, n := range names {
		m[n]++
	}
	return m
}

// CreateTopics (API 19): CREATE on the cluster, or on each topic, else
// the topic answers TOPIC_AUTHORIZATION_FAILED and is not created (a name
// given twice is left to the controller's INVALID_REQUEST). A created
// topic's configs, partitions and replication factor are shown only with
// DESCRIBE_CONFIGS on it; otherwise its config error is
// TOPIC_AUTHORIZATION_FAILED.
func CreateTopics(c *Checker, _ Env, req *kmsg.CreateTopicsRequest) *Outcome[*kmsg.CreateTopicsRequest, *kmsg.CreateTopicsResponse] {
	names := make([]string, len(req.Topics))
	for i, t := range req.Topics {
		names[i] = t.Topic
	}
	n := count(names)
	clusterCreate := c.AllowedCluster(OpCreate)
	kept, denied := split(req.Topics, func(t *kmsg.CreateTopicsRequestTopic) bool {
		return clusterCreate || n[t.Topic] > 1 || c.Allowed(OpCreate, ResourceTopic, t.Topic)
	}, func(t *kmsg.CreateTopicsRequestTopic) kmsg.CreateTopicsResponseTopic {
		rt := kmsg.NewCreateTopicsResponseTopic()
		msg := authorizationFailedMessage
		rt.Topic, rt.ErrorCode, rt.ErrorMessage = t.Topic, errTopic.Code, &msg
		return rt
	})
	o := pruned(req, denied, func() *kmsg.CreateTopicsRequest { cp := *req; cp.Topics = kept; return &cp },
		func(r *kmsg.CreateTopicsResponse, d []kmsg.CreateTopicsResponseTopic) {
			r.Topics = append(r.Topics, d...)
		})
	o.then(func(r *kmsg.CreateTopicsResponse) {
		for i := range r.Topics {
			t := &r.Topics[i]
			if t.ErrorCode == 0 && !c.Allowed(OpDescribeConfigs, ResourceTopic, t.Topic) {
				t.ConfigErrorCode, t.Configs, t.NumPartitions, t.ReplicationFactor = errTopic.Code, nil, -1, -1
			}
		}
	})
	return o
}

// DeleteTopics (API 20): DELETE on the cluster allows every topic.
// Otherwise a topic named without DESCRIBE answers
// TOPIC_AUTHORIZATION_FAILED whether it exists or not; one that may be
// described but does not exist is the handler's UNKNOWN_TOPIC_OR_PARTITION;
// one that exists needs DELETE, else TOPIC_AUTHORIZATION_FAILED. A topic
// given by id that exists needs DELETE, else TOPIC_AUTHORIZATION_FAILED,
// naming it only if it may be described.
func DeleteTopics(c *Checker, env Env, req *kmsg.DeleteTopicsRequest) *Outcome[*kmsg.DeleteTopicsRequest, *kmsg.DeleteTopicsResponse] {
	if c.AllowedCluster(OpDelete) {
		return serve[*kmsg.DeleteTopicsRequest, *kmsg.DeleteTopicsResponse](req)
	}
	describe, del := c.can(OpDescribe, ResourceTopic), c.can(OpDelete, ResourceTopic)
	exists := func(name string) bool {
		if env.Topics == nil {
			return true
		}
		_, ok := env.Topics.TopicID(name)
		return ok
	}
	denial := func(name *string, id [16]byte) kmsg.DeleteTopicsResponseTopic {
		rt := kmsg.NewDeleteTopicsResponseTopic()
		rt.Topic, rt.TopicID, rt.ErrorCode, rt.ErrorMessage = name, id, errTopic.Code, message(errTopic)
		return rt
	}
	byName := func(name string) bool { return describe(name) && (!exists(name) || del(name)) }
	var denied []kmsg.DeleteTopicsResponseTopic
	keptNames, deniedNames := split(req.TopicNames, func(n *string) bool { return byName(*n) },
		func(n *string) kmsg.DeleteTopicsResponseTopic { name := *n; return denial(&name, [16]byte{}) })
	denied = append(denied, deniedNames...)
	keptTopics, deniedTopics := split(req.Topics, func(t *kmsg.DeleteTopicsRequestTopic) bool {
		if t.Topic != nil {
			return t.TopicID != [16]byte{} || byName(*t.Topic) // both given: the handler's INVALID_REQUEST
		}
		name, ok := topicName(env, "", t.TopicID)
		return !ok || del(name)
	}, func(t *kmsg.DeleteTopicsRequestTopic) kmsg.DeleteTopicsResponseTopic {
		if t.Topic != nil {
			name := *t.Topic
			return denial(&name, [16]byte{})
		}
		name, _ := topicName(env, "", t.TopicID)
		if describe(name) {
			return denial(&name, t.TopicID)
		}
		return denial(nil, t.TopicID)
	})
	denied = append(denied, deniedTopics...)
	return pruned(req, denied, func() *kmsg.DeleteTopicsRequest {
		cp := *req
		cp.TopicNames, cp.Topics = keptNames, keptTopics
		return &cp
	}, func(r *kmsg.DeleteTopicsResponse, d []kmsg.DeleteTopicsResponseTopic) {
		r.Topics = append(r.Topics, d...)
	})
}

// CreatePartitions (API 37): ALTER on each topic, else it answers
// TOPIC_AUTHORIZATION_FAILED and keeps its partitions.
func CreatePartitions(c *Checker, _ Env, req *kmsg.CreatePartitionsRequest) *Outcome[*kmsg.CreatePartitionsRequest, *kmsg.CreatePartitionsResponse] {
	alter := c.can(OpAlter, ResourceTopic)
	kept, denied := split(req.Topics, func(t *kmsg.CreatePartitionsRequestTopic) bool { return alter(t.Topic) },
		func(t *kmsg.CreatePartitionsRequestTopic) kmsg.CreatePartitionsResponseTopic {
			rt := kmsg.NewCreatePartitionsResponseTopic()
			rt.Topic, rt.ErrorCode = t.Topic, errTopic.Code
			return rt
		})
	return pruned(req, denied, func() *kmsg.CreatePartitionsRequest { cp := *req; cp.Topics = kept; return &cp },
		func(r *kmsg.CreatePartitionsResponse, d []kmsg.CreatePartitionsResponseTopic) {
			r.Topics = append(r.Topics, d...)
		})
}

// configResource is how a config resource is authorized: the resource
// type and name checked, and the error of a denial. ok is false for
// resource types not authorized here (the handler refuses them).
func configResource(t kmsg.ConfigResourceType, name string) (ResourceType, string, *kerr.Error, bool) {
	switch t {
	case kmsg.ConfigResourceTypeTopic:
		return ResourceTopic, name, errTopic, true
	case kmsg.ConfigResourceTypeGroupConfig:
		return ResourceGroup, name, errGroup, true
	case kmsg.ConfigResourceTypeBroker, kmsg.ConfigResourceTypeBrokerLogger, kmsg.ConfigResourceTypeClientMetrics:
		return ResourceCluster, ClusterName, errCluster, true
	}
	return 0, "", nil, false
}

// configDenied returns the error of a config resource op is denied on,
// or nil.
func configDenied(c *Checker, op Operation, t kmsg.ConfigResourceType, name string) *kerr.Error {
	rt, rn, e, ok := configResource(t, name)
	if !ok || c.Allowed(op, rt, rn) {
		return nil
	}
	return e
}

// DescribeConfigs (API 32): DESCRIBE_CONFIGS on each resource (topic,
// group; the cluster for broker, broker logger and client metrics
// resources), else it answers TOPIC_, GROUP_ or
// CLUSTER_AUTHORIZATION_FAILED.
func DescribeConfigs(c *Checker, _ Env, req *kmsg.DescribeConfigsRequest) *Outcome[*kmsg.DescribeConfigsRequest, *kmsg.DescribeConfigsResponse] {
	kept, denied := split(req.Resources, func(r *kmsg.DescribeConfigsRequestResource) bool {
		return configDenied(c, OpDescribeConfigs, r.ResourceType, r.ResourceName) == nil
	}, func(r *kmsg.DescribeConfigsRequestResource) kmsg.DescribeConfigsResponseResource {
		e := configDenied(c, OpDescribeConfigs, r.ResourceType, r.ResourceName)
		rr := kmsg.NewDescribeConfigsResponseResource()
		rr.ResourceType, rr.ResourceName, rr.ErrorCode, rr.ErrorMessage = r.ResourceType, r.ResourceName, e.Code, message(e)
		return rr
	})
	return pruned(req, denied, func() *kmsg.DescribeConfigsRequest { cp := *req; cp.Resources = kept; return &cp },
		func(r *kmsg.DescribeConfigsResponse, d []kmsg.DescribeConfigsResponseResource) {
			r.Resources = append(r.Resources, d...)
		})
}

// AlterConfigs (API 33): ALTER_CONFIGS on each resource, as
// DescribeConfigs; a denied resource is not changed.
func AlterConfigs(c *Checker, _ Env, req *kmsg.AlterConfigsRequest) *Outcome[*kmsg.AlterConfigsRequest, *kmsg.AlterConfigsResponse] {
	kept, denied := split(req.Resources, func(r *kmsg.AlterConfigsRequestResource) bool {
		return configDenied(c, OpAlterConfigs, r.ResourceType, r.ResourceName) == nil
	}, func(r *kmsg.AlterConfigsRequestResource) kmsg.AlterConfigsResponseResource {
		e := configDenied(c, OpAlterConfigs, r.ResourceType, r.ResourceName)
		rr := kmsg.NewAlterConfigsResponseResource()
		rr.ResourceType, rr.ResourceName, rr.ErrorCode, rr.ErrorMessage = r.ResourceType, r.ResourceName, e.Code, message(e)
		return rr
	})
	return pruned(req, denied, func() *kmsg.AlterConfigsRequest { cp := *req; cp.Resources = kept; return &cp },
		func(r *kmsg.AlterConfigsResponse, d []kmsg.AlterConfigsResponseResource) {
			r.Resources = append(r.Resources, d...)
		})
}

// IncrementalAlterConfigs (API 44): as AlterConfigs.
func IncrementalAlterConfigs(c *Checker, _ Env, req *kmsg.IncrementalAlterConfigsRequest) *Outcome[*kmsg.IncrementalAlterConfigsRequest, *kmsg.IncrementalAlterConfigsResponse] {
	kept, denied := split(req.Resources, func(r *kmsg.IncrementalAlterConfigsRequestResource) bool {
		return configDenied(c, OpAlterConfigs, r.ResourceType, r.ResourceName) == nil
	}, func(r *kmsg.IncrementalAlterConfigsRequestResource) kmsg.IncrementalAlterConfigsResponseResource {
		e := configDenied(c, OpAlterConfigs, r.ResourceType, r.ResourceName)
		rr := kmsg.NewIncrementalAlterConfigsResponseResource()
		rr.ResourceType, rr.ResourceName, rr.ErrorCode, rr.ErrorMessage = r.ResourceType, r.ResourceName, e.Code, message(e)
		return rr
	})
	return pruned(req, denied, func() *kmsg.IncrementalAlterConfigsRequest { cp := *req; cp.Resources = kept; return &cp },
		func(r *kmsg.IncrementalAlterConfigsResponse, d []kmsg.IncrementalAlterConfigsResponseResource) {
			r.Resources = append(r.Resources, d...)
		})
}

// InitProducerID (API 22): a transactional id needs WRITE on it, else
// TRANSACTIONAL_ID_AUTHORIZATION_FAILED; an idempotent producer needs
// IDEMPOTENT_WRITE on the cluster or WRITE on some topic (KIP-679), else
// CLUSTER_AUTHORIZATION_FAILED.
func InitProducerID(c *Checker, _ Env, req *kmsg.InitProducerIDRequest) *Outcome[*kmsg.InitProducerIDRequest, *kmsg.InitProducerIDResponse] {
	var e *kerr.Error
	if req.TransactionalID != nil {
		if !c.Allowed(OpWrite, ResourceTransactionalID, *req.TransactionalID) {
			e = errTxn
		}
	} else if !c.AllowedCluster(OpIdempotentWrite) && !c.AllowedByResourceType(OpWrite, ResourceTopic) {
		e = errCluster
	}
	if e == nil {
		return serve[*kmsg.InitProducerIDRequest, *kmsg.InitProducerIDResponse](req)
	}
	resp := kmsg.NewPtrInitProducerIDResponse()
	resp.ErrorCode, resp.ProducerID, resp.ProducerEpoch = e.Code, -1, -1
	return reject(req, resp)
}

// DescribeLogDirs (API 35): DESCRIBE on the cluster, else no directory is
// listed and the error (version 3 on) is CLUSTER_AUTHORIZATION_FAILED.
func DescribeLogDirs(c *Checker, _ Env, req *kmsg.DescribeLogDirsRequest) *Outcome[*kmsg.DescribeLogDirsRequest, *kmsg.DescribeLogDirsResponse] {
	if c.AllowedCluster(OpDescribe) {
		return serve[*kmsg.DescribeLogDirsRequest, *kmsg.DescribeLogDirsResponse](req)
	}
	resp := kmsg.NewPtrDescribeLogDirsResponse()
	resp.ErrorCode = errCluster.Code
	return reject(req, resp)
}

// ElectLeaders (API 43): ALTER on the cluster, else the top-level error
// (version 1 on) and every partition named answer
// CLUSTER_AUTHORIZATION_FAILED.
func ElectLeaders(c *Checker, _ Env, req *kmsg.ElectLeadersRequest) *Outcome[*kmsg.ElectLeadersRequest, *kmsg.ElectLeadersResponse] {
	if c.AllowedCluster(OpAlter) {
		return serve[*kmsg.ElectLeadersRequest, *kmsg.ElectLeadersResponse](req)
	}
	resp := kmsg.NewPtrElectLeadersResponse()
	resp.ErrorCode = errCluster.Code
	for _, t := range req.Topics {
		rt := kmsg.NewElectLeadersResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewElectLeadersResponseTopicPartition()
			rp.Partition, rp.ErrorCode, rp.ErrorMessage = p, errCluster.Code, message(errCluster)
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return reject(req, resp)
}

// AlterPartitionAssignments (API 45): ALTER on the cluster, else the
// request and every partition answer CLUSTER_AUTHORIZATION_FAILED.
func AlterPartitionAssignments(c *Checker, _ Env, req *kmsg.AlterPartitionAssignmentsRequest) *Outcome[*kmsg.AlterPartitionAssignmentsRequest, *kmsg.AlterPartitionAssignmentsResponse] {
	if c.AllowedCluster(OpAlter) {
		return serve[*kmsg.AlterPartitionAssignmentsRequest, *kmsg.AlterPartitionAssignmentsResponse](req)
	}
	resp := kmsg.NewPtrAlterPartitionAssignmentsResponse()
	resp.ErrorCode, resp.ErrorMessage = errCluster.Code, message(errCluster)
	for _, t := range req.Topics {
		rt := kmsg.NewAlterPartitionAssignmentsResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewAlterPartitionAssignmentsResponseTopicPartition()
			rp.Partition, rp.ErrorCode, rp.ErrorMessage = p.Partition, errCluster.Code, message(errCluster)
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return reject(req, resp)
}

// ListPartitionReassignments (API 46): DESCRIBE on the cluster, else
// CLUSTER_AUTHORIZATION_FAILED.
func ListPartitionReassignments(c *Checker, _ Env, req *kmsg.ListPartitionReassignmentsRequest) *Outcome[*kmsg.ListPartitionReassignmentsRequest, *kmsg.ListPartitionReassignmentsResponse] {
	if c.AllowedCluster(OpDescribe) {
		return serve[*kmsg.ListPartitionReassignmentsRequest, *kmsg.ListPartitionReassignmentsResponse](req)
	}
	resp := kmsg.NewPtrListPartitionReassignmentsResponse()
	resp.ErrorCode, resp.ErrorMessage = errCluster.Code, message(errCluster)
	return reject(req, resp)
}

// DescribeCluster (API 60): no check; the cluster's authorized operations
// when asked (0 without DESCRIBE on the cluster).
func DescribeCluster(c *Checker, _ Env, req *kmsg.DescribeClusterRequest) *Outcome[*kmsg.DescribeClusterRequest, *kmsg.DescribeClusterResponse] {
	o := serve[*kmsg.DescribeClusterRequest, *kmsg.DescribeClusterResponse](req)
	if req.IncludeClusterAuthorizedOperations {
		o.then(func(r *kmsg.DescribeClusterResponse) {
			r.ClusterAuthorizedOperations = 0
			if c.AllowedCluster(OpDescribe) {
				r.ClusterAuthorizedOperations = c.Operations(ResourceCluster, ClusterName)
			}
		})
	}
	return o
}

// clusterOnly is the outcome of a request that needs one operation on the
// cluster and otherwise answers deny.
func clusterOnly[Req kmsg.Request, Resp kmsg.Response](c *Checker, req Req, op Operation, deny func(Resp)) *Outcome[Req, Resp] {
	if c.AllowedCluster(op) {
		return serve[Req, Resp](req)
	}
	resp := req.ResponseKind().(Resp)
	deny(resp)
	return reject(req, resp)
}

// DescribeQuorum (API 55): DESCRIBE on the cluster.
func DescribeQuorum(c *Checker, _ Env, req *kmsg.DescribeQuorumRequest) *Outcome[*kmsg.DescribeQuorumRequest, *kmsg.DescribeQuorumResponse] {
	return clusterOnly(c, req, OpDescribe, func(r *kmsg.DescribeQuorumResponse) {
		r.ErrorCode, r.ErrorMessage = errCluster.Code, message(errCluster)
	})
}

// UpdateFeatures (API 57): ALTER on the cluster.
func UpdateFeatures(c *Checker, _ Env, req *kmsg.UpdateFeaturesRequest) *Outcome[*kmsg.UpdateFeaturesRequest, *kmsg.UpdateFeaturesResponse] {
	return clusterOnly(c, req, OpAlter, func(r *kmsg.UpdateFeaturesResponse) {
		r.ErrorCode, r.ErrorMessage = errCluster.Code, message(errCluster)
	})
}

// AddRaftVoter (API 80): ALTER on the cluster.
func AddRaftVoter(c *Checker, _ Env, req *kmsg.AddRaftVoterRequest) *Outcome[*kmsg.AddRaftVoterRequest, *kmsg.AddRaftVoterResponse] {
	return clusterOnly(c, req, OpAlter, func(r *kmsg.AddRaftVoterResponse) {
		r.ErrorCode, r.ErrorMessage = errCluster.Code, message(errCluster)
	})
}

// RemoveRaftVoter (API 81): ALTER on the cluster.
func RemoveRaftVoter(c *Checker, _ Env, req *kmsg.RemoveRaftVoterRequest) *Outcome[*kmsg.RemoveRaftVoterRequest, *kmsg.RemoveRaftVoterResponse] {
	return clusterOnly(c, req, OpAlter, func(r *kmsg.RemoveRaftVoterResponse) {
		r.ErrorCode, r.ErrorMessage = errCluster.Code, message(errCluster)
	})
}

// AlterPartition (API 56), from partition leaders: CLUSTER_ACTION.
func AlterPartition(c *Checker, _ Env, req *kmsg.AlterPartitionRequest) *Outcome[*kmsg.AlterPartitionRequest, *kmsg.AlterPartitionResponse] {
	return clusterOnly(c, req, OpClusterAction, func(r *kmsg.AlterPartitionResponse) { r.ErrorCode = errCluster.Code })
}

// BrokerRegistration (API 62): CLUSTER_ACTION.
func BrokerRegistration(c *Checker, _ Env, req *kmsg.BrokerRegistrationRequest) *Outcome[*kmsg.BrokerRegistrationRequest, *kmsg.BrokerRegistrationResponse] {
	return clusterOnly(c, req, OpClusterAction, func(r *kmsg.BrokerRegistrationResponse) { r.ErrorCode = errCluster.Code })
}

// BrokerHeartbeat (API 63): CLUSTER_ACTION.
func BrokerHeartbeat(c *Checker, _ Env, req *kmsg.BrokerHeartbeatRequest) *Outcome[*kmsg.BrokerHeartbeatRequest, *kmsg.BrokerHeartbeatResponse] {
	return clusterOnly(c, req, OpClusterAction, func(r *kmsg.BrokerHeartbeatResponse) { r.ErrorCode = errCluster.Code })
}

// UnregisterBroker (API 64), an admin request: ALTER on the cluster.
func UnregisterBroker(c *Checker, _ Env, req *kmsg.UnregisterBrokerRequest) *Outcome[*kmsg.UnregisterBrokerRequest, *kmsg.UnregisterBrokerResponse] {
	return clusterOnly(c, req, OpAlter, func(r *kmsg.UnregisterBrokerResponse) {
		r.ErrorCode, r.ErrorMessage = errCluster.Code, message(errCluster)
	})
}

// AllocateProducerIDs (API 67): CLUSTER_ACTION.
func AllocateProducerIDs(c *Checker, _ Env, req *kmsg.AllocateProducerIDsRequest) *Outcome[*kmsg.AllocateProducerIDsRequest, *kmsg.AllocateProducerIDsResponse] {
	return clusterOnly(c, req, OpClusterAction, func(r *kmsg.AllocateProducerIDsResponse) { r.ErrorCode = errCluster.Code })
}
