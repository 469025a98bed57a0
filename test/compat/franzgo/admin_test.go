package franzgo

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"

	ct "weir/test/compat/internal/compattest"
)

func ptr(s string) *string { return &s }

// topicResult is any kadm per-topic result: they all carry the topic's error.
type topicResult interface {
	kadm.AlterConfigsResponse | kadm.CreatePartitionsResponse | kadm.DeleteTopicResponse
}

// onTopic folds the lookup error of a kadm On call and the topic's own error.
func onTopic[R topicResult](r R, err error) error {
	if err != nil {
		return err
	}
	switch r := any(r).(type) {
	case kadm.AlterConfigsResponse:
		return r.Err
	case kadm.CreatePartitionsResponse:
		return r.Err
	case kadm.DeleteTopicResponse:
		return r.Err
	}
	panic("unreachable: topicResult lists only the types above")
}

// wantConfig waits until the broker describes config name of topic with the
// given value and source.
func wantConfig(t *testing.T, adm *kadm.Client, topic, name, value, source string) {
	t.Helper()
	ct.Eventually(t, 15*time.Second, func() error {
		rcs, err := adm.DescribeTopicConfigs(ct.Ctx(t, 5*time.Second), topic)
		if err != nil {
			return err
		}
		rc, err := rcs.On(topic, nil)
		if err == nil {
			err = rc.Err
		}
		if err != nil {
			return err
		}
		for _, c := range rc.Configs {
			if c.Key == name {
				if c.MaybeValue() != value || c.Source.String() != source {
					return fmt.Errorf("%s = %q (%s), want %q (%s)", name, c.MaybeValue(), c.Source, value, source)
				}
				return nil
			}
		}
		return fmt.Errorf("config %s not described for %s", name, topic)
	})
}

func TestAdminTopicLifecycle(t *testing.T) {
	adm := ct.Admin(t)
	topic := ct.Topic(t, adm, "admin", 3, map[string]*string{"retention.ms": ptr("3600000")})

	listed, err := adm.ListTopics(ct.Ctx(t, 15*time.Second))
	if err != nil {
		t.Fatalf("list topics: %v", err)
	}
	td, ok := listed[topic]
	if !ok {
		t.Fatalf("created topic %s missing from ListTopics (%d topics listed)", topic, len(listed))
	}
	if td.ID == (kadm.TopicID{}) {
		t.Errorf("topic %s listed with a zero topic id", topic)
	}
	if td.IsInternal {
		t.Errorf("topic %s listed as internal", topic)
	}

	wantConfig(t, adm, topic, "retention.ms", "3600000", "DYNAMIC_TOPIC_CONFIG")
	wantConfig(t, adm, topic, "cleanup.policy", "delete", "DEFAULT_CONFIG")

	alter := []kadm.AlterConfig{
		{Op: kadm.SetConfig, Name: "retention.ms", Value: ptr("7200000")},
		{Op: kadm.SetConfig, Name: "max.message.bytes", Value: ptr("2097152")},
	}
	resps, err := adm.AlterTopicConfigs(ct.Ctx(t, 15*time.Second), alter, topic)
	if err == nil {
		err = onTopic(resps.On(topic, nil))
	}
	if err != nil {
		t.Fatalf("alter configs: %v", err)
	}
	// Brokers apply committed config changes asynchronously: read until they show.
	wantConfig(t, adm, topic, "retention.ms", "7200000", "DYNAMIC_TOPIC_CONFIG")
	wantConfig(t, adm, topic, "max.message.bytes", "2097152", "DYNAMIC_TOPIC_CONFIG")

	resps, err = adm.AlterTopicConfigs(ct.Ctx(t, 15*time.Second),
		[]kadm.AlterConfig{{Op: kadm.DeleteConfig, Name: "retention.ms"}}, topic)
	if err == nil {
		err = onTopic(resps.On(topic, nil))
	}
	if err != nil {
		t.Fatalf("delete config: %v", err)
	}
	wantConfig(t, adm, topic, "retention.ms", "604800000", "DEFAULT_CONFIG")

	bad, err := adm.AlterTopicConfigs(ct.Ctx(t, 15*time.Second),
		[]kadm.AlterConfig{{Op: kadm.SetConfig, Name: "no.such.config", Value: ptr("1")}}, topic)
	if err == nil {
		err = onTopic(bad.On(topic, nil))
	}
	if !errors.Is(err, kerr.InvalidConfig) {
		t.Errorf("setting an unknown config: err %v, want INVALID_CONFIG", err)
	}

	cp, err := adm.CreatePartitions(ct.Ctx(t, 15*time.Second), 2, topic)
	if err == nil {
		err = onTopic(cp.On(topic, nil))
	}
	if err != nil {
		t.Fatalf("create partitions: %v", err)
	}
	ct.WaitLeaders(t, adm, topic, 5)

	dup, err := adm.CreateTopic(ct.Ctx(t, 15*time.Second), 1, 1, nil, topic)
	if err == nil {
		err = dup.Err
	}
	if !errors.Is(err, kerr.TopicAlreadyExists) {
		t.Errorf("creating %s twice: err %v, want TOPIC_ALREADY_EXISTS", topic, err)
	}

	del, err := adm.DeleteTopics(ct.Ctx(t, 15*time.Second), topic)
	if err == nil {
		err = onTopic(del.On(topic, nil))
	}
	if err != nil {
		t.Fatalf("delete topic: %v", err)
	}
	ct.Eventually(t, 30*time.Second, func() error {
		listed, err := adm.ListTopics(ct.Ctx(t, 5*time.Second))
		if err != nil {
			return err
		}
		if _, ok := listed[topic]; ok {
			return fmt.Errorf("topic %s still listed after delete", topic)
		}
		return nil
	})

	gone, err := adm.DeleteTopics(ct.Ctx(t, 15*time.Second), topic)
	if err == nil {
		err = onTopic(gone.On(topic, nil))
	}
	if !errors.Is(err, kerr.UnknownTopicOrPartition) {
		t.Errorf("deleting a deleted topic: err %v, want UNKNOWN_TOPIC_OR_PARTITION", err)
	}
}
