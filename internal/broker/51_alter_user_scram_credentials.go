package broker

import (
	"bytes"
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/server"
)

// AlterUserScramCredentials v0: decided by the controller
// (controller.AlterUserScramCredentials, which derives the stored and
// server keys from the salted password); answered once this node's image
// holds the changes, so that the users can authenticate here at once.
var _ = register(handler{key: 51, min: 0, max: 0, serve: func(b *Broker, ctx context.Context, req *server.Request) *server.Reply {
	r := req.Body.(*kmsg.AlterUserSCRAMCredentialsRequest)
	return b.forwardThenWait(ctx, req, func(resp kmsg.Response) func() bool {
		ok := map[string]bool{}
		for _, res := range resp.(*kmsg.AlterUserSCRAMCredentialsResponse).Results {
			if res.ErrorCode == 0 {
				ok[res.User] = true
			}
		}
		return func() bool {
			img := b.img.Load()
			for _, d := range r.Deletions {
				if _, there := img.ScramCredential(d.Name, d.Mechanism); ok[d.Name] && there {
					return false
				}
			}
			for _, u := range r.Upsertions {
				c, there := img.ScramCredential(u.Name, u.Mechanism)
				if ok[u.Name] && (!there || c.Iterations != u.Iterations || !bytes.Equal(c.Salt, u.Salt)) {
					return false
				}
			}
			return true
		}
	})
}})
