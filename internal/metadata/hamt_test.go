package metadata

import (
	"maps"
	"math/rand/v2"
	"testing"
)

// pmapModel drives a pmap and a Go map with the same operations and
// checks they agree, and that every older version is unchanged.
type pmapModel struct {
	t        *testing.T
	hash     func(int) uint64
	versions []pmap[int, int, seeded[int]]
	models   []map[int]int
}

func (m *pmapModel) check(pm pmap[int, int, seeded[int]], want map[int]int) {
	m.t.Helper()
	if pm.len() != len(want) {
		m.t.Fatalf("len %d, want %d", pm.len(), len(want))
	}
	for k, v := range want {
		if got, ok := pm.getHash(m.hash(k), k); !ok || got != v {
			m.t.Fatalf("get(%d) = %d, %v; want %d", k, got, ok, v)
		}
	}
	seen := map[int]int{}
	pm.each(func(k, v int) bool { seen[k] = v; return true })
	if !maps.Equal(seen, want) {
		m.t.Fatalf("each saw %v, want %v", seen, want)
	}
}

func (m *pmapModel) run(rng *rand.Rand, ops, keys int) {
	cur := pmap[int, int, seeded[int]]{}
	model := map[int]int{}
	e := new(edit)
	for i := range ops {
		k := rng.IntN(keys)
		if rng.IntN(3) == 0 {
			cur = cur.deleteHash(e, m.hash(k), k)
			delete(model, k)
		} else {
			cur = cur.setHash(e, m.hash(k), k, i)
			model[k] = i
		}
		if _, ok := cur.getHash(m.hash(keys+1), keys+1); ok {
			m.t.Fatalf("found a key never set")
		}
		// Freeze a version now and then, as Builder.Image does.
		if rng.IntN(8) == 0 {
			m.check(cur, model)
			m.versions = append(m.versions, cur)
			m.models = append(m.models, maps.Clone(model))
			e = new(edit)
		}
	}
	m.check(cur, model)
	for i, v := range m.versions {
		m.check(v, m.models[i])
	}
}

func TestPmapAgainstMap(t *testing.T) {
	hashes := []struct {
		name string
		fn   func(int) uint64
	}{
		{"maphash", func(k int) uint64 { return seeded[int]{}.hash(k) }},
		// Few distinct hashes: most keys land in collision nodes.
		{"collisions", func(k int) uint64 { return uint64(k % 3) }},
		// Hashes equal in the low 60 bits: deep tries, then the last
		// level's four bits, then collisions.
		{"deep", func(k int) uint64 { return uint64(k%40) << 59 }},
	}
	for _, h := range hashes {
		t.Run(h.name, func(t *testing.T) {
			for seed := range uint64(20) {
				m := &pmapModel{t: t, hash: h.fn}
				m.run(rand.New(rand.NewPCG(seed, 1)), 600, 60)
			}
		})
	}
}

func TestPmapDeleteAbsentCopiesNothing(t *testing.T) {
	e := new(edit)
	m := pmap[int, int, seeded[int]]{}
	for k := range 100 {
		m = m.set(e, k, k)
	}
	frozen := m
	m2 := m.delete(new(edit), 1000)
	if m2.root != frozen.root || m2.len() != 100 {
		t.Fatal("deleting an absent key changed the map")
	}
}
