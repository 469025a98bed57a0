package main

import (
	"context"
	"flag"
	"fmt"
	"maps"
	"strings"
	"time"

	"weir/internal/config"
)

// kvFlags collects repeated key=value flags.
type kvFlags map[string]string

func (kv kvFlags) String() string {
	var parts []string
	for k, v := range kv {
		parts = append(parts, k+"="+v)
	}
	return strings.Join(parts, ",")
}

func (kv kvFlags) Set(s string) error {
	k, v, ok := strings.Cut(s, "=")
	if !ok || k == "" {
		return fmt.Errorf("want key=value, got %q", s)
	}
	kv[k] = v
	return nil
}

// listFlags collects repeated string flags.
type listFlags []string

func (l *listFlags) String() string     { return strings.Join(*l, ",") }
func (l *listFlags) Set(s string) error { *l = append(*l, s); return nil }

// clientFlags are the flags every client tool shares.
type clientFlags struct {
	bootstrap     string
	props         kvFlags
	commandConfig string
	timeout       time.Duration
}

func addClientFlags(fs *flag.FlagSet, propsHelp string) *clientFlags {
	c := &clientFlags{props: kvFlags{}}
	fs.StringVar(&c.bootstrap, "bootstrap-server", "127.0.0.1:9092", "broker(s) to connect to, host:port[,host:port...]")
	fs.Var(c.props, "property", propsHelp+" (key=value, Kafka property names; repeatable; wins over --command-config)")
	fs.StringVar(&c.commandConfig, "command-config", "", "properties file of client configs, as Kafka's tools take: security.protocol, sasl.mechanism, sasl.jaas.config, ssl.* ...")
	fs.DurationVar(&c.timeout, "timeout", 30*time.Second, "how long to wait for the cluster")
	return c
}

// config returns the client properties: --command-config's, then
// --property's, with bootstrap.servers from --bootstrap-server.
func (c *clientFlags) config() (map[string]string, error) {
	out := map[string]string{}
	if c.commandConfig != "" {
		p, err := config.ReadPropertiesFile(c.commandConfig)
		if err != nil {
			return nil, fmt.Errorf("--command-config: %w", err)
		}
		maps.Copy(out, p.Map())
	}
	maps.Copy(out, c.props)
	out["bootstrap.servers"] = c.bootstrap
	return out, nil
}

func (c *clientFlags) context(parent context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(parent, c.timeout)
}

// requireFlag reports a missing required flag the way flag errors read.
func requireFlag(fs *flag.FlagSet, name, value string) error {
	if value == "" {
		fmt.Fprintf(fs.Output(), "missing required flag -%s\n", name)
		fs.Usage()
		return errUsage
	}
	return nil
}
