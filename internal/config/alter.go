package config

import (
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Ops of IncrementalAlterConfigs.
const (
	OpSet      = kmsg.IncrementalAlterConfigOpSet      // 0
	OpDelete   = kmsg.IncrementalAlterConfigOpDelete   // 1
	OpAppend   = kmsg.IncrementalAlterConfigOpAppend   // 2
	OpSubtract = kmsg.IncrementalAlterConfigOpSubtract // 3
)

// IncrementalOp is one config change of an IncrementalAlterConfigs
// resource.
type IncrementalOp = kmsg.IncrementalAlterConfigsRequestResourceConfig

// AlterEntry is one config of a legacy AlterConfigs resource.
type AlterEntry = kmsg.AlterConfigsRequestResourceConfig

// These functions are pure: they take a resource's current dynamic
// overrides and the request's entries and return the overrides to store,
// or the error for that resource. Storing the result, ValidateOnly, topic
// existence and authorization are the caller's. Inputs are never
// modified.

// IncrementalAlterTopic applies IncrementalAlterConfigs ops to a topic's
// overrides, checked as Kafka checks them: duplicate names and null
// values for SET, APPEND and SUBTRACT are INVALID_REQUEST; APPEND or
// SUBTRACT on a config that is not a LIST, an unknown name and a bad value
// are INVALID_CONFIG. An existing topic that also fails validation reports
// the validation error: call this before checking existence.
func (b *Broker) IncrementalAlterTopic(current map[string]string, ops []IncrementalOp) (map[string]string, *Error) {
	if e := checkOps(ops); e != nil {
		return nil, e
	}
	next := maps.Clone(current)
	if next == nil {
		next = map[string]string{}
	}
	// The controller starts a list from the stored value or, when none,
	// the topic config's own default, ignoring empty items.
	e := applyOps(next, ops, func(op IncrementalOp, old string, set bool) ([]string, *Error) {
		d, ok := topicDefs.get(op.Name)
		if !ok || d.Type != List {
			return nil, invalidConfig("Can't " + opName(op.Op) + " to key " + op.Name + " because its type is not LIST.")
		}
		if !set {
			old = d.def.String()
		}
		return slices.DeleteFunc(strings.Split(old, ","), func(s string) bool { return s == "" }), nil
	})
	if e != nil {
		return nil, e
	}
	if e := b.ValidateTopicOverrides(next); e != nil {
		return nil, e
	}
	return next, nil
}

// AlterTopic applies a legacy AlterConfigs resource: the entries replace
// every override of the topic.
func (b *Broker) AlterTopic(entries []AlterEntry) (map[string]string, *Error) {
	next, e := alterEntries(entries)
	if e != nil {
		return nil, e
	}
	if e := b.ValidateTopicOverrides(next); e != nil {
		return nil, e
	}
	return next, nil
}

// CreateTopicOverrides validates the configs of a CreateTopics topic and
// returns them as overrides. A repeated name keeps its last value; a null
// value is INVALID_CONFIG, as the controller answers.
func (b *Broker) CreateTopicOverrides(configs []kmsg.CreateTopicsRequestTopicConfig) (map[string]string, *Error) {
	next := make(map[string]string, len(configs))
	var nulls []string
	for _, c := range configs {
		if c.Value == nil {
			nulls = append(nulls, c.Name)
			continue
		}
		next[c.Name] = *c.Value
	}
	if len(nulls) > 0 {
		return nil, invalidConfig("Null value not supported for topic configs: " + strings.Join(nulls, ","))
	}
	if e := b.ValidateTopicOverrides(next); e != nil {
		return nil, e
	}
	return next, nil
}

// IncrementalAlterBroker applies IncrementalAlterConfigs ops to the
// dynamic broker configs named by resourceName: "" for the cluster-wide
// defaults, this node's id for this node. It returns the new overrides of
// that level. As in Kafka, failures on a BROKER resource are
// INVALID_REQUEST (read-only configs, bad values, a foreign node id),
// except APPEND or SUBTRACT on an unknown or non-LIST config, which is
// INVALID_CONFIG. Names Kafka does not know are accepted and stored, as
// Kafka keeps custom dynamic broker configs.
func (b *Broker) IncrementalAlterBroker(resourceName string, ops []IncrementalOp) (map[string]string, *Error) {
	// Kafka's order: names and nulls, then the resource name, then ops.
	if e := checkOpNames(ops); e != nil {
		return nil, e
	}
	if e := b.checkBrokerName(resourceName); e != nil {
		return nil, e
	}
	if e := checkOpTypes(ops); e != nil {
		return nil, e
	}
	perNode := resourceName != ""
	next, e := applyBrokerOps(b.DynamicConfigs(perNode), ops)
	if e != nil {
		return nil, e
	}
	if e := b.checkBrokerChange(next, perNode); e != nil {
		return nil, e
	}
	return next, nil
}

// MergeBrokerOps is IncrementalAlterBroker as the active controller
// decides it: the operations go over current, the level's overrides as
// the controller holds them, rather than this node's copy, and the
// resource may name any node (the broker that took the request checked
// that it names that broker). The result is checked as a whole against
// this node's static configs for the cluster-wide level and this node's
// own level, value by value for another node's.
func (b *Broker) MergeBrokerOps(resourceName string, current map[string]string, ops []IncrementalOp) (map[string]string, *Error) {
	if e := checkOps(ops); e != nil {
		return nil, e
	}
	next, e := applyBrokerOps(maps.Clone(current), ops)
	if e != nil {
		return nil, e
	}
	return next, b.checkBrokerLevel(resourceName, next)
}

// ReplaceBroker is AlterBroker as the active controller decides it, for a
// resource naming any node: the entries become the level's overrides.
func (b *Broker) ReplaceBroker(resourceName string, entries []AlterEntry) (map[string]string, *Error) {
	next, e := alterEntries(entries)
	if e != nil {
		return nil, e
	}
	return next, b.checkBrokerLevel(resourceName, next)
}

// checkBrokerLevel checks the new overrides of the level resourceName
// names: in full for the cluster-wide level and this node's, value by
// value for another node's, whose static configs this node does not know.
func (b *Broker) checkBrokerLevel(resourceName string, next map[string]string) *Error {
	if resourceName != "" && resourceName != itoa(int64(b.NodeID())) {
		if _, err := strconv.ParseInt(resourceName, 10, 32); err != nil {
			return invalidRequest("Node id must be an integer, but it is: " + resourceName)
		}
		return checkDynamicBroker(next, true)
	}
	return b.checkBrokerChange(next, resourceName != "")
}

// applyBrokerOps applies ops to a level's overrides (next, modified and
// returned). A list starts from the stored value or, when none, the
// broker config's non-null default, split as Java splits.
func applyBrokerOps(next map[string]string, ops []IncrementalOp) (map[string]string, *Error) {
	if next == nil {
		next = map[string]string{}
	}
	e := applyOps(next, ops, func(op IncrementalOp, old string, set bool) ([]string, *Error) {
		d, ok := brokerDefs.get(op.Name)
		if !ok {
			return nil, invalidConfig("Unknown config name: " + op.Name)
		}
		if d.Type != List {
			return nil, invalidConfig("Config value " + strings.ToLower(opName(op.Op)) + " is not allowed for config key: " + op.Name)
		}
		if !set && !d.def.IsNull() {
			old, set = d.def.String(), true
		}
		if op.Op == OpAppend && (!set || old == "") {
			return nil, nil
		}
		return javaSplit(old), nil
	})
	if e != nil {
		return nil, e
	}
	return next, nil
}

// AlterBroker applies a legacy AlterConfigs resource to the dynamic broker
// configs of resourceName: the entries replace every override of that
// level.
func (b *Broker) AlterBroker(resourceName string, entries []AlterEntry) (map[string]string, *Error) {
	next, e := alterEntries(entries)
	if e != nil {
		return nil, e
	}
	if e := b.checkBrokerName(resourceName); e != nil {
		return nil, e
	}
	if e := b.checkBrokerChange(next, resourceName != ""); e != nil {
		return nil, e
	}
	return next, nil
}

// applyOps applies ops in order to next. For APPEND and SUBTRACT, start
// checks the key and returns the list to start from (old is the current
// value when set).
func applyOps(next map[string]string, ops []IncrementalOp, start func(op IncrementalOp, old string, set bool) ([]string, *Error)) *Error {
	for _, op := range ops {
		switch op.Op {
		case OpSet:
			next[op.Name] = *op.Value
		case OpDelete:
			delete(next, op.Name)
		case OpAppend, OpSubtract:
			old, set := next[op.Name]
			parts, e := start(op, old, set)
			if e != nil {
				return e
			}
			for _, item := range javaSplit(*op.Value) {
				i := slices.Index(parts, item)
				switch {
				case op.Op == OpAppend && i < 0:
					parts = append(parts, item)
				case op.Op == OpSubtract && i >= 0:
					parts = slices.Delete(parts, i, i+1)
				}
			}
			next[op.Name] = strings.Join(parts, ",")
		}
	}
	return nil
}

// checkBrokerName accepts "" and this node's id.
func (b *Broker) checkBrokerName(name string) *Error {
	if name == "" {
		return nil
	}
	id, err := strconv.ParseInt(name, 10, 32)
	if err != nil {
		return invalidRequest("Node id must be an integer, but it is: " + name)
	}
	if int32(id) != b.NodeID() {
		return invalidRequest("Unexpected broker id, expected " + itoa(int64(b.NodeID())) + ", but received " + name)
	}
	return nil
}

// checkBrokerChange validates a level's complete new dynamic overrides:
// each entry on its own, then the configuration they would produce.
func (b *Broker) checkBrokerChange(next map[string]string, perNode bool) *Error {
	if e := checkDynamicBroker(next, perNode); e != nil {
		return e
	}
	nb := &Broker{static: b.static, dynDefault: b.dynDefault, dynNode: b.dynNode}
	if perNode {
		nb.dynNode = next
	} else {
		nb.dynDefault = next
	}
	if err := nb.resolve(); err != nil {
		return invalidRequest(err.Error())
	}
	if cleanerChanged(b, nb) {
		return checkCleanerChange(b, nb)
	}
	return nil
}

// checkDynamicBroker is DynamicBrokerConfig.validateConfigs: read-only
// names first, all of them in one message, then names only a node may
// set (keystores and truststores, as in Kafka), then each value. Unknown
// names are allowed.
func checkDynamicBroker(props map[string]string, perNode bool) *Error {
	var readOnly, nodeOnly []string
	for name := range props {
		base := name
		if _, _, b, ok := splitListenerKey(name); ok {
			base = b
		}
		if d, ok := brokerDefs.get(base); ok && !d.Dynamic {
			readOnly = append(readOnly, name)
		}
		if strings.HasPrefix(base, "ssl.keystore.") || strings.HasPrefix(base, "ssl.truststore.") || base == SslKeyPassword {
			nodeOnly = append(nodeOnly, name)
		}
	}
	if len(readOnly) > 0 {
		slices.Sort(readOnly)
		return invalidRequest("Cannot update these configs dynamically: [" + strings.Join(readOnly, ", ") + "]")
	}
	if len(nodeOnly) > 0 && !perNode {
		slices.Sort(nodeOnly)
		return invalidRequest("Cannot update these configs at default cluster level, broker id must be specified: [" + strings.Join(nodeOnly, ", ") + "]")
	}
	for _, d := range brokerDefs.list {
		if raw, ok := props[d.Name]; ok {
			if _, msg := d.parse(raw); msg != "" {
				return invalidRequest(msg)
			}
		}
	}
	if errs := checkListenerKeys(props); len(errs) > 0 {
		return invalidRequest(errs[0].Error())
	}
	return nil
}

// checkOps is the broker's preprocessing of a resource: unique names,
// values present unless deleting, known op types.
func checkOps(ops []IncrementalOp) *Error {
	if e := checkOpNames(ops); e != nil {
		return e
	}
	return checkOpTypes(ops)
}

// checkOpNames checks that names are unique and that only DELETE goes
// without a value.
func checkOpNames(ops []IncrementalOp) *Error {
	seen := make(map[string]bool, len(ops))
	for _, op := range ops {
		if seen[op.Name] {
			return invalidRequest("Error due to duplicate config keys")
		}
		seen[op.Name] = true
	}
	var nulls []string
	for _, op := range ops {
		if op.Op != OpDelete && op.Value == nil {
			nulls = append(nulls, op.Name)
		}
	}
	if len(nulls) > 0 {
		return invalidRequest("Null value not supported for : " + strings.Join(nulls, ", "))
	}
	return nil
}

func checkOpTypes(ops []IncrementalOp) *Error {
	for _, op := range ops {
		if op.Op < OpSet || op.Op > OpSubtract {
			return invalidRequest("Unknown operations type " + strconv.Itoa(int(op.Op)))
		}
	}
	return nil
}

// alterEntries checks a legacy AlterConfigs resource's entries and
// returns them as a map.
func alterEntries(entries []AlterEntry) (map[string]string, *Error) {
	next := make(map[string]string, len(entries))
	var nulls []string
	for _, c := range entries {
		if _, dup := next[c.Name]; dup {
			return nil, invalidRequest("Error due to duplicate config keys")
		}
		next[c.Name] = ""
		if c.Value == nil {
			nulls = append(nulls, c.Name)
			continue
		}
		next[c.Name] = *c.Value
	}
	if len(nulls) > 0 {
		return nil, invalidRequest("Null value not supported for : " + strings.Join(nulls, ", "))
	}
	return next, nil
}

func opName(op kmsg.IncrementalAlterConfigOp) string {
	switch op {
	case OpSet:
		return "SET"
	case OpDelete:
		return "DELETE"
	case OpAppend:
		return "APPEND"
	case OpSubtract:
		return "SUBTRACT"
	}
	return "UNKNOWN"
}

// javaSplit is Java's String.split(","): trailing empty strings are
// dropped, and a string without a comma is returned whole (so "" gives
// [""]).
func javaSplit(s string) []string {
	parts := strings.Split(s, ",")
	if len(parts) == 1 {
		return parts
	}
	for len(parts) > 0 && parts[len(parts)-1] == "" {
		parts = parts[:len(parts)-1]
	}
	return parts
}
