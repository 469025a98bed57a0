package main

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"weir/internal/testport"
)

func TestCommandLine(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.properties")
	os.WriteFile(bad, []byte("num.partitions=zero\n"), 0o644)
	cases := []struct {
		name     string
		args     []string
		code     int
		inOutput string
	}{
		{"no arguments", nil, 2, "Usage: weir <command>"},
		{"help", []string{"--help"}, 0, "Commands:"},
		{"unknown command", []string{"frobnicate"}, 2, `unknown command "frobnicate"`},
		{"serve help", []string{"serve", "--help"}, 0, "-data-dir"},
		{"bad flag", []string{"serve", "--nope"}, 2, "flag provided but not defined: -nope"},
		{"stray argument", []string{"serve", "extra"}, 2, `unexpected argument "extra"`},
		{"bad listen", []string{"serve", "--listen", "nowhere"}, 2, `invalid -listen "nowhere"`},
		{"bad listen protocol", []string{"serve", "--listen", "TLS://127.0.0.1:9092"}, 2, `unknown security protocol "TLS"`},
		{"bad log level", []string{"serve", "--log-level", "loud"}, 2, "invalid -log-level"},
		{"bad raft timeout", []string{"serve", "--raft-timeout", "1ms"}, 2, "invalid -raft-timeout 1ms"},
		{"null write without null storage", []string{"serve", "--null-storage-write"}, 2, "-null-storage-write needs -null-storage"},
		{"bad config value", []string{"serve", "--config", bad, "--data-dir", t.TempDir()}, 1, "num.partitions: Invalid value zero"},
		{"missing config", []string{"serve", "--config", "/no/such/file"}, 1, "no such file"},
		{"version", []string{"version"}, 0, "weir "},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var out strings.Builder
			code := run(context.Background(), tc.args, &out, &out)
			if code != tc.code || !strings.Contains(out.String(), tc.inOutput) {
				t.Fatalf("exit %d, want %d; output must contain %q:\n%s", code, tc.code, tc.inOutput, out.String())
			}
		})
	}
}

// TestServeStopsOnCancel starts the broker and stops it as SIGTERM would.
func TestServeStopsOnCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var out syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"serve", "--listen", "127.0.0.1:0", "--data-dir", t.TempDir(), "--log-level", "error"}, &out, &out)
	}()
	for !strings.Contains(out.String(), "weir listening on 127.0.0.1:") {
		select {
		case code := <-done:
			t.Fatalf("serve exited with %d before listening:\n%s", code, out.String())
		default:
		}
		waitABit()
	}
	cancel()
	if code := <-done; code != 0 {
		t.Fatalf("serve exited with %d after cancel:\n%s", code, out.String())
	}
}

// TestServeBindsBeforeJoiningTheQuorum: with its Kafka port (or its
// metrics port) taken, weir serve exits at once naming the port, before
// it opens the metadata quorum (no metadata directory, the raft port
// never bound), so it never becomes a voter that comes and goes.
func TestServeBindsBeforeJoiningTheQuorum(t *testing.T) {
	taken, err := net.Listen("tcp", testport.Addr(t))
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	busy := taken.Addr().String()
	for _, tc := range []struct {
		name  string
		flags []string
	}{
		{"kafka port", []string{"--listen", busy}},
		{"metrics port", []string{"--listen", "127.0.0.1:0", "--metrics-listen", busy}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			raft := testport.Addr(t)
			args := append([]string{"serve", "--data-dir", dir, "--node-id", "1", "--raft-listen", raft,
				"--voters", "1@" + raft + ",2@" + testport.Addr(t) + ",3@" + testport.Addr(t), "--log-level", "error"}, tc.flags...)
			var out syncBuffer
			start := time.Now()
			code := run(context.Background(), args, &out, &out)
			if code == 0 || !strings.Contains(out.String(), busy) {
				t.Fatalf("exit %d, output:\n%s\nwant a failure naming %s", code, out.String(), busy)
			}
			if took := time.Since(start); took > 5*time.Second {
				t.Fatalf("took %v to fail", took)
			}
			if _, err := os.Stat(filepath.Join(dir, "__cluster_metadata")); !os.IsNotExist(err) {
				t.Fatalf("the metadata quorum was opened before the port failed: %v", err)
			}
		})
	}
}
