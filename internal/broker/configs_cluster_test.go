package broker

import (
	"context"
	"fmt"
	"maps"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// configChange is one config request on topic, built by a test case.
type configChange func(topic string) kmsg.Request

func legacyAlter(kv ...string) configChange {
	return func(topic string) kmsg.Request {
		req := kmsg.NewPtrAlterConfigsRequest()
		r := kmsg.NewAlterConfigsRequestResource()
		r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeTopic, topic
		for i := 0; i+1 < len(kv); i += 2 {
			e := kmsg.NewAlterConfigsRequestResourceConfig()
			e.Name, e.Value = kv[i], kmsg.StringPtr(kv[i+1])
			r.Configs = append(r.Configs, e)
		}
		req.Resources = append(req.Resources, r)
		return req
	}
}

func incrementalAlter(op kmsg.IncrementalAlterConfigOp, key, value string) configChange {
	return func(topic string) kmsg.Request {
		req := kmsg.NewPtrIncrementalAlterConfigsRequest()
		r := kmsg.NewIncrementalAlterConfigsRequestResource()
		r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeTopic, topic
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Op, c.Name, c.Value = op, key, kmsg.StringPtr(value)
		r.Configs = append(r.Configs, c)
		req.Resources = append(req.Resources, r)
		return req
	}
}

// configAnswer is the first resource's error of a config response.
func configAnswer(resp kmsg.Response) error {
	switch r := resp.(type) {
	case *kmsg.AlterConfigsResponse:
		return kerr.ErrorForCode(r.Resources[0].ErrorCode)
	case *kmsg.IncrementalAlterConfigsResponse:
		return kerr.ErrorForCode(r.Resources[0].ErrorCode)
	}
	return fmt.Errorf("unexpected %T", resp)
}

// describedOverrides lists a topic's dynamic overrides as node describes
// them.
func describedOverrides(t testing.TB, ctx context.Context, tc *testCluster, node int32, topic string) map[string]string {
	t.Helper()
	c := newClient(t, tc.brokers[node-1].addr)
	req := kmsg.NewPtrDescribeConfigsRequest()
	r := kmsg.NewDescribeConfigsRequestResource()
	r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeTopic, topic
	req.Resources = append(req.Resources, r)
	resp := requestTo[*kmsg.DescribeConfigsResponse](t, ctx, c, node, req)
	if err := kerr.ErrorForCode(resp.Resources[0].ErrorCode); err != nil {
		t.Fatalf("describe %s on %d: %v", topic, node, err)
	}
	out := map[string]string{}
	for _, e := range resp.Resources[0].Configs {
		if e.Source == kmsg.ConfigSourceDynamicTopicConfig && e.Value != nil {
			out[e.Name] = *e.Value
		}
	}
	return out
}

// TestConfigChangesDecidedOnTheController: a config request through
// broker 1 followed at once by one through broker 2 on the same topic,
// each client pinned to one broker as sarama pins them, with both APIs
// in both orders. Broker 2's registry is held back while its request is
// taken, so it answers from a copy that lacks broker 1's change: the
// outcome must still be the two changes applied one after the other to
// the controller's configs (a legacy AlterConfigs removes a key the
// other just added; an incremental change keeps what a legacy one set),
// broker 2 must answer only once it has applied the outcome (its
// describe shows it at once) and without waiting out a timeout.
func TestConfigChangesDecidedOnTheController(t *testing.T) {
	tc := startCluster(t, 3)
	ctx := testCtx(t)
	c1 := newClient(t, tc.brokers[0].addr)
	c2 := newClient(t, tc.brokers[1].addr)
	const (
		set = kmsg.IncrementalAlterConfigOpSet
		app = kmsg.IncrementalAlterConfigOpAppend
	)
	for i, tcase := range []struct {
		name          string
		first, second configChange
		want          map[string]string
	}{
		{"legacy then incremental", legacyAlter("retention.ms", "100000"), incrementalAlter(set, "segment.ms", "200000"),
			map[string]string{"retention.ms": "100000", "segment.ms": "200000"}},
		{"incremental then legacy", incrementalAlter(set, "segment.ms", "200000"), legacyAlter("retention.ms", "100000"),
			map[string]string{"retention.ms": "100000"}},
		{"incremental then incremental", incrementalAlter(set, "segment.ms", "200000"), incrementalAlter(app, "cleanup.policy", "compact"),
			map[string]string{"max.message.bytes": "5000", "segment.ms": "200000", "cleanup.policy": "delete,compact"}},
		{"legacy then legacy", legacyAlter("segment.ms", "200000"), legacyAlter("retention.ms", "100000", "max.message.bytes", "6000"),
			map[string]string{"retention.ms": "100000", "max.message.bytes": "6000"}},
	} {
		t.Run(tcase.name, func(t *testing.T) {
			topic := fmt.Sprintf("cfg-%d", i)
			tc.createAssigned(t, ctx, c1, topic, []int32{1, 2, 3})
			if err := configAnswer(requestTo[kmsg.Response](t, ctx, c1, 1, legacyAlter("max.message.bytes", "5000")(topic))); err != nil {
				t.Fatal(err)
			}
			b2 := tc.brokers[1].b
			eventually(t, 10*time.Second, func() error {
				if got := describedOverrides(t, ctx, tc, 2, topic); !maps.Equal(got, map[string]string{"max.message.bytes": "5000"}) {
					return fmt.Errorf("broker 2 has %v", got)
				}
				return nil
			})

			// Broker 2 stops applying metadata: its copy keeps the
			// initial overrides while broker 1 changes them.
			b2.applyMu.Lock()
			held := true
			release := func() {
				if held {
					held = false
					b2.applyMu.Unlock()
				}
			}
			defer release()
			if err := configAnswer(requestTo[kmsg.Response](t, ctx, c1, 1, tcase.first(topic))); err != nil {
				t.Fatalf("first change: %v", err)
			}
			answered := make(chan error, 1)
			start := time.Now()
			go func() {
				resp, err := c2.Broker(2).Request(ctx, tcase.second(topic))
				if err == nil {
					err = configAnswer(resp)
				}
				answered <- err
			}()
			// The controller decides on its own configs: broker 1 and 3
			// get the outcome while broker 2 still holds its old copy.
			eventually(t, 10*time.Second, func() error {
				for _, n := range []int32{1, 3} {
					if got := describedOverrides(t, ctx, tc, n, topic); !maps.Equal(got, tcase.want) {
						return fmt.Errorf("broker %d has %v", n, got)
					}
				}
				return nil
			})
			select {
			case err := <-answered:
				t.Fatalf("broker 2 answered (%v) before it applied the change", err)
			default:
			}
			release()
			select {
			case err := <-answered:
				if err != nil {
					t.Fatalf("second change: %v", err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("broker 2 did not answer within 10 s of applying the change")
			}
			t.Logf("second change answered after %v", time.Since(start))
			if got := describedOverrides(t, ctx, tc, 2, topic); !maps.Equal(got, tcase.want) {
				t.Fatalf("broker 2 answered, then describes %v, want %v", got, tcase.want)
			}
		})
	}
}
