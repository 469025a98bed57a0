package broker

import (
	"context"

	"weir/internal/auth/scram"
	"weir/internal/metadata"
	"weir/internal/server"
)

// serveAuthorized serves a request through the admission gate
// (internal/admission): authorized, served as allowed, and throttled
// over the client's quotas. A request forwarded by another broker goes
// to the controller.
func (b *Broker) serveAuthorized(ctx context.Context, h handler, req *server.Request) *server.Reply {
	return b.gate.Serve(ctx, req, func(ctx context.Context, req *server.Request) *server.Reply {
		if fromBroker(req) {
			return b.handleControllerRequest(ctx, req)
		}
		return h.serve(b, ctx, req)
	})
}

// ScramCredential is a user's SCRAM credential for a mechanism
// ("SCRAM-SHA-256", "SCRAM-SHA-512") from this node's metadata image:
// the lookup a listener's SCRAM server uses (auth.Deps.ScramCredential).
func (b *Broker) ScramCredential(mechanism, user string) (scram.Credential, bool) {
	img := b.img.Load()
	m, ok := metadata.ScramMechanismByName(mechanism)
	if img == nil || !ok {
		return scram.Credential{}, false
	}
	c, ok := img.ScramCredential(user, m)
	if !ok {
		return scram.Credential{}, false
	}
	return scram.Credential{Salt: c.Salt, StoredKey: c.StoredKey, ServerKey: c.ServerKey, Iterations: int(c.Iterations)}, true
}
