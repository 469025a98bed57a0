package main

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"

	"weir/client"
)

func runTopic(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	subs := map[string]func(context.Context, []string, io.Writer, io.Writer) error{
		"create": topicCreate, "list": topicList, "describe": topicDescribe, "delete": topicDelete, "alter": topicAlter,
	}
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" {
		fmt.Fprintln(stdout, "Usage: weir topic create|list|describe|delete|alter [flags]")
		fmt.Fprintln(stdout, "Run 'weir topic <subcommand> --help' for its flags.")
		if len(args) == 0 {
			return errUsage
		}
		return nil
	}
	sub, ok := subs[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "weir topic: unknown subcommand %q (want create, list, describe, delete or alter)\n", args[0])
		return errUsage
	}
	return sub(ctx, args[1:], stdout, stderr)
}

func newAdmin(cf *clientFlags) (*client.Admin, error) {
	props, err := cf.config()
	if err != nil {
		return nil, err
	}
	return client.NewAdmin(props)
}

// openAdmin returns an admin client and a context bounded by --timeout;
// done releases both.
func openAdmin(ctx context.Context, cf *clientFlags) (*client.Admin, context.Context, func(), error) {
	adm, err := newAdmin(cf)
	if err != nil {
		return nil, nil, nil, err
	}
	ctx, cancel := cf.context(ctx)
	return adm, ctx, func() { cancel(); adm.Close() }, nil
}

func topicCreate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("topic create", "topic create --topic NAME [flags]", stderr)
	cf := addClientFlags(fs, "admin client property")
	name := fs.String("topic", "", "topic to create (required)")
	parts := fs.Int("partitions", -1, "number of partitions (-1: the broker's num.partitions)")
	rf := fs.Int("replication-factor", -1, "replicas per partition (-1: the broker's default)")
	assignment := fs.String("replica-assignment", "", "replicas of each partition, as kafka-topics.sh: partitions separated by commas, broker ids by colons, the preferred leader first (1:2,2:3,3:1); instead of --partitions and --replication-factor")
	configs := kvFlags{}
	fs.Var(configs, "config", "topic config key=value, Kafka names (repeatable)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := requireFlag(fs, "topic", *name); err != nil {
		return err
	}
	spec := client.TopicSpec{Name: *name, Partitions: int32(*parts), ReplicationFactor: int16(*rf), Configs: configs}
	if *assignment != "" {
		if *parts != -1 || *rf != -1 {
			fmt.Fprintln(stderr, "--replica-assignment sets the partitions and replicas: leave out --partitions and --replication-factor")
			return errUsage
		}
		a, err := client.ParseReplicaAssignment(*assignment)
		if err != nil {
			fmt.Fprintf(stderr, "--replica-assignment: %v\n", err)
			return errUsage
		}
		spec.Assignment = a
	}
	adm, ctx, done, err := openAdmin(ctx, cf)
	if err != nil {
		return err
	}
	defer done()
	if err := adm.CreateTopics(ctx, spec); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "Created topic %s.\n", *name)
	return nil
}

func topicList(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("topic list", "topic list [flags]", stderr)
	cf := addClientFlags(fs, "admin client property")
	internal := fs.Bool("include-internal", false, "also list internal topics such as __consumer_offsets")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	adm, ctx, done, err := openAdmin(ctx, cf)
	if err != nil {
		return err
	}
	defer done()
	names, err := adm.ListTopics(ctx)
	if err != nil {
		return err
	}
	for _, n := range names {
		if strings.HasPrefix(n, "__") && !*internal {
			continue
		}
		fmt.Fprintln(stdout, n)
	}
	return nil
}

