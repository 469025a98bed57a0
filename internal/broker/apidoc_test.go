package broker

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

var updateDocs = flag.Bool("update-docs", false, "rewrite docs/API.md's generated table")

const (
	apiDocPath  = "../../docs/API.md"
	apiDocStart = "<!-- generated: served APIs -->"
	apiDocEnd   = "<!-- end generated -->"
)

// apiTable renders the served APIs from the handler table.
func apiTable() string {
	var b strings.Builder
	b.WriteString("| key | API | advertised | served | handler |\n|---:|---|---|---|---|\n")
	for _, v := range versions() {
		h := handlers[v.Key]
		fmt.Fprintf(&b, "| %d | %s | %d-%d | %d-%d | [%s](../internal/broker/%s) |\n", v.Key, kmsg.NameForKey(v.Key), v.Min, v.Max, h.minServed, v.Max, h.file, h.file)
	}
	return b.String()
}

// TestAPIDocIsCurrent keeps docs/API.md's table equal to what the broker
// serves. Run with -update-docs to rewrite it.
func TestAPIDocIsCurrent(t *testing.T) {
	doc, err := os.ReadFile(apiDocPath)
	if err != nil {
		t.Fatal(err)
	}
	s := string(doc)
	i, j := strings.Index(s, apiDocStart), strings.Index(s, apiDocEnd)
	if i < 0 || j < i {
		t.Fatalf("%s lacks the generated-table markers", apiDocPath)
	}
	want := s[:i+len(apiDocStart)] + "\n" + apiTable() + s[j:]
	if want == s {
		return
	}
	if *updateDocs {
		if err := os.WriteFile(apiDocPath, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Fatalf("%s is stale; run go test ./internal/broker -run APIDoc -update-docs", apiDocPath)
}

// TestHandlersLiveInTheirFiles keeps one file per API key: every handler
// is registered by a file named after its key (NN_name.go), so a file
// registering two keys, or a key registered from a shared file, fails.
func TestHandlersLiveInTheirFiles(t *testing.T) {
	files := map[string]int16{}
	for key, h := range handlers {
		if want := fmt.Sprintf("%02d_", key); !strings.HasPrefix(h.file, want) {
			t.Errorf("%s (key %d) is registered in %s, not in a file named %s<name>.go", kmsg.NameForKey(key), key, h.file, want)
		}
		if other, dup := files[h.file]; dup {
			t.Errorf("%s registers keys %d and %d", h.file, other, key)
		}
		files[h.file] = key
	}
	if len(handlers) < 40 {
		t.Fatalf("only %d handlers registered", len(handlers))
	}
}
