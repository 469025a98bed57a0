package spec

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// MaxFileSize bounds a scenario file; MaxItems bounds each list in it
// (topics, producers, segments, ...) and MaxBrokers the cluster.
const (
	MaxFileSize = 1 << 20
	MaxItems    = 1000
	MaxBrokers  = 32
)

// Error is a scenario file that cannot be run: Path names the field
// (producers[0].rate.segments[1].duration), Line its line in the file
// when known.
type Error struct {
	Path string
	Line int
	Msg  string
}

func (e *Error) Error() string {
	var b strings.Builder
	if e.Line > 0 {
		fmt.Fprintf(&b, "line %d: ", e.Line)
	}
	if e.Path != "" {
		b.WriteString(e.Path)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// Parse reads and checks a scenario file, filling in the defaults
// (README.md in scenarios/ lists them). Unknown fields are errors, so a
// misspelt setting never silently falls back to a default.
func Parse(data []byte) (*File, error) {
	if len(data) > MaxFileSize {
		return nil, &Error{Msg: fmt.Sprintf("file of %d bytes, more than %d", len(data), MaxFileSize)}
	}
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, yamlError(err)
	}
	if root.Kind == 0 {
		return nil, &Error{Msg: "empty file"}
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	var f File
	if err := dec.Decode(&f); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, &Error{Msg: "empty file"}
		}
		return nil, yamlError(err)
	}
	if err := f.check(); err != nil {
		var e *Error
		if errors.As(err, &e) && e.Line == 0 {
			e.Line = lineOf(&root, e.Path)
		}
		return nil, err
	}
	return &f, nil
}

// yamlTypeNames turn the decoder's Go type names into the file's
// sections.
var yamlTypeNames = strings.NewReplacer(
	"type spec.File", "the top level",
	"type spec.Cluster", "cluster",
	"type spec.Topic", "a topic",
	"type spec.Producer", "a producer",
	"type spec.Consumer", "a consumer",
	"type spec.Distributor", "a distributor",
	"type spec.Schedule", "a rate",
	"type spec.Segment", "a rate segment",
	"type spec.Processing", "processing",
	"type spec.Fault", "a fault",
	"type spec.Phase", "a phase",
	"type spec.Variant", "a variant",
	"type spec.ProducerOverride", "a variant's producer",
	"type spec.ConsumerOverride", "a variant's consumer",
	"type spec.Quick", "quick",
	"type spec.Duration", "a duration",
)

func yamlError(err error) error {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	msg = strings.TrimPrefix(msg, "unmarshal errors:\n")
	var lines []string
	for _, l := range strings.Split(msg, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, yamlTypeNames.Replace(l))
		}
	}
	return &Error{Msg: strings.Join(lines, "; ")}
}

// UnmarshalYAML reads "30s", "1m30s" or "250ms"; a bare number is
// refused, since its unit would be a guess.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return fmt.Errorf("line %d: a duration is a string such as 30s or 250ms", n.Line)
	}
	v, err := time.ParseDuration(n.Value)
	if err != nil {
		return fmt.Errorf("line %d: %q is not a duration (write 30s, 2m, 250ms)", n.Line, n.Value)
	}
	*d = Duration(v)
	return nil
}

// MarshalYAML writes d as UnmarshalYAML reads it.
func (d Duration) MarshalYAML() (any, error) { return time.Duration(d).String(), nil }

// UnmarshalYAML reads a number (a constant rate) or the segments form.
func (s *Schedule) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		v, err := strconv.ParseFloat(n.Value, 64)
		if err != nil {
			return fmt.Errorf("line %d: rate %q is neither records per second nor a schedule", n.Line, n.Value)
		}
		*s = Schedule{Constant: &v}
		return nil
	}
	type plain Schedule
	var p plain
	if err := n.Decode(&p); err != nil {
		return err
	}
	*s = Schedule(p)
	return nil
}

// MarshalYAML writes s as UnmarshalYAML reads it.
func (s Schedule) MarshalYAML() (any, error) {
	if s.Constant != nil {
		return *s.Constant, nil
	}
	type plain Schedule
	return plain(s), nil
}

// lineOf finds the line of the node at path (a.b[2].c) in root, or the
// nearest ancestor that exists; 0 when nothing matches.
func lineOf(root *yaml.Node, path string) int {
	n := root
	if n.Kind == yaml.DocumentNode && len(n.Content) > 0 {
		n = n.Content[0]
	}
	line := 0
	for _, step := range pathSteps(path) {
		next := child(n, step)
		if next == nil {
			break
		}
		n = next
		line = n.Line
	}
	return line
}

var stepRE = regexp.MustCompile(`[^.\[\]]+|\[\d+\]`)

func pathSteps(path string) []string { return stepRE.FindAllString(path, -1) }

func child(n *yaml.Node, step string) *yaml.Node {
	if strings.HasPrefix(step, "[") {
		i, err := strconv.Atoi(strings.Trim(step, "[]"))
		if err != nil || n.Kind != yaml.SequenceNode || i < 0 || i >= len(n.Content) {
			return nil
		}
		return n.Content[i]
	}
	if n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == step {
			return n.Content[i+1]
		}
	}
	return nil
}

// finite reports whether v is a number a rate can be.
func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
