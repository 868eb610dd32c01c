package mcpclient

import (
	"encoding/json"
	"errors"
	"net/http"
	"testing"

	"github.com/pallasgw/pallasgw/agents/pins"
)

// The manager's call guard refuses a call of a tool the pins hold, on every
// call path, before anything reaches the server; without a guard the call
// goes.
func TestManagerCallGuard(t *testing.T) {
	d := newDownstream(t, true)
	g := pins.NewGuard(nil, nil)
	g.SetPolicy(&pins.Policy{Servers: map[string]pins.ServerPolicy{"a": {Pin: pins.Enforce}}})
	m := newManager(t, Options{ToolFilter: g.Filter, Guard: g}, d.spec("a"))
	ctx := testCtx(t)
	args := json.RawMessage(`{"text":"hi"}`)
	calls := map[string]func() error{
		"CallTool": func() error {
			_, err := m.CallTool(ctx, "a", "echo", map[string]any{"text": "hi"}, http.Header{}, nil, CallOptions{})
			return err
		},
		"CallToolRaw": func() error {
			_, err := m.CallToolRaw(ctx, "a", "echo", args, http.Header{}, nil, CallOptions{})
			return err
		},
		"CallToolJSON": func() error {
			_, err := m.CallToolJSON(ctx, "a", "echo", args, http.Header{}, nil, CallOptions{})
			return err
		},
	}
	for name, call := range calls {
		if err := call(); !errors.Is(err, pins.ErrAwaitsApproval) {
			t.Errorf("%s of a new tool in enforce mode: %v, want it refused as awaiting approval", name, err)
		}
	}
	if n := d.count(http.MethodPost, "tools/call"); n != 0 {
		t.Errorf("%d tools/call reached the server, want 0", n)
	}
	if err := m.Hidden("a", "echo"); !errors.Is(err, pins.ErrAwaitsApproval) {
		t.Errorf("Hidden: %v, want awaiting approval", err)
	}

	open := newManager(t, Options{}, d.spec("a"))
	if _, err := open.CallTool(ctx, "a", "echo", map[string]any{"text": "hi"}, http.Header{}, nil, CallOptions{}); err != nil {
		t.Fatalf("without a guard: %v", err)
	}
	if err := open.Hidden("a", "echo"); err != nil {
		t.Errorf("Hidden without a guard: %v", err)
	}
}
