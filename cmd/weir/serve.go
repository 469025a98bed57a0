package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
)

func runServe(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("serve", "serve [flags]", stderr)
	dataDir := fs.String("data-dir", "./weir-data", "directory holding partition logs and broker state")
	listen := fs.String("listen", "127.0.0.1:9092", "address the Kafka listener binds")
	logLevel := fs.String("log-level", "info", "log level: debug, info, warn, error")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		fmt.Fprintf(stderr, "invalid -log-level %q: want debug, info, warn or error\n", *logLevel)
		return errUsage
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))

	dir, err := filepath.Abs(*dataDir)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("data directory: %w", err)
	}
	logger.Info("weir ready", "data_dir", dir, "listen", *listen)
	fmt.Fprintf(stdout, "weir data in %s\n", dir)
	<-ctx.Done()
	logger.Info("weir stopped")
	return nil
}
