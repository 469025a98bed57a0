package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"weir/internal/auth"
	"weir/internal/config"
	"weir/internal/console"
)

// defaultConsole is where a single node serves its console unless told
// otherwise.
const defaultConsole = "127.0.0.1:8080"

// consoleFlags are serve's web console flags.
type consoleFlags struct {
	listen  *string
	metrics *string
	hosts   *string
}

func (c consoleFlags) register(fs interface {
	String(name, value, usage string) *string
}) consoleFlags {
	c.listen = fs.String("console-listen", "", `host:port serving the web console (default `+defaultConsole+` for a single node, if free; off in a cluster); "off" turns it off`)
	c.metrics = fs.String("console-metrics", "", "other brokers' metrics endpoints for the console's rates, id=host:port,... (each broker's --metrics-listen)")
	c.hosts = fs.String("console-host", "", "extra Host names the console answers to, comma-separated (needed when it listens beyond loopback)")
	return c
}

// consoleAddr decides where the console listens: explicit (must bind),
// default (best effort) or nowhere.
func (c consoleFlags) addr(singleNode bool) (addr string, required bool) {
	switch v := strings.TrimSpace(*c.listen); {
	case v == "off":
		return "", false
	case v != "":
		return v, true
	case singleNode:
		return defaultConsole, false
	}
	return "", false
}

// parseMetricsURLs reads id=host:port,... into metrics URLs.
func parseMetricsURLs(s string) (map[int32]string, error) {
	out := map[int32]string{}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		id, addr, ok := strings.Cut(part, "=")
		n, err := strconv.ParseInt(strings.TrimSpace(id), 10, 32)
		if !ok || err != nil || n < 0 {
			return nil, fmt.Errorf("%q is not id=host:port", part)
		}
		if _, _, err := net.SplitHostPort(strings.TrimSpace(addr)); err != nil {
			return nil, fmt.Errorf("%q: %v", part, err)
		}
		out[int32(n)] = "http://" + strings.TrimSpace(addr) + "/metrics"
	}
	return out, nil
}

// runningConsole is a console being served; stop closes it.
type runningConsole struct {
	srv     *http.Server
	con     *console.Console
	closeCl func()
	done    chan struct{}
}

func (r *runningConsole) stop() {
	r.srv.Close()
	<-r.done
	r.con.Close()
	r.closeCl()
}

// startConsole serves the console at addr, talking to the broker at
// bootstrap as a client and reading this node's metrics from reg. A
// default address that is taken is skipped with a warning.
func startConsole(addr string, required bool, settings *config.Broker, bootstrap string, node int32, reg prometheus.Gatherer, flags consoleFlags, logger *slog.Logger, stdout io.Writer) (*runningConsole, error) {
	urls, err := parseMetricsURLs(*flags.metrics)
	if err != nil {
		return nil, fmt.Errorf("invalid -console-metrics: %w", err)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		if !required {
			logger.Warn("web console not started: its default address is taken (set --console-listen)", "addr", addr, "err", err)
			return nil, nil
		}
		return nil, fmt.Errorf("console listener: %w", err)
	}
	var cl console.Cluster
	closeCl := func() {}
	login, err := consoleLogin(settings, bootstrap)
	if err == nil && login == nil {
		cl, closeCl, err = console.NewKafkaCluster(bootstrap, nil)
	}
	if err != nil {
		ln.Close()
		return nil, err
	}
	if tcp, ok := ln.Addr().(*net.TCPAddr); ok && !tcp.IP.IsLoopback() {
		if login == nil {
			logger.Warn("the web console listens beyond loopback: anyone who reaches it acts with the console's Kafka principal", "addr", ln.Addr().String())
		} else {
			logger.Warn("the web console listens beyond loopback over plain HTTP: logins cross the network in clear", "addr", ln.Addr().String())
		}
	}
	var hosts []string
	for _, h := range strings.Split(*flags.hosts, ",") {
		if h = strings.TrimSpace(h); h != "" {
			hosts = append(hosts, h)
		}
	}
	con, err := console.New(console.Config{Cluster: cl, Login: login, Logger: logger.With("component", "console"), Hosts: hosts,
		Metrics: &console.Scraper{Local: node, Gatherer: reg, URLs: urls}})
	if err != nil {
		ln.Close()
		closeCl()
		return nil, err
	}
	rc := &runningConsole{srv: &http.Server{Handler: con.Handler(), ReadHeaderTimeout: 5 * time.Second}, con: con, closeCl: closeCl, done: make(chan struct{})}
	go func() {
		defer close(rc.done)
		if err := rc.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			logger.Warn("web console stopped", "err", err)
		}
	}()
	fmt.Fprintf(stdout, "weir console on http://%s/\n", ln.Addr())
	return rc, nil
}

// consoleLogin is the console's login when the listener it reaches the
// broker on (the inter-broker one) authenticates with SASL: a person's
// user name and password, with the listener's first enabled mechanism of
// SCRAM-SHA-512, SCRAM-SHA-256 and PLAIN, give a client of their own, so
// the console shows and does what that principal's ACLs allow. nil when
// the listener has no SASL (the console then acts with no credentials).
func consoleLogin(settings *config.Broker, bootstrap string) (console.Login, error) {
	ib := settings.InterBrokerListener()
	if !strings.HasPrefix(ib.SecurityProtocol, "SASL_") {
		return nil, nil
	}
	mech := ""
	enabled := settings.ListenerValue(ib.Name, config.SaslEnabledMechanisms).Strings()
	for _, m := range []string{"SCRAM-SHA-512", "SCRAM-SHA-256", "PLAIN"} {
		if slices.Contains(enabled, m) {
			mech = m
			break
		}
	}
	if mech == "" {
		return nil, fmt.Errorf("the web console logs in with SCRAM or PLAIN; listener %s enables %v", ib.Name, enabled)
	}
	base := map[string]string{"security.protocol": ib.SecurityProtocol, "sasl.mechanism": mech}
	if ib.SecurityProtocol == "SASL_SSL" {
		for _, k := range []string{config.SslTruststoreType, config.SslTruststoreLocation, config.SslTruststorePassword, config.SslTruststoreCerts, config.SslEndpointIdentAlg} {
			if v := settings.ListenerValue(ib.Name, k); v.Str() != "" || k == config.SslEndpointIdentAlg {
				base[k] = v.Str()
			}
		}
	}
	module := "org.apache.kafka.common.security.scram.ScramLoginModule"
	if mech == "PLAIN" {
		module = "org.apache.kafka.common.security.plain.PlainLoginModule"
	}
	return func(ctx context.Context, user, password string) (console.Cluster, func(), error) {
		props := maps.Clone(base)
		props["sasl.jaas.config"] = module + ` required username="` + jaasQuote(user) + `" password="` + jaasQuote(password) + `";`
		cl, closeCl, err := console.NewKafkaCluster(bootstrap, props)
		if err != nil {
			return nil, nil, err
		}
		if _, err := cl.Describe(ctx); err != nil {
			closeCl()
			if errors.Is(err, auth.ErrAuthentication) {
				return nil, nil, fmt.Errorf("%w: %v", console.ErrBadCredentials, err)
			}
			return nil, nil, err
		}
		return cl, closeCl, nil
	}, nil
}

// jaasQuote escapes a value for a double-quoted JAAS option.
func jaasQuote(s string) string {
	return strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s)
}