func topicDescribe(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("topic describe", "topic describe [--topic NAME ...] [flags]", stderr)
	cf := addClientFlags(fs, "admin client property")
	var names listFlags
	fs.Var(&names, "topic", "topic to describe (repeatable; default all)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	adm, ctx, done, err := openAdmin(ctx, cf)
	if err != nil {
		return err
	}
	defer done()
	descs, err := adm.DescribeTopics(ctx, names...)
	if err != nil {
		return err
	}
	sort.Slice(descs, func(i, j int) bool { return descs[i].Name < descs[j].Name })
	failed := false
	for _, d := range descs {
		if d.Err != nil {
			fmt.Fprintf(stderr, "topic %s: %v\n", d.Name, d.Err)
			failed = true
			continue
		}
		cfgs, err := adm.DescribeConfigs(ctx, client.TopicResource, d.Name)
		if err != nil {
			return err
		}
		var overrides []string
		for _, c := range cfgs {
			if c.Source == 1 && c.Value != nil { // DYNAMIC_TOPIC_CONFIG
				overrides = append(overrides, c.Name+"="+*c.Value)
			}
		}
		fmt.Fprintf(stdout, "Topic: %s\tTopicId: %x\tPartitionCount: %d\tConfigs: %s\n", d.Name, d.ID, len(d.Partitions), strings.Join(overrides, ","))
		tw := tabwriter.NewWriter(stdout, 0, 4, 1, ' ', 0)
		for _, p := range d.Partitions {
			fmt.Fprintf(tw, "\tPartition: %d\tLeader: %d\tLeaderEpoch: %d\tReplicas: %s\tIsr: %s\n", p.Partition, p.Leader, p.LeaderEpoch, ints(p.Replicas), ints(p.ISR))
		}
		tw.Flush()
	}
	if failed {
		return fmt.Errorf("some topics could not be described")
	}
	return nil
}

func ints(v []int32) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = fmt.Sprint(x)
	}
	return strings.Join(s, ",")
}

func topicDelete(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("topic delete", "topic delete --topic NAME [flags]", stderr)
	cf := addClientFlags(fs, "admin client property")
	var names listFlags
	fs.Var(&names, "topic", "topic to delete (required, repeatable)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if len(names) == 0 {
		return requireFlag(fs, "topic", "")
	}
	adm, ctx, done, err := openAdmin(ctx, cf)
	if err != nil {
		return err
	}
	defer done()
	if err := adm.DeleteTopics(ctx, names...); err != nil {
		return err
	}
	for _, n := range names {
		fmt.Fprintf(stdout, "Deleted topic %s.\n", n)
	}
	return nil
}

func topicAlter(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("topic alter", "topic alter --topic NAME [--partitions N] [--config k=v] [--delete-config k] [flags]", stderr)
	cf := addClientFlags(fs, "admin client property")
	name := fs.String("topic", "", "topic to alter (required)")
	parts := fs.Int("partitions", 0, "grow the topic to this many partitions")
	set := kvFlags{}
	fs.Var(set, "config", "topic config to set, key=value (repeatable)")
	var del listFlags
	fs.Var(&del, "delete-config", "topic config to reset to its default (repeatable)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := requireFlag(fs, "topic", *name); err != nil {
		return err
	}
	if *parts == 0 && len(set) == 0 && len(del) == 0 {
		fmt.Fprintln(stderr, "nothing to alter: give --partitions, --config or --delete-config")
		return errUsage
	}
	adm, ctx, done, err := openAdmin(ctx, cf)
	if err != nil {
		return err
	}
	defer done()
	if *parts > 0 {
		if err := adm.CreatePartitions(ctx, *name, int32(*parts)); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "Topic %s now has %d partitions.\n", *name, *parts)
	}
	var ops []client.AlterConfigOp
	for k, v := range set {
		ops = append(ops, client.AlterConfigOp{Name: k, Value: &v, Op: 0})
	}
	for _, k := range del {
		ops = append(ops, client.AlterConfigOp{Name: k, Op: 1})
	}
	if len(ops) > 0 {
		if err := adm.AlterConfigs(ctx, client.TopicResource, *name, ops...); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "Updated configs of topic %s.\n", *name)
	}
	return nil
}
