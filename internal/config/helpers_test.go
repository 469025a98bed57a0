package config

import (
	"testing"
)

// mustBroker builds a broker config with node.id 1 plus props.
func mustBroker(t testing.TB, props map[string]string) *Broker {
	t.Helper()
	all := map[string]string{NodeID: "1"}
	for k, v := range props {
		all[k] = v
	}
	b, err := NewBroker(all)
	if err != nil {
		t.Fatalf("NewBroker(%v): %v", props, err)
	}
	return b
}

func ptr(s string) *string { return &s }

func deref(p *string) string {
	if p == nil {
		return "<null>"
	}
	return *p
}

// wantError checks a *Error's code and message; code 0 means no error.
func wantError(t *testing.T, what string, got *Error, code int16, msg string) {
	t.Helper()
	switch {
	case code == 0 && got != nil:
		t.Errorf("%s: unexpected error %v", what, got)
	case code != 0 && got == nil:
		t.Errorf("%s: no error, want code %d %q", what, code, msg)
	case code != 0 && (got.Code != code || got.Message != msg):
		t.Errorf("%s: got code %d %q, want code %d %q", what, got.Code, got.Message, code, msg)
	}
}
