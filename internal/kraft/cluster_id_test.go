package kraft

import (
	"encoding/base64"
	"testing"

	"weir/internal/quorum"
)

// A node keeps its cluster id: a random one for a single node, one every
// voter derives alike for a cluster, the one given; a directory of
// another cluster is refused.
func TestLoadClusterID(t *testing.T) {
	single := t.TempDir()
	id, err := LoadClusterID(single, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if b, err := base64.RawURLEncoding.DecodeString(id); err != nil || len(b) != 16 {
		t.Fatalf("random id %q is not 16 bytes of URL-safe base64 (%v)", id, err)
	}
	if again, err := LoadClusterID(single, "", nil); err != nil || again != id {
		t.Fatalf("reopened: %q (%v), want %q", again, err, id)
	}
	if other, _ := LoadClusterID(t.TempDir(), "", nil); other == id {
		t.Fatal("two single nodes drew the same id")
	}

	voters := []quorum.Peer{{ID: 1, Addr: "h:1"}, {ID: 2, Addr: "h:2"}, {ID: 3, Addr: "h:3"}}
	reversed := []quorum.Peer{voters[2], voters[1], voters[0]}
	a, err := LoadClusterID(t.TempDir(), "", voters)
	if err != nil {
		t.Fatal(err)
	}
	b, err := LoadClusterID(t.TempDir(), "", reversed)
	if err != nil || a != b {
		t.Fatalf("voters in another order derive %q, want %q (%v)", b, a, err)
	}
	if c, _ := LoadClusterID(t.TempDir(), "", voters[:2]); c == a {
		t.Fatal("other voters derive the same id")
	}

	given := t.TempDir()
	if got, err := LoadClusterID(given, "mycluster", voters); err != nil || got != "mycluster" {
		t.Fatalf("given id: %q (%v)", got, err)
	}
	if _, err := LoadClusterID(given, "another", nil); err == nil {
		t.Fatal("a directory of cluster mycluster was taken for cluster another")
	}
}
