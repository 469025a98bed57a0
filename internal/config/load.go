package config

import (
	"errors"
	"fmt"
	"os"
)

// Warning is a property that was accepted but is not a broker config
// weir knows. Kafka logs such keys as supplied but unused; the caller
// should log these.
type Warning struct {
	File string
	Line int
	Key  string
}

func (w Warning) String() string {
	return fmt.Sprintf("%s: %s is not a known broker config and is ignored", position(w.File, w.Line), w.Key)
}

// PropertyError is a broker property that failed validation, located in
// its file.
type PropertyError struct {
	File string
	Line int // 0 when the value came from the program (a flag)
	Key  string
	Msg  string // Kafka's message, naming the key and the constraint
}

func (e *PropertyError) Error() string {
	return position(e.File, e.Line) + ": " + e.Key + ": " + e.Msg
}

func position(file string, line int) string {
	if file == "" {
		file = "properties"
	}
	if line == 0 {
		return file + " (set by flag)"
	}
	return fmt.Sprintf("%s:%d", file, line)
}

// LoadBroker validates parsed properties as a broker configuration. Every
// invalid key is reported (errors.Join of *PropertyError), each with its
// file, line and Kafka's message; keys weir does not know come back as
// warnings.
func LoadBroker(p *Properties) (*Broker, []Warning, error) {
	b, err := NewBroker(p.Map())
	if err != nil {
		var ke interface{ Unwrap() []error }
		errs := []error{err}
		if errors.As(err, &ke) {
			errs = ke.Unwrap()
		}
		out := make([]error, 0, len(errs))
		for _, e := range errs {
			var k *KeyError
			if errors.As(e, &k) {
				out = append(out, &PropertyError{File: p.File, Line: p.lineOf(k.Key), Key: k.Key, Msg: k.Msg})
				continue
			}
			out = append(out, e)
		}
		return nil, nil, errors.Join(out...)
	}
	var warns []Warning
	for _, k := range b.UnknownKeys() {
		warns = append(warns, Warning{File: p.File, Line: p.lineOf(k), Key: k})
	}
	return b, warns, nil
}

// ReadPropertiesFile reads and parses a properties file.
func ReadPropertiesFile(path string) (*Properties, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	if st.Size() > maxPropertiesBytes {
		return nil, fmt.Errorf("config: %s: larger than %d bytes", path, maxPropertiesBytes)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	return ParseProperties(path, data)
}
