package mcpclient

// The one downstream the agents call: a snapshot's view (Downstreams) over
// per-server Managers that a Cache keeps across snapshots, so that a reload
// which leaves a server's config unchanged keeps its warm connections,
// sessions and stdio process. The gateway's tool pins guard every call:
// they are the managers' call guard (Options.Guard, guard.go).

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
)

// CacheOptions are what a Cache builds its Managers and views with.
type CacheOptions struct {
	// Manager is every Manager's Options (one server each), its call
	// guard among them.
	Manager Options
	// Log takes the cache's own messages (a manager that fails to close).
	Log *zap.Logger
}

// Cache keeps one Manager per downstream server across snapshots. Entries
// are keyed by server name and a digest of the server's spec, and counted
// by the views that use them; the last view to let go closes the manager
// (after its own last request). A changed server gets a fresh manager.
type Cache struct {
	opts    CacheOptions
	mu      sync.Mutex
	entries map[string]*cacheEntry
}

type cacheEntry struct {
	m    *Manager
	refs int
}

// NewCache returns an empty cache.
func NewCache(opts CacheOptions) *Cache {
	if opts.Log == nil {
		opts.Log = zap.NewNop()
	}
	return &Cache{opts: opts, entries: map[string]*cacheEntry{}}
}

func specKey(s ServerSpec) string {
	b, _ := json.Marshal(s) // stable: struct fields in order, maps sorted
	sum := sha256.Sum256(b)
	return s.Name + "\x00" + hex.EncodeToString(sum[:])
}

