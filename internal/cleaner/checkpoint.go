package cleaner

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"weir/internal/log"
)

// CheckpointFile is the cleaner's checkpoint in each log directory, named
// and laid out as Kafka's: a version line (0), a count line, then one
// "topic partition offset" line per partition, the offset being the first
// dirty offset (where the partition's last round ended). It only saves
// work: a lost or damaged file makes the next rounds clean from the log
// start again.
const CheckpointFile = "cleaner-offset-checkpoint"

// TopicPartition names a partition.
type TopicPartition struct {
	Topic     string
	Partition int32
}

func (tp TopicPartition) String() string { return tp.Topic + "-" + strconv.Itoa(int(tp.Partition)) }

var errCheckpoint = errors.New("cleaner: malformed checkpoint")

// parseCheckpoint decodes a checkpoint file; it never panics.
func parseCheckpoint(b []byte) (map[TopicPartition]int64, error) {
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) < 2 || strings.TrimSpace(lines[0]) != "0" {
		return nil, fmt.Errorf("%w: version line %q", errCheckpoint, lines[0])
	}
	n, err := strconv.Atoi(strings.TrimSpace(lines[1]))
	if err != nil || n < 0 || n != len(lines)-2 {
		return nil, fmt.Errorf("%w: count %q for %d entries", errCheckpoint, lines[1], len(lines)-2)
	}
	out := make(map[TopicPartition]int64, n)
	for _, line := range lines[2:] {
		f := strings.Fields(line)
		if len(f) != 3 || f[0] == "" {
			return nil, fmt.Errorf("%w: line %q", errCheckpoint, line)
		}
		p, err := strconv.ParseInt(f[1], 10, 32)
		if err != nil || p < 0 {
			return nil, fmt.Errorf("%w: partition in %q", errCheckpoint, line)
		}
		off, err := strconv.ParseInt(f[2], 10, 64)
		if err != nil || off < 0 {
			return nil, fmt.Errorf("%w: offset in %q", errCheckpoint, line)
		}
		out[TopicPartition{f[0], int32(p)}] = off
	}
	return out, nil
}

// encodeCheckpoint writes entries sorted by topic and partition.
func encodeCheckpoint(m map[TopicPartition]int64) []byte {
	keys := make([]TopicPartition, 0, len(m))
	for tp := range m {
		keys = append(keys, tp)
	}
	slices.SortFunc(keys, func(a, b TopicPartition) int {
		if c := strings.Compare(a.Topic, b.Topic); c != 0 {
			return c
		}
		return int(a.Partition - b.Partition)
	})
	b := fmt.Appendf(nil, "0\n%d\n", len(keys))
	for _, tp := range keys {
		b = fmt.Appendf(b, "%s %d %d\n", tp.Topic, tp.Partition, m[tp])
	}
	return b
}

func readCheckpoint(dir string) (map[TopicPartition]int64, error) {
	b, err := os.ReadFile(filepath.Join(dir, CheckpointFile))
	if errors.Is(err, os.ErrNotExist) {
		return map[TopicPartition]int64{}, nil
	}
	if err != nil {
		return nil, err
	}
	return parseCheckpoint(b)
}

// writeCheckpoint replaces the file atomically.
func writeCheckpoint(dir string, m map[TopicPartition]int64) error {
	return log.WriteFileAtomic(filepath.Join(dir, CheckpointFile), encodeCheckpoint(m))
}
