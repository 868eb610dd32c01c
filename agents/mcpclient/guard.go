package mcpclient

// The manager's call guard (Options.Guard): the gateway's tool pins refuse
// a tools/call of a tool whose definition awaits approval or was rejected,
// here, before the call goes out, whichever kind makes it.

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/pallasgw/pallasgw/agents/pins"
)

// allowCall refuses a call of a tool whose definition awaits approval or
// was rejected (pins.Guard.CheckCall). A tool the guard has not seen in a
// list yet, on a server whose mode needs to know it, has the list read
// first (cached per session, so once).
func (m *Manager) allowCall(ctx context.Context, server, tool string, hdr http.Header) error {
	g := m.opts.Guard
	if g == nil {
		return nil
	}
	err := g.CheckCall(server, tool)
	if !errors.Is(err, pins.ErrUnseen) {
		return err
	}
	if _, lerr := m.Tools(ctx, server, hdr); lerr != nil {
		return fmt.Errorf("reading the tool list of server %q to check tool %q's pin: %w", server, tool, lerr)
	}
	return g.CheckListed(server, tool)
}

// Hidden says why the guard hides server's tool from its lists, or nil
// (the proxy and the toolbox answer a call of a hidden name with it, not
// as an unknown tool).
func (m *Manager) Hidden(server, tool string) error {
	if m.opts.Guard == nil {
		return nil
	}
	return m.opts.Guard.Hidden(server, tool)
}
