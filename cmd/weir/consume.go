package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"weir/client"
)

func runConsume(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("consume", "consume --topic NAME [flags]", stderr)
	cf := addClientFlags(fs, "consumer property")
	topic := fs.String("topic", "", "topic to read (required)")
	group := fs.String("group", "", "consumer group to join (commits offsets); without it the consumer reads partitions directly")
	fromBeginning := fs.Bool("from-beginning", false, "start from the earliest offset when there is no committed one")
	partition := fs.Int("partition", -1, "read only this partition (without --group)")
	offset := fs.Int64("offset", -1, "start at this offset of --partition (default: earliest with --from-beginning, else latest)")
	maxMessages := fs.Int("max-messages", 0, "exit after this many records (0: no limit)")
	idle := fs.Duration("idle-timeout", 0, "exit when no record arrives for this long (0: wait forever)")
	printKey := fs.Bool("print-key", false, "print each record's key")
	printHeaders := fs.Bool("print-headers", false, "print each record's headers")
	printOffset := fs.Bool("print-offset", false, "print each record's partition and offset")
	printTimestamp := fs.Bool("print-timestamp", false, "print each record's timestamp")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := requireFlag(fs, "topic", *topic); err != nil {
		return err
	}
	if *group != "" && (*partition >= 0 || *offset >= 0) {
		fmt.Fprintln(stderr, "--partition and --offset read partitions directly; they cannot be used with --group")
		return errUsage
	}
	props, err := cf.config()
	if err != nil {
		return err
	}
	if *group != "" {
		props["group.id"] = *group
	}
	if *fromBeginning {
		props["auto.offset.reset"] = "earliest"
	} else if _, set := props["auto.offset.reset"]; !set {
		props["auto.offset.reset"] = "latest"
	}
	c, err := client.NewConsumer(props)
	if err != nil {
		return err
	}
	defer c.Close(context.WithoutCancel(ctx))
	if err := startConsuming(ctx, c, cf, *topic, *group, *partition, *offset, *fromBeginning); err != nil {
		return err
	}
	n := 0
	last := time.Now()
	for *maxMessages == 0 || n < *maxMessages {
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		recs, err := c.Poll(pctx)
		cancel()
		if ctx.Err() != nil {
			break
		}
		if err != nil && !errors.Is(err, context.DeadlineExceeded) {
			return err
		}
		for _, r := range recs {
			if *maxMessages > 0 && n >= *maxMessages {
				break
			}
			printRecord(stdout, r, *printTimestamp, *printOffset, *printHeaders, *printKey)
			n++
		}
		if len(recs) > 0 {
			last = time.Now()
		} else if *idle > 0 && time.Since(last) >= *idle {
			break
		}
	}
	if *group != "" {
		cctx, cancel := cf.context(context.WithoutCancel(ctx))
		defer cancel()
		if err := c.CommitSync(cctx, nil); err != nil {
			fmt.Fprintf(stderr, "commit: %v\n", err)
		}
	}
	fmt.Fprintf(stderr, "Processed a total of %d messages\n", n)
	return nil
}

// startConsuming joins the group, or assigns the topic's partitions and
// seeks as asked.
func startConsuming(ctx context.Context, c *client.Consumer, cf *clientFlags, topic, group string, partition int, offset int64, fromBeginning bool) error {
	if group != "" {
		return c.Subscribe([]string{topic}, nil)
	}
	var tps []client.TopicPartition
	if partition >= 0 {
		tps = []client.TopicPartition{{Topic: topic, Partition: int32(partition)}}
	} else {
		adm, err := newAdmin(cf)
		if err != nil {
			return err
		}
		defer adm.Close()
		actx, cancel := cf.context(ctx)
		defer cancel()
		descs, err := adm.DescribeTopics(actx, topic)
		if err != nil {
			return err
		}
		if len(descs) != 1 || descs[0].Err != nil {
			return fmt.Errorf("topic %s: %v", topic, descs[0].Err)
		}
		for _, p := range descs[0].Partitions {
			tps = append(tps, client.TopicPartition{Topic: topic, Partition: p.Partition})
		}
	}
	if err := c.Assign(tps); err != nil {
		return err
	}
	sctx, cancel := cf.context(ctx)
	defer cancel()
	switch {
	case offset >= 0:
		for _, tp := range tps {
			if err := c.Seek(tp, offset); err != nil {
				return err
			}
		}
	case fromBeginning:
		return c.SeekToBeginning(sctx, tps...)
	default:
		return c.SeekToEnd(sctx, tps...)
	}
	return nil
}

func printRecord(w io.Writer, r *client.ConsumerRecord, ts, off, headers, key bool) {
	var b strings.Builder
	if ts {
		fmt.Fprintf(&b, "CreateTime:%d\t", r.Timestamp.UnixMilli())
	}
	if off {
		fmt.Fprintf(&b, "Partition:%d\tOffset:%d\t", r.Partition, r.Offset)
	}
	if headers {
		hs := make([]string, len(r.Headers))
		for i, h := range r.Headers {
			hs[i] = h.Key + ":" + string(h.Value)
		}
		if len(hs) == 0 {
			b.WriteString("NO_HEADERS\t")
		} else {
			b.WriteString(strings.Join(hs, ",") + "\t")
		}
	}
	if key {
		if r.Key == nil {
			b.WriteString("null\t")
		} else {
			b.Write(r.Key)
			b.WriteByte('\t')
		}
	}
	b.Write(r.Value)
	b.WriteByte('\n')
	io.WriteString(w, b.String())
}
