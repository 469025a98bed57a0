package spec

import (
	"fmt"
	"maps"
	"math"
	"time"

	"go.yaml.in/yaml/v3"
)

// VariantNames lists the variants a run goes through, in file order: all
// of them, or with quick the ones quick.variants names; [""] for a file
// without variants.
func (f *File) VariantNames(quick bool) []string {
	if len(f.Variants) == 0 {
		return []string{""}
	}
	if quick && len(f.Quick.Variants) > 0 {
		return append([]string(nil), f.Quick.Variants...)
	}
	var out []string
	for _, v := range f.Variants {
		out = append(out, v.Name)
	}
	return out
}

// Resolve returns the file as one variant runs it: a copy with the
// variant's overrides applied, scaled down by quick.scale when quick is
// set, checked again. Variant "" is the file as written.
func (f *File) Resolve(variant string, quick bool) (*File, error) {
	g, err := f.clone()
	if err != nil {
		return nil, err
	}
	if variant != "" {
		i := -1
		for j, v := range g.Variants {
			if v.Name == variant {
				i = j
			}
		}
		if i < 0 {
			return nil, &Error{Path: "variants", Msg: fmt.Sprintf("no variant named %q", variant)}
		}
		g.apply(g.Variants[i])
	}
	if quick {
		g.scale(g.Quick.Scale)
	}
	g.Variants, g.Quick.Variants = nil, nil
	out, err := g.clone()
	if err != nil {
		if e, ok := err.(*Error); ok {
			e.Msg = fmt.Sprintf("variant %q: %s", variant, e.Msg)
		}
		return nil, err
	}
	out.Variant, out.Quicked = variant, quick
	return out, nil
}

// clone copies f by writing and parsing it again, which also checks it.
func (f *File) clone() (*File, error) {
	b, err := yaml.Marshal(f)
	if err != nil {
		return nil, err
	}
	return Parse(b)
}

func mergeInto(dst *map[string]string, src map[string]string) {
	if len(src) == 0 {
		return
	}
	if *dst == nil {
		*dst = map[string]string{}
	}
	maps.Copy(*dst, src)
}

func (f *File) apply(v Variant) {
	if v.Cluster != "" {
		f.Cluster.Kind = v.Cluster
	}
	mergeInto(&f.Cluster.BrokerConfigs, v.BrokerConfs)
	if v.Faults != nil {
		f.Faults = *v.Faults
	}
	if v.Phases != nil {
		f.Phases = *v.Phases
	}
	for i := range f.Topics {
		if v.Partitions > 0 && len(f.Topics[i].Assignment) == 0 {
			f.Topics[i].Partitions = v.Partitions
		}
	}
	for i := range f.Producers {
		p := &f.Producers[i]
		if v.Producer.Client != "" {
			p.Client, p.JavaVersion = v.Producer.Client, ""
		}
		if v.Producer.JavaVersion != "" {
			p.JavaVersion = v.Producer.JavaVersion
		}
		mergeInto(&p.Configs, v.Producer.Configs)
		if v.Producer.Rate != nil {
			p.Rate = *v.Producer.Rate
		}
		if v.Producer.Distributor != nil {
			p.Distributor = *v.Producer.Distributor
		}
	}
	for i := range f.Consumers {
		c := &f.Consumers[i]
		if v.Consumer.Client != "" {
			c.Client, c.JavaVersion = v.Consumer.Client, ""
		}
		if v.Consumer.JavaVersion != "" {
			c.JavaVersion = v.Consumer.JavaVersion
		}
		if v.Consumer.AcquireMode != "" && c.Type == ConsumerShare {
			c.AcquireMode = v.Consumer.AcquireMode
		}
		if v.Consumer.Count > 0 {
			c.Count = v.Consumer.Count
		}
		mergeInto(&c.Configs, v.Consumer.Configs)
	}
}

// scale shrinks durations and record counts by s (quick mode); none
// falls below a second or a record.
func (f *File) scale(s float64) {
	d := func(x *Duration) {
		if *x > 0 {
			*x = Duration(max(time.Duration(float64(*x)*s), time.Second))
		}
	}
	n := func(x *int64) {
		if *x > 0 {
			*x = max(int64(math.Round(float64(*x)*s)), 1)
		}
	}
	for i := range f.Producers {
		n(&f.Producers[i].Records)
		for j := range f.Producers[i].Rate.Segments {
			d(&f.Producers[i].Rate.Segments[j].Duration)
		}
	}
	for i := range f.Phases {
		ph := &f.Phases[i]
		d(&ph.Duration)
		d(&ph.Timeout)
		n(&ph.Records)
	}
	for i := range f.Faults {
		d(&f.Faults[i].At)
	}
}
