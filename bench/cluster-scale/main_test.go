package main

import "testing"

func TestField(t *testing.T) {
	line := `time=2026-11-22T04:42:49.258Z level=INFO msg="controlled shutdown" took=9.597387579s err=<nil>`
	for _, tc := range []struct {
		key, want string
	}{
		{"time", "2026-11-22T04:42:49.258Z"},
		{"msg", "controlled shutdown"},
		{"took", "9.597387579s"},
		{"err", "<nil>"},
		{"absent", ""},
		{"ok", ""}, // "took" ends with "ok": only whole keys match
	} {
		if got := field(line, tc.key); got != tc.want {
			t.Errorf("field(%q) = %q, want %q", tc.key, got, tc.want)
		}
	}
	quoted := `msg="brokers fenced" nodes=[2] reason="controlled shutdown complete" partitions_changed=0`
	if got := field(quoted, "reason"); got != "controlled shutdown complete" {
		t.Errorf("quoted value: got %q", got)
	}
	if got := field(quoted, "partitions_changed"); got != "0" {
		t.Errorf("last value: got %q", got)
	}
}

func TestParseScenario(t *testing.T) {
	// A zero scenario: the input must be refused.
	cases := map[string]scenario{
		"100000x1": {100000, 1},
		"30000x3":  {30000, 3},
		"100000":   {},
		"100000x4": {},
		"0x1":      {},
		"ax1":      {},
	}
	for in, want := range cases {
		got, err := parseScenario(in)
		if refused := want == (scenario{}); (err != nil) != refused || got != want {
			t.Errorf("parseScenario(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
}

func TestMemStat(t *testing.T) {
	body := []byte("heap profile: 1: 2 [3: 4] @ heap/1048576\n\n# runtime.MemStats\n# Alloc = 123\n# HeapAlloc = 694560336\n# Sys = 99\n")
	if v, ok := memStat(body, "HeapAlloc"); !ok || v != 694560336 {
		t.Errorf("HeapAlloc = %d, %v", v, ok)
	}
	if _, ok := memStat(body, "NextGC"); ok {
		t.Error("found a stat that is not there")
	}
}
