package authz

import (
	"slices"
	"testing"
)

// Creatable: CREATE on the cluster creates every internal topic; without
// it, CREATE on a topic creates that one only; no checker (authorization
// off) creates everything.
func TestCreatable(t *testing.T) {
	cfg := &Config{Enabled: true}
	topics := []string{"app-a-changelog", "app-b-repartition"}
	for _, tc := range []struct {
		name    string
		c       *Checker
		allowed []string
	}{
		{"authorization off", nil, topics},
		{"create on the cluster", NewChecker(allowAll(onTopic(OpCreate)), cfg, alice), topics},
		{"create on no topic", NewChecker(allowAll(cluster(OpCreate), onTopic(OpCreate)), cfg, alice), nil},
		{"create on one topic", NewChecker(NewIndex([]ACL{a(Allow, "User:alice", OpCreate, ResourceTopic, PatternLiteral, "app-a-changelog", "*")}), cfg, alice),
			[]string{"app-a-changelog"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			allowed, denied := tc.c.Creatable(topics)
			if !slices.Equal(allowed, tc.allowed) || len(allowed)+len(denied) != len(topics) {
				t.Fatalf("allowed %v denied %v, want allowed %v", allowed, denied, tc.allowed)
			}
		})
	}
}
