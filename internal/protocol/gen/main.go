package main

import (
	"crypto/sha256"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func main() {
	dir := flag.String("defs", "", "directory of message definition files (franz-go generate/definitions)")
	out := flag.String("out", "schema_gen.go", "file to write")
	flag.Parse()
	if err := run(*dir, *out); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}

func run(dir, out string) error {
	if dir == "" {
		return errors.New("-defs is required (set WEIR_KMSG_DEFINITIONS for go generate)")
	}
	d, digest, err := load(dir)
	if err != nil {
		return err
	}
	t := newTable(d)
	if err := addKmsgRequests(t, d); err != nil {
		return err
	}
	if len(t.fields) >= 1<<16 || len(t.structs) >= 1<<16 {
		return fmt.Errorf("%d fields and %d structs overflow the table's uint16 indexes", len(t.fields), len(t.structs))
	}
	header := fmt.Sprintf("Request schemas for %s, from message definitions with sha256 %x.", kmsgVersion(), digest)
	src, err := t.source(header)
	if err != nil {
		return err
	}
	return os.WriteFile(out, src, 0o644)
}

// load parses every file of dir and returns a digest of their names and
// contents, so a generated table names what it came from.
func load(dir string) (*defs, []byte, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, nil, err
	}
	d := newDefs()
	h := sha256.New()
	for _, ent := range ents { // ReadDir sorts by name
		if ent.IsDir() {
			continue
		}
		raw, err := os.ReadFile(filepath.Join(dir, ent.Name()))
		if err != nil {
			return nil, nil, err
		}
		fmt.Fprintf(h, "%s\x00%d\x00", ent.Name(), len(raw))
		h.Write(raw)
		r, err := readLines(ent.Name(), strings.NewReader(string(raw)))
		if err != nil {
			return nil, nil, err
		}
		if ent.Name() == "enums" {
			err = d.parseEnums(r)
		} else {
			err = d.parseFile(r)
		}
		if err != nil {
			return nil, nil, err
		}
	}
	return d, h.Sum(nil), nil
}

// addKmsgRequests emits the request of every key kmsg knows, checked
// against kmsg's own view of it.
func addKmsgRequests(t *table, d *defs) error {
	byKey := map[int]*def{}
	for _, s := range d.order {
		if s.key < 0 {
			continue
		}
		if byKey[s.key] != nil {
			return fmt.Errorf("%s: key %d defined twice", s.pos, s.key)
		}
		byKey[s.key] = s
	}
	var missing []string
	for key := int16(0); key <= kmsg.MaxKey; key++ {
		req := kmsg.RequestForKey(key)
		if req == nil {
			continue
		}
		s := byKey[int(key)]
		switch {
		case s == nil:
			missing = append(missing, fmt.Sprintf("key %d (%s) is not defined", key, kmsg.NameForKey(key)))
			continue
		case s.max < int(req.MaxVersion()):
			missing = append(missing, fmt.Sprintf("%s is defined up to v%d, kmsg has v%d", s.name, s.max, req.MaxVersion()))
			continue
		}
		for v := int16(0); v <= req.MaxVersion(); v++ {
			req.SetVersion(v)
			if flex := s.flexFrom >= 0 && int(v) >= s.flexFrom; flex != req.IsFlexible() {
				return fmt.Errorf("%s v%d: definitions say flexible %v, kmsg %v", s.name, v, flex, req.IsFlexible())
			}
		}
		if err := t.addRequest(s, int(req.MaxVersion())); err != nil {
			return err
		}
	}
	if len(missing) > 0 {
		slices.Sort(missing)
		return fmt.Errorf("the definitions are older than kmsg:\n\t%s", strings.Join(missing, "\n\t"))
	}
	return nil
}

func kmsgVersion() string {
	const path = "github.com/twmb/franz-go/pkg/kmsg"
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, m := range bi.Deps {
			if m.Path == path {
				return path + " " + m.Version
			}
		}
	}
	return path
}
