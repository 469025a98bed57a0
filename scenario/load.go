package scenario

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"weir/client"
)

// groupResource is the config resource type of a group (KIP-848/932
// group configs), absent from client's named constants.
const groupResource client.ConfigResourceType = 32

// createTopic creates the topic and sets the share group to start from the
// earliest offset: the backlog is produced before the consumer joins, and
// share groups start at the latest offset by default.
func createTopic(ctx context.Context, adm *client.Admin, cfg Config) error {
	spec := client.TopicSpec{Name: cfg.Topic, Partitions: int32(cfg.Partitions), ReplicationFactor: int16(cfg.ReplicationFactor)}
	for {
		err := adm.CreateTopics(ctx, spec)
		if err == nil || errors.Is(err, kerr.TopicAlreadyExists) {
			break
		}
		// A cluster started moments ago may not have registered all its
		// brokers yet: wait for them until ctx ends.
		if !errors.Is(err, kerr.InvalidReplicationFactor) {
			return fmt.Errorf("create topic %s: %w", cfg.Topic, err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("create topic %s: %w", cfg.Topic, err)
		case <-time.After(200 * time.Millisecond):
		}
	}
	earliest := "earliest"
	if err := adm.AlterConfigs(ctx, groupResource, cfg.Group, client.AlterConfigOp{Name: "share.auto.offset.reset", Value: &earliest}); err != nil {
		return fmt.Errorf("set share.auto.offset.reset on group %s: %w", cfg.Group, err)
	}
	return nil
}

// load produces counts[p] records to each partition p with the weir
// producer, in big batches (nothing measures the load, so it is tuned only
// to be quick), and returns when every record is acknowledged.
func load(ctx context.Context, cfg Config, counts []int64) error {
	p, err := client.NewProducer(map[string]string{
		"bootstrap.servers": cfg.Bootstrap,
		"acks":              "1",
		"linger.ms":         "20",
		"batch.size":        "262144",
		"max.request.size":  "4194304",
		"buffer.memory":     "67108864",
		"compression.type":  "none",
	}, client.WithLogger(cfg.Logger))
	if err != nil {
		return err
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		p.Close(cctx)
	}()
	value := make([]byte, cfg.ValueSize)
	for i := range value {
		value[i] = 'a' + byte(i%26)
	}
	var (
		mu       sync.Mutex
		firstErr error
	)
	done := func(_ client.RecordMetadata, err error) {
		if err != nil {
			mu.Lock()
			if firstErr == nil {
				firstErr = err
			}
			mu.Unlock()
		}
	}
	for part, n := range counts {
		for range n {
			r := &client.Record{Topic: cfg.Topic, Partition: client.PartitionOf(int32(part)), Value: value}
			p.Send(ctx, r, done)
		}
		if err := ctx.Err(); err != nil {
			return err
		}
	}
	if err := p.Flush(ctx); err != nil {
		return err
	}
	mu.Lock()
	defer mu.Unlock()
	return firstErr
}

// setBrokerConfigs sets dynamic broker configs as cluster defaults and
// returns the function that deletes them again.
func setBrokerConfigs(ctx context.Context, adm *client.Admin, kv map[string]string) (func(context.Context) error, error) {
	var set, del []client.AlterConfigOp
	for _, k := range slices.Sorted(maps.Keys(kv)) {
		v := kv[k]
		set = append(set, client.AlterConfigOp{Name: k, Value: &v})
		del = append(del, client.AlterConfigOp{Name: k, Op: 1})
	}
	if err := adm.AlterConfigs(ctx, client.BrokerResource, "", set...); err != nil {
		return nil, fmt.Errorf("set broker configs %s: %w", joinConfigs(kv), err)
	}
	restore := func(ctx context.Context) error { return adm.AlterConfigs(ctx, client.BrokerResource, "", del...) }
	if err := awaitBrokerConfigs(ctx, adm, kv); err != nil {
		rctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		return nil, errors.Join(err, restore(rctx))
	}
	return restore, nil
}

// awaitBrokerConfigs waits until the cluster defaults read back with the
// values set. It reads the cluster-default resource (""), which any broker
// answers from its copy of the metadata; a per-broker check would need
// DescribeConfigs sent to each broker, which client.Admin does not do.
func awaitBrokerConfigs(ctx context.Context, adm *client.Admin, kv map[string]string) error {
	for {
		entries, err := adm.DescribeConfigs(ctx, client.BrokerResource, "")
		if err == nil {
			have := map[string]string{}
			for _, e := range entries {
				if e.Value != nil {
					have[e.Name] = *e.Value
				}
			}
			for k, v := range kv {
				if have[k] != v && err == nil {
					err = fmt.Errorf("%s reads back as %q", k, have[k])
				}
			}
			if err == nil {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("broker configs %s not applied: %w", joinConfigs(kv), err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// joinConfigs prints k=v pairs sorted by key, "none" for none.
func joinConfigs(kv map[string]string) string {
	if len(kv) == 0 {
		return "none"
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(kv)) {
		parts = append(parts, k+"="+kv[k])
	}
	return strings.Join(parts, ",")
}

// leaders returns each partition's leader, -1 where unknown. The drain's
// shape depends on it: a broker whose partitions are all drained is where
// a round-robin consumer waits.
func leaders(ctx context.Context, adm *client.Admin, topic string, partitions int) []int32 {
	out := make([]int32, partitions)
	for i := range out {
		out[i] = -1
	}
	descs, err := adm.DescribeTopics(ctx, topic)
	if err != nil || len(descs) != 1 {
		return out
	}
	for _, p := range descs[0].Partitions {
		if p.Err == nil && int(p.Partition) < partitions && p.Partition >= 0 {
			out[p.Partition] = p.Leader
		}
	}
	return out
}

// backlog returns each partition's records between its earliest and
// latest offsets: what the share group has to drain.
// loadedBacklog is backlog once every partition's backlog has reached the
// count loaded into it, polled until ctx ends (then the last reading and
// an error).
func loadedBacklog(ctx context.Context, adm *client.Admin, topic string, counts []int64) ([]int64, error) {
	return waitLoaded(ctx, topic, counts, 20*time.Millisecond, func(ctx context.Context) ([]int64, error) {
		return backlog(ctx, adm, topic, len(counts))
	})
}

// waitLoaded reads the backlog every interval until each partition's
// covers counts.
func waitLoaded(ctx context.Context, topic string, counts []int64, interval time.Duration, read func(context.Context) ([]int64, error)) ([]int64, error) {
	for {
		bl, err := read(ctx)
		if err != nil {
			return nil, err
		}
		short := -1
		for p, n := range bl {
			if n < counts[p] {
				short = p
				break
			}
		}
		if short < 0 {
			return bl, nil
		}
		select {
		case <-ctx.Done():
			return bl, fmt.Errorf("partition %d of %s shows %d of the %d records loaded: %w", short, topic, bl[short], counts[short], ctx.Err())
		case <-time.After(interval):
		}
	}
}

func backlog(ctx context.Context, adm *client.Admin, topic string, partitions int) ([]int64, error) {
	hi, err := adm.ListOffsets(ctx, topic, client.OffsetLatest)
	if err != nil {
		return nil, err
	}
	lo, err := adm.ListOffsets(ctx, topic, client.OffsetEarliest)
	if err != nil {
		return nil, err
	}
	out := make([]int64, partitions)
	for p := range out {
		h, l := hi[int32(p)], lo[int32(p)]
		if h.Err != nil || l.Err != nil {
			return nil, fmt.Errorf("list offsets of %s-%d: %w", topic, p, errors.Join(h.Err, l.Err))
		}
		out[p] = h.Offset - l.Offset
	}
	return out, nil
}
