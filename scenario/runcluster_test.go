package scenario

import (
	"slices"
	"testing"

	"weir/scenario/spec"
)

// TestWeirSpec: the cluster a weir scenario starts has the file's
// brokers from the base port and the run's binary, extra serve flags and
// pprof ports (weir scenario run --pprof-base-port); pprof ports past
// 65535 fail its validation, so the run stops before it starts a node.
func TestWeirSpec(t *testing.T) {
	f := &spec.File{}
	f.Cluster.Kind, f.Cluster.Brokers = spec.KindWeir, 3
	cfg := RunConfig{WeirBinary: "/bin/weir", ServeArgs: []string{"--log-level", "debug"}, PprofBasePort: 23500}
	s := weirSpec(f, cfg, 24000)
	if s.Nodes != 3 || s.BasePort != 24000 || s.Binary != "/bin/weir" || s.PprofBasePort != 23500 || !slices.Equal(s.Args, cfg.ServeArgs) {
		t.Fatalf("spec %+v from %+v", s, cfg)
	}
	if err := s.Validate(); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	cfg.PprofBasePort = 65534 // nodes 2 and 3 past the last port
	if err := weirSpec(f, cfg, 24000).Validate(); err == nil {
		t.Fatal("pprof ports past 65535 validated")
	}
}
