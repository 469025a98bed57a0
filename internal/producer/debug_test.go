package producer

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"testing"

	"weir/internal/log"
)

// checkIndexFiles checks what recovery relies on: the aborted-transaction
// index file of every segment wholly below the checkpoint's recovery point
// holds exactly the entries the log holds in memory for that segment.
func checkIndexFiles(t *testing.T, p *txnLog, seed, step int, what string) {
	t.Helper()
	ck, err := os.ReadFile(filepath.Join(p.dir, "checkpoint"))
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(ck))
	rp, _ := strconv.ParseInt(f[1], 10, 64)
	ents, _ := os.ReadDir(p.dir)
	var bases []int64
	for _, e := range ents {
		if d, ok := strings.CutSuffix(e.Name(), ".log"); ok {
			b, _ := strconv.ParseInt(d, 10, 64)
			bases = append(bases, b)
		}
	}
	sort.Slice(bases, func(i, j int) bool { return bases[i] < bases[j] })
	all := p.l.AbortedTransactions(0, p.l.EndOffset())
	for i, b := range bases {
		next := p.l.EndOffset()
		if i+1 < len(bases) {
			next = bases[i+1]
		}
		if next > rp {
			return
		}
		var mem, file []log.AbortedTxn
		for _, a := range all {
			if a.LastOffset >= b && a.LastOffset < next {
				mem = append(mem, a)
			}
		}
		raw, _ := os.ReadFile(filepath.Join(p.dir, strings.TrimSuffix(filepath.Base(p.dir+"/"+pad(b)), "")+".txnindex"))
		for ; len(raw) >= 34; raw = raw[34:] {
			file = append(file, log.AbortedTxn{
				ProducerID:       int64(binary.BigEndian.Uint64(raw[2:])),
				FirstOffset:      int64(binary.BigEndian.Uint64(raw[10:])),
				LastOffset:       int64(binary.BigEndian.Uint64(raw[18:])),
				LastStableOffset: int64(binary.BigEndian.Uint64(raw[26:])),
			})
		}
		if !reflect.DeepEqual(mem, file) {
			t.Fatalf("seed %d step %d (%s): segment %d below the recovery point %d: index file %+v, log %+v", seed, step, what, b, rp, file, mem)
		}
	}
}

func pad(b int64) string {
	s := strconv.FormatInt(b, 10)
	return strings.Repeat("0", 20-len(s)) + s
}
