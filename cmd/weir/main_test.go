package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
		{"bad log level", []string{"serve", "--log-level", "loud"}, 2, "invalid -log-level"},
		{"bad raft timeout", []string{"serve", "--raft-timeout", "1ms"}, 2, "invalid -raft-timeout 1ms"},
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
