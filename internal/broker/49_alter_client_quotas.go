package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/quota"
	"weir/internal/server"
)

// AlterClientQuotas v0-1: decided by the controller
// (controller.AlterClientQuotas); answered once this node's image holds
// the values set and not the ones removed, so that its quota enforcement
// uses them.
var _ = register(handler{key: 49, min: 0, max: 1, serve: func(b *Broker, ctx context.Context, req *server.Request) *server.Reply {
	r := req.Body.(*kmsg.AlterClientQuotasRequest)
	return b.forwardThenWait(ctx, req, func(resp kmsg.Response) func() bool {
		if r.ValidateOnly {
			return nil
		}
		var alts []quota.Alteration
		ok := map[string]bool{}
		for _, e := range resp.(*kmsg.AlterClientQuotasResponse).Entries {
			if e.ErrorCode == 0 {
				ok[entityKey(e.Entity)] = true
			}
		}
		for i := range r.Entries {
			parts := make([]kmsg.AlterClientQuotasResponseEntryEntity, len(r.Entries[i].Entity))
			for j, p := range r.Entries[i].Entity {
				parts[j] = kmsg.AlterClientQuotasResponseEntryEntity{Type: p.Type, Name: p.Name}
			}
			if a, err := quota.ParseAlteration(&r.Entries[i]); err == nil && ok[entityKey(parts)] {
				alts = append(alts, a)
			}
		}
		return func() bool {
			q := b.img.Load().ClientQuotas()
			for _, a := range alts {
				for k, v := range a.Set {
					if got, ok := q.Value(a.Entity, k); !ok || got != v {
						return false
					}
				}
				for _, k := range a.Remove {
					if _, ok := q.Value(a.Entity, k); ok {
						return false
					}
				}
			}
			return true
		}
	})
}})

// entityKey names an entity's parts for matching answers to entries.
func entityKey(parts []kmsg.AlterClientQuotasResponseEntryEntity) string {
	var s string
	for _, p := range parts {
		s += p.Type + "\x00"
		if p.Name == nil {
			s += "\x01"
		} else {
			s += *p.Name
		}
		s += "\x00"
	}
	return s
}
