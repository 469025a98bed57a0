package docs

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// ref matches `dir/file.go:Name` and `dir/file.go:Type.Method` in
// backticks.
var ref = regexp.MustCompile("`([A-Za-z0-9_./-]+\\.go):([A-Za-z_][A-Za-z0-9_]*(?:\\.[A-Za-z_][A-Za-z0-9_]*)?)`")

// declared lists a Go file's top-level names: functions, types, vars and
// consts by name, methods as Type.Method.
func declared(t *testing.T, path string) map[string]bool {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	out := map[string]bool{}
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			if d.Recv == nil || len(d.Recv.List) == 0 {
				out[d.Name.Name] = true
				continue
			}
			typ := d.Recv.List[0].Type
			for {
				switch x := typ.(type) {
				case *ast.StarExpr:
					typ = x.X
					continue
				case *ast.IndexExpr:
					typ = x.X
					continue
				case *ast.IndexListExpr:
					typ = x.X
					continue
				}
				break
			}
			if id, ok := typ.(*ast.Ident); ok {
				out[id.Name+"."+d.Name.Name] = true
			}
		case *ast.GenDecl:
			for _, sp := range d.Specs {
				switch sp := sp.(type) {
				case *ast.TypeSpec:
					out[sp.Name.Name] = true
				case *ast.ValueSpec:
					for _, n := range sp.Names {
						out[n.Name] = true
					}
				}
			}
		}
	}
	return out
}

// checkRefs returns a message for every reference in text that does not
// resolve under root.
func checkRefs(t *testing.T, root, text string) []string {
	var bad []string
	cache := map[string]map[string]bool{}
	for _, m := range ref.FindAllStringSubmatch(text, -1) {
		path, name := m[1], m[2]
		decls, ok := cache[path]
		if !ok {
			full := filepath.Join(root, path)
			if _, err := os.Stat(full); err != nil {
				bad = append(bad, m[0]+": no such file")
				cache[path] = nil
				continue
			}
			decls = declared(t, full)
			cache[path] = decls
		}
		if decls != nil && !decls[name] {
			bad = append(bad, m[0]+": "+name+" is not declared in "+path)
		}
	}
	return bad
}

func TestCodeReferencesResolve(t *testing.T) {
	total := 0
	for _, doc := range []string{"DESIGN.md", "LOCKS.md", "API.md"} {
		b, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		total += len(ref.FindAllString(string(b), -1))
		for _, msg := range checkRefs(t, "..", string(b)) {
			t.Errorf("%s: %s", doc, msg)
		}
	}
	if total < 30 {
		t.Fatalf("only %d code references found: the walks in DESIGN.md are missing", total)
	}
}

// The checker itself: resolving names, methods on pointer and generic
// receivers, and refusing what is not there.
func TestCheckRefs(t *testing.T) {
	dir := t.TempDir()
	src := `package x
type T struct{}
type G[K any] struct{}
func (t *T) M() {}
func (g G[K]) N() {}
func F() {}
var V = 1
`
	if err := os.WriteFile(filepath.Join(dir, "x.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		text string
		bad  int
	}{
		{"`x.go:F` `x.go:T` `x.go:T.M` `x.go:G.N` `x.go:V`", 0},
		{"`x.go:Gone`", 1},
		{"`x.go:T.Gone` `x.go:M`", 2},
		{"`y.go:F`", 1},
	} {
		if got := checkRefs(t, dir, tc.text); len(got) != tc.bad {
			t.Errorf("%s: %d unresolved (%s), want %d", tc.text, len(got), strings.Join(got, "; "), tc.bad)
		}
	}
}
