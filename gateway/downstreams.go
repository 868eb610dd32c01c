package gateway

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
	"go.uber.org/zap"

	"github.com/pallasgw/pallasgw/agents"
	"github.com/pallasgw/pallasgw/agents/mcpclient"
	"github.com/pallasgw/pallasgw/agents/pins"
	"github.com/pallasgw/pallasgw/agents/proxy"
	"github.com/pallasgw/pallasgw/agents/sessions"
)

// downstreamCache keeps one mcpclient.Manager per downstream server across
// snapshots, so that a reload which leaves a server's config unchanged keeps
// its warm connections, sessions and stdio process. Entries are
// keyed by server name and a digest of the server's spec, and counted by the
// snapshots that use them; the last snapshot to let go closes the manager
// (after its own last request). A changed server gets a fresh manager.
type downstreamCache struct {
	g       *Gateway
	mu      sync.Mutex
	entries map[string]*dsEntry
}

type dsEntry struct {
	m    *mcpclient.Manager
	refs int
}

func newDownstreamCache(g *Gateway) *downstreamCache {
	return &downstreamCache{g: g, entries: map[string]*dsEntry{}}
}

func specKey(s mcpclient.ServerSpec) string {
	b, _ := json.Marshal(s) // stable: struct fields in order, maps sorted
	sum := sha256.Sum256(b)
	return s.Name + "\x00" + hex.EncodeToString(sum[:])
}

// acquire returns the snapshot's view of specs, reusing unchanged servers'
// managers. Reused servers' tool lists are refreshed (on reload).
func (c *downstreamCache) acquire(specs []mcpclient.ServerSpec) *downstreams {
	c.mu.Lock()
	defer c.mu.Unlock()
	d := &downstreams{cache: c, guard: c.g.pins, byServer: make(map[string]*mcpclient.Manager, len(specs))}
	for _, spec := range specs {
		key := specKey(spec)
		e := c.entries[key]
		if e == nil {
			e = &dsEntry{m: mcpclient.NewManager([]mcpclient.ServerSpec{spec}, mcpclient.Options{
				Logger: c.g.log.Named("downstream"), Metrics: c.g.metrics, ClientName: "pallasgw", ClientVersion: c.g.opts.Version,
				ToolFilter: c.g.pins.Filter, // pins.go: each list read is hashed and checked once
				CallerOf:   sessions.Caller, // whom a session_scope caller server's session belongs to
				Sessions:   c.g.downstreamStore(),
			})}
			c.entries[key] = e
		} else {
			e.m.Invalidate(spec.Name)
		}
		e.refs++
		d.byServer[spec.Name] = e.m
		d.keys = append(d.keys, key)
	}
	return d
}

// release drops one snapshot's references, closing unused managers.
func (c *downstreamCache) release(keys []string) {
	c.mu.Lock()
	var closing []*mcpclient.Manager
	for _, k := range keys {
		e := c.entries[k]
		if e == nil {
			continue
		}
		if e.refs--; e.refs == 0 {
			delete(c.entries, k)
			closing = append(closing, e.m)
		}
	}
	c.mu.Unlock()
	for _, m := range closing {
		if err := m.Close(); err != nil {
			c.g.log.Warn("closing downstream client", zap.Error(err))
		}
	}
	c.forgetGone(keys)
}

// forgetGone deletes the metric series of the servers of keys that no
// snapshot uses any more (removed from the config, not changed).
func (c *downstreamCache) forgetGone(keys []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	used := map[string]bool{}
	for k := range c.entries {
		name, _, _ := strings.Cut(k, "\x00")
		used[name] = true
	}
	for _, k := range keys {
		if name, _, _ := strings.Cut(k, "\x00"); !used[name] {
			c.g.metrics.ForgetServer(name)
		}
	}
}

// downstreams is one snapshot's downstream servers. It implements what the
// agents need (agents.Downstream, proxy.CatalogDownstream and
// proxy.LoggingDownstream) by passing each call to the server's manager.
type downstreams struct {
	cache    *downstreamCache
	guard    *pins.Guard // refuses calls of unapproved tools (pins.go)
	byServer map[string]*mcpclient.Manager
	keys     []string
	once     sync.Once
}

func (d *downstreams) close() { d.once.Do(func() { d.cache.release(d.keys) }) }

func (d *downstreams) get(server string) (*mcpclient.Manager, error) {
	m := d.byServer[server]
	if m == nil {
		return nil, fmt.Errorf("%w: %q", mcpclient.ErrUnknownServer, server)
	}
	return m, nil
}