// Acquire returns a snapshot's view of specs, reusing unchanged servers'
// managers. Reused servers' tool lists are refreshed (on reload). Close
// the view when the snapshot is retired.
func (c *Cache) Acquire(specs []ServerSpec) *Downstreams {
	c.mu.Lock()
	defer c.mu.Unlock()
	d := &Downstreams{cache: c, byServer: make(map[string]*Manager, len(specs))}
	for _, spec := range specs {
		key := specKey(spec)
		e := c.entries[key]
		if e == nil {
			e = &cacheEntry{m: NewManager([]ServerSpec{spec}, c.opts.Manager)}
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

// release drops one view's references, closing unused managers.
func (c *Cache) release(keys []string) {
	c.mu.Lock()
	var closing []*Manager
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
			c.opts.Log.Warn("closing downstream client", zap.Error(err))
		}
	}
	c.forgetGone(keys)
}

// forgetGone deletes the metric series of the servers of keys that no
// view uses any more (removed from the config, not changed).
func (c *Cache) forgetGone(keys []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	used := map[string]bool{}
	for k := range c.entries {
		name, _, _ := strings.Cut(k, "\x00")
		used[name] = true
	}
	for _, k := range keys {
		if name, _, _ := strings.Cut(k, "\x00"); !used[name] && c.opts.Manager.Metrics != nil {
			c.opts.Manager.Metrics.ForgetServer(name)
		}
	}
}

// Downstreams is one snapshot's downstream servers: each call goes to its
// server's Manager (whose guard checks a tools/call).
type Downstreams struct {
	cache    *Cache
	byServer map[string]*Manager
	keys     []string
	once     sync.Once
}

// Close lets go of the view's managers (Cache.Acquire); the second Close
// does nothing.
func (d *Downstreams) Close() { d.once.Do(func() { d.cache.release(d.keys) }) }

// Hidden says why the pins hide server's tool from its lists, or nil
// (Manager.Hidden).
func (d *Downstreams) Hidden(server, tool string) error {
	if m := d.byServer[server]; m != nil {
		return m.Hidden(server, tool)
	}
	return nil
}

// on runs f on server's manager.
func on[T any](d *Downstreams, server string, f func(*Manager) (T, error)) (T, error) {
	m, err := d.manager(server)
	if err != nil {
		var zero T
		return zero, err
	}
	return f(m)
}

// manager is server's manager (no closure: a tools/call is the hot path).
func (d *Downstreams) manager(server string) (*Manager, error) {
	if m := d.byServer[server]; m != nil {
		return m, nil
	}
	return nil, fmt.Errorf("%w: %q", ErrUnknownServer, server)
}

// Tools is server's tool list (Manager.Tools); no closure: a proxy reads
// it on every call.
func (d *Downstreams) Tools(ctx context.Context, server string, hdr http.Header) ([]mcp.Tool, error) {
	m, err := d.manager(server)
	if err != nil {
		return nil, err
	}
	return m.Tools(ctx, server, hdr)
}

func (d *Downstreams) CallTool(ctx context.Context, server, tool string, args map[string]any, hdr http.Header, onProgress ProgressFunc, opts CallOptions) (*mcp.CallToolResult, error) {
	m, err := d.manager(server)
	if err != nil {
		return nil, err
	}
	return m.CallTool(ctx, server, tool, args, hdr, onProgress, opts)
}

// CallToolRaw is CallTool with the result as the downstream sent it (a
// proxy's fast path).
func (d *Downstreams) CallToolRaw(ctx context.Context, server, tool string, args json.RawMessage, hdr http.Header, onProgress ProgressFunc, opts CallOptions) (*RawResult, error) {
	m, err := d.manager(server)
	if err != nil {
		return nil, err
	}
	return m.CallToolRaw(ctx, server, tool, args, hdr, onProgress, opts)
}

// CallToolJSON is CallTool with the arguments as JSON (the tool loop).
func (d *Downstreams) CallToolJSON(ctx context.Context, server, tool string, args json.RawMessage, hdr http.Header, onProgress ProgressFunc, opts CallOptions) (*mcp.CallToolResult, error) {
	m, err := d.manager(server)
	if err != nil {
		return nil, err
	}
	return m.CallToolJSON(ctx, server, tool, args, hdr, onProgress, opts)
}

func (d *Downstreams) SetLogLevel(ctx context.Context, server string, level mcp.LoggingLevel, hdr http.Header) error {
	_, err := on(d, server, func(m *Manager) (struct{}, error) { return struct{}{}, m.SetLogLevel(ctx, server, level, hdr) })
	return err
}

func (d *Downstreams) Probe(ctx context.Context, server string, hdr http.Header) error {
	_, err := on(d, server, func(m *Manager) (struct{}, error) { return struct{}{}, m.Probe(ctx, server, hdr) })
	return err
}

func (d *Downstreams) ListPrompts(ctx context.Context, server string, hdr http.Header) (*mcp.ListPromptsResult, error) {
	return on(d, server, func(m *Manager) (*mcp.ListPromptsResult, error) { return m.ListPrompts(ctx, server, hdr) })
}

func (d *Downstreams) GetPrompt(ctx context.Context, server, name string, args map[string]string, hdr http.Header, relay *Relay) (*mcp.GetPromptResult, error) {
	return on(d, server, func(m *Manager) (*mcp.GetPromptResult, error) {
		return m.GetPrompt(ctx, server, name, args, hdr, relay)
	})
}

func (d *Downstreams) ListResources(ctx context.Context, server string, hdr http.Header) (*mcp.ListResourcesResult, error) {
	return on(d, server, func(m *Manager) (*mcp.ListResourcesResult, error) { return m.ListResources(ctx, server, hdr) })
}

func (d *Downstreams) ListResourceTemplates(ctx context.Context, server string, hdr http.Header) (*mcp.ListResourceTemplatesResult, error) {
	return on(d, server, func(m *Manager) (*mcp.ListResourceTemplatesResult, error) {
		return m.ListResourceTemplates(ctx, server, hdr)
	})
}

func (d *Downstreams) ReadResource(ctx context.Context, server, uri string, hdr http.Header, relay *Relay) (*mcp.ReadResourceResult, error) {
	return on(d, server, func(m *Manager) (*mcp.ReadResourceResult, error) { return m.ReadResource(ctx, server, uri, hdr, relay) })
}

func (d *Downstreams) Capabilities(ctx context.Context, server string, hdr http.Header) (mcp.ServerCapabilities, error) {
	return on(d, server, func(m *Manager) (mcp.ServerCapabilities, error) { return m.Capabilities(ctx, server, hdr) })
}

func (d *Downstreams) TaskRequest(ctx context.Context, server, method string, params json.RawMessage, hdr http.Header) (json.RawMessage, error) {
	return on(d, server, func(m *Manager) (json.RawMessage, error) { return m.TaskRequest(ctx, server, method, params, hdr) })
}
