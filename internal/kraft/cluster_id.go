package kraft

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"weir/internal/quorum"
)

// LoadClusterID returns the cluster id kept in a node's metadata
// directory, or stores a new one: the given one, one derived from the
// voters of a multi-node quorum (every node of a cluster computes the
// same), or a random one. A directory that belongs to another cluster
// than the given id is refused.
func LoadClusterID(dir, given string, voters []quorum.Peer) (string, error) {
	m, ok, err := readMeta(dir)
	if err != nil {
		return "", err
	}
	if ok {
		if given != "" && given != m.ClusterID {
			return "", fmt.Errorf("kraft: %s belongs to cluster %s, not %s", dir, m.ClusterID, given)
		}
		return m.ClusterID, nil
	}
	id := given
	if id == "" && len(voters) > 1 {
		var parts []string
		for _, v := range voters {
			parts = append(parts, strconv.Itoa(int(v.ID))+"@"+v.Addr)
		}
		slices.Sort(parts)
		sum := sha256.Sum256([]byte(strings.Join(parts, ",")))
		id = base64.RawURLEncoding.EncodeToString(sum[:16])
	}
	if id == "" {
		var r [16]byte
		_, _ = rand.Read(r[:])
		id = base64.RawURLEncoding.EncodeToString(r[:])
	}
	if err := writeMeta(dir, metaJSON{Version: 1, ClusterID: id}); err != nil {
		return "", err
	}
	return id, nil
}

// metaFile, in the metadata directory, keeps the cluster id this node
// belongs to.
const metaFile = "meta.json"

type metaJSON struct {
	Version   int    `json:"version"`
	ClusterID string `json:"cluster_id"`
}

func readMeta(dir string) (metaJSON, bool, error) {
	b, err := os.ReadFile(filepath.Join(dir, metaFile))
	if errors.Is(err, os.ErrNotExist) {
		return metaJSON{}, false, nil
	}
	if err != nil {
		return metaJSON{}, false, err
	}
	var m metaJSON
	if err := json.Unmarshal(b, &m); err != nil {
		return metaJSON{}, false, fmt.Errorf("kraft: %s is not valid: %w", metaFile, err)
	}
	if m.Version != 1 {
		return metaJSON{}, false, fmt.Errorf("kraft: %s has unknown version %d", metaFile, m.Version)
	}
	return m, true, nil
}

// writeMeta writes the file atomically.
func writeMeta(dir string, m metaJSON) error {
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	return writeFileAtomic(dir, metaFile, data)
}

// kafkaMetaProperties is the metadata directory's identity in Kafka's
// format, which Kafka's tools read: kafka-metadata-quorum add-controller
// takes the directory id of the node it adds from there (with
// metadata.log.dir naming this directory in its --command-config).
const kafkaMetaProperties = "meta.properties"

// EnsureKafkaMetaProperties writes meta.properties in a node's metadata
// directory once, with a random directory id; weir itself reads
// meta.json.
func EnsureKafkaMetaProperties(dir, clusterID string, nodeID int32) error {
	if _, err := os.Stat(filepath.Join(dir, kafkaMetaProperties)); err == nil || !errors.Is(err, os.ErrNotExist) {
		return err
	}
	var id [16]byte
	_, _ = rand.Read(id[:])
	body := fmt.Sprintf("#\n# The identity of this metadata directory, in Apache Kafka's format, for Kafka's tools.\n"+
		"version=1\ncluster.id=%s\nnode.id=%d\ndirectory.id=%s\n", clusterID, nodeID, base64.RawURLEncoding.EncodeToString(id[:]))
	return writeFileAtomic(dir, kafkaMetaProperties, []byte(body))
}

// writeFileAtomic writes dir/name through a synced temporary file and a
// rename, then syncs the directory.
func writeFileAtomic(dir, name string, data []byte) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	tmp := filepath.Join(dir, name+".tmp")
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, filepath.Join(dir, name)); err != nil {
		return err
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
