package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/configadmin"
	"weir/internal/server"
)

// configHost is the config service's view of this node
// (configadmin.Host): the registry's topic overrides, the share groups'
// configs, the controller client and the metadata loop.
type configHost struct{ b *Broker }

func (h configHost) TopicConfigs(name string) (map[string]string, bool) {
	h.b.mu.RLock()
	defer h.b.mu.RUnlock()
	t := h.b.topics[name]
	if t == nil {
		return nil, false
	}
	return t.configs, true
}

func (h configHost) Groups() configadmin.GroupConfigs { return h.b.shares }

func (h configHost) Forward(ctx context.Context, req kmsg.Request) (kmsg.Response, int64, error) {
	resp, offset, err := h.b.ctl.AdminAt(ctx, req)
	if err != nil {
		return nil, -1, controllerError(err)
	}
	return resp, offset, nil
}

func (h configHost) WaitApplied(ctx context.Context, offset int64) error {
	return h.b.waitApplied(ctx, offset)
}

// forwardConfigs answers a config request at once when nothing passed
// its checks to forward, else off the request path once the controller
// decided and this node applied the outcome.
func (b *Broker) forwardConfigs(ctx context.Context, resp kmsg.Response, fwd *configadmin.Forward) *server.Reply {
	if fwd == nil {
		return server.Ready(resp)
	}
	return b.async(ctx, fwd.Decide)
}