func (d *downstreams) Tools(ctx context.Context, server string, hdr http.Header) ([]mcp.Tool, error) {
	m, err := d.get(server)
	if err != nil {
		return nil, err
	}
	return m.Tools(ctx, server, hdr)
}

func (d *downstreams) CallTool(ctx context.Context, server, tool string, args map[string]any, hdr http.Header, onProgress mcpclient.ProgressFunc) (*mcp.CallToolResult, error) {
	m, err := d.get(server)
	if err != nil {
		return nil, err
	}
	if err := d.allowCall(ctx, server, tool, hdr); err != nil {
		return nil, err
	}
	return m.CallTool(ctx, server, tool, args, hdr, onProgress)
}

var _ mcpclient.RawCaller = (*downstreams)(nil)

// CallToolRaw is CallTool with the result as the downstream sent it (a
// proxy's fast path, mcpclient.RawCaller).
func (d *downstreams) CallToolRaw(ctx context.Context, server, tool string, args json.RawMessage, hdr http.Header, onProgress mcpclient.ProgressFunc) (*mcpclient.RawResult, error) {
	m, err := d.get(server)
	if err != nil {
		return nil, err
	}
	if err := d.allowCall(ctx, server, tool, hdr); err != nil {
		return nil, err
	}
	return m.CallToolRaw(ctx, server, tool, args, hdr, onProgress)
}

var _ agents.JSONDownstream = (*downstreams)(nil)

// CallToolJSON is CallTool with the arguments as JSON (the tool loop,
// agents.JSONDownstream).
func (d *downstreams) CallToolJSON(ctx context.Context, server, tool string, args json.RawMessage, hdr http.Header, onProgress mcpclient.ProgressFunc) (*mcp.CallToolResult, error) {
	m, err := d.get(server)
	if err != nil {
		return nil, err
	}
	if err := d.allowCall(ctx, server, tool, hdr); err != nil {
		return nil, err
	}
	return m.CallToolJSON(ctx, server, tool, args, hdr, onProgress)
}

func (d *downstreams) SetLogLevel(ctx context.Context, server string, level mcp.LoggingLevel, hdr http.Header) error {
	m, err := d.get(server)
	if err != nil {
		return err
	}
	return m.SetLogLevel(ctx, server, level, hdr)
}

func (d *downstreams) Probe(ctx context.Context, server string, hdr http.Header) error {
	m, err := d.get(server)
	if err != nil {
		return err
	}
	return m.Probe(ctx, server, hdr)
}

func (d *downstreams) ListPrompts(ctx context.Context, server string, hdr http.Header) (*mcp.ListPromptsResult, error) {
	m, err := d.get(server)
	if err != nil {
		return nil, err
	}
	return m.ListPrompts(ctx, server, hdr)
}

func (d *downstreams) GetPrompt(ctx context.Context, server, name string, args map[string]string, hdr http.Header) (*mcp.GetPromptResult, error) {
	m, err := d.get(server)
	if err != nil {
		return nil, err
	}
	return m.GetPrompt(ctx, server, name, args, hdr)
}

func (d *downstreams) ListResources(ctx context.Context, server string, hdr http.Header) (*mcp.ListResourcesResult, error) {
	m, err := d.get(server)
	if err != nil {
		return nil, err
	}
	return m.ListResources(ctx, server, hdr)
}

func (d *downstreams) ListResourceTemplates(ctx context.Context, server string, hdr http.Header) (*mcp.ListResourceTemplatesResult, error) {
	m, err := d.get(server)
	if err != nil {
		return nil, err
	}
	return m.ListResourceTemplates(ctx, server, hdr)
}

func (d *downstreams) ReadResource(ctx context.Context, server, uri string, hdr http.Header) (*mcp.ReadResourceResult, error) {
	m, err := d.get(server)
	if err != nil {
		return nil, err
	}
	return m.ReadResource(ctx, server, uri, hdr)
}

var _ proxy.CapabilitiesDownstream = (*downstreams)(nil)

func (d *downstreams) Capabilities(ctx context.Context, server string, hdr http.Header) (mcp.ServerCapabilities, error) {
	m, err := d.get(server)
	if err != nil {
		return mcp.ServerCapabilities{}, err
	}
	return m.Capabilities(ctx, server, hdr)
}

var _ proxy.TaskDownstream = (*downstreams)(nil)

func (d *downstreams) TaskRequest(ctx context.Context, server, method string, params json.RawMessage, hdr http.Header) (json.RawMessage, error) {
	m, err := d.get(server)
	if err != nil {
		return nil, err
	}
	return m.TaskRequest(ctx, server, method, params, hdr)
}
