package mcpclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"go.uber.org/zap"
)

// maxToolPages bounds a paginated tools/list.
const maxToolPages = 100

// Callers that find a session's tool cache cold share one tools/list: without
// that, 128 concurrent first calls sent up to 117 of them downstream (test/bench/README.md,
// P4). A fetch belongs to one cache generation, so a caller that comes after
// an invalidation never gets a list fetched before it, and toolCache.put
// drops the list if the generation moved on meanwhile. The fetch runs on a
// context of its own: a caller that gives up returns at once without failing
// the others, and the last one to give up cancels the fetch.

// fetchKey names one generation of one session's tool cache.
type fetchKey struct {
	cache *toolCache
	gen   uint64
}

// toolFetch is one tools/list in flight and, once done is closed, its result.
type toolFetch struct {
	done    chan struct{}
	tools   []mcp.Tool
	err     error
	waiters int // callers still waiting; guarded by fetchGroup.mu
	cancel  context.CancelFunc
}

// fetchGroup holds a Manager's fetches in flight. An entry is removed when
// its fetch ends or is abandoned, so there is one per fetch running: at most
// one per session, and briefly two when an invalidation came during a fetch.
type fetchGroup struct {
	mu      sync.Mutex
	flights map[fetchKey]*toolFetch // created on first use
}

// sessionTools returns s's cached tool list or, on a cold cache, the result
// of the fetch of the cache's generation, which it starts if none is in
// flight.
func (m *Manager) sessionTools(ctx context.Context, s *session, cli *client.Client) ([]mcp.Tool, error) {
	cached, gen, ok, stale := s.tools.get(m.opts.ToolListTTL)
	if stale && s.tools.refresh(gen) && !m.track(func() { m.refreshTools(s, cli, gen) }) {
		s.tools.refreshed(gen, cached, nil) // closing: nothing to refresh for
	}
	if ok {
		return cached, nil
	}
	key := fetchKey{cache: &s.tools, gen: gen}
	f, fctx, lead := m.fetches.join(m.ctx, key)
	if lead && !m.track(func() { m.fetchTools(fctx, cli, s.srv.spec, key, f) }) {
		m.fetches.finish(key, f, nil, errClosed)
	}
	return m.fetches.wait(ctx, key, f)
}

// refreshTools reads the tool list of s again in the background, once its
// cached one is older than Options.ToolListTTL: callers meanwhile get the
// cached list at once. A failure drops the cache, so the next caller reads
// the list itself (and reconnects, or meets the failure).
func (m *Manager) refreshTools(s *session, cli *client.Client, gen uint64) {
	timeout := s.srv.spec.Timeout
	ctx, cancel := context.WithTimeoutCause(m.ctx, timeout, &timeoutError{timeout: timeout})
	defer cancel()
	ctx = withListOp(ctx, string(mcp.MethodToolsList))
	tools, err := m.listTools(ctx, s.srv.spec.Name, cli)
	if err != nil {
		m.log.Debug("tools/list refresh failed; the next caller reads it again", zap.String("server", s.srv.spec.Name), zap.Error(err))
	}
	s.tools.refreshed(gen, tools, err)
}

// fetchTools runs the fetch f under the server's timeout and caches its list
// if the generation is still current. ctx ends with the Manager or when every
// waiter has given up.
func (m *Manager) fetchTools(ctx context.Context, cli *client.Client, spec ServerSpec, key fetchKey, f *toolFetch) {
	timeout := spec.Timeout
	ctx, cancel := context.WithTimeoutCause(ctx, timeout, &timeoutError{timeout: timeout})
	defer cancel()
	// Marked as a request of do, as each caller's own tools/list was (see
	// serverRequest); no caller's Relay or other values are carried.
	ctx = withListOp(ctx, string(mcp.MethodToolsList))
	tools, err := m.listTools(ctx, spec.Name, cli)
	var te *timeoutError
	if err != nil && errors.As(context.Cause(ctx), &te) {
		// A waiter that joined late outlives the fetch's timeout; its own
		// wrap would not name the timeout.
		err = fmt.Errorf("%w: %w", te, err)
	}
	if err == nil {
		key.cache.put(key.gen, tools)
	}
	m.fetches.finish(key, f, tools, err)
}

// join adds a waiter to the fetch of key or, if there is none, creates it
// with a context derived from parent, which the caller (lead) must run.
func (g *fetchGroup) join(parent context.Context, key fetchKey) (f *toolFetch, ctx context.Context, lead bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if f := g.flights[key]; f != nil {
		f.waiters++
		return f, nil, false
	}
	if g.flights == nil {
		g.flights = map[fetchKey]*toolFetch{}
	}
	ctx, cancel := context.WithCancel(parent)
	f = &toolFetch{done: make(chan struct{}), waiters: 1, cancel: cancel}
	g.flights[key] = f
	return f, ctx, true
}

// wait returns f's result, or ctx's error if ctx ends first.
func (g *fetchGroup) wait(ctx context.Context, key fetchKey, f *toolFetch) ([]mcp.Tool, error) {
	select {
	case <-f.done:
		return f.tools, f.err
	case <-ctx.Done():
		g.leave(key, f)
		return nil, ctx.Err()
	}
}

// leave drops a waiter that gave up; the last one abandons the fetch, so
// that the next caller starts a fresh one.
func (g *fetchGroup) leave(key fetchKey, f *toolFetch) {
	g.mu.Lock()
	f.waiters--
	last := f.waiters == 0
	if last && g.flights[key] == f {
		delete(g.flights, key)
	}
	g.mu.Unlock()
	if last {
		f.cancel()
	}
}

// finish publishes f's result. A caller arriving after it finds the list
// cached (put runs first) or, after an error, starts a new fetch.
func (g *fetchGroup) finish(key fetchKey, f *toolFetch, tools []mcp.Tool, err error) {
	g.mu.Lock()
	if g.flights[key] == f {
		delete(g.flights, key)
	}
	g.mu.Unlock()
	f.tools, f.err = tools, err
	close(f.done)
	f.cancel()
}

// listTools lists the server's tools, all pages, keeping each tool's
// inputSchema and outputSchema as the server sent them (RawInputSchema,
// RawOutputSchema). mcp-go's ListTools parses schemas into its
// ToolArgumentsSchema, which keeps only type, properties, required,
// additionalProperties and $defs (and rewrites draft-07 definitions): a
// proxy would hand its callers a different schema. So the request goes
// through the client's transport, as mcp-go's own would on a session-based
// connection (no _meta or header additions apply there), with an id of its
// own that cannot clash with the client's numeric ones. The whole list,
// with each tool's JSON as sent, goes through Options.ToolFilter if set.
func (m *Manager) listTools(ctx context.Context, server string, cli *client.Client) ([]mcp.Tool, error) {
	var tools []mcp.Tool
	var raws []json.RawMessage
	seen := map[string]bool{}
	cursor := ""
	for range maxToolPages {
		req := transport.JSONRPCRequest{
			JSONRPC: mcp.JSONRPC_VERSION,
			ID:      mcp.NewRequestId(requestID("tools", m.listSeq.Add(1))),
			Method:  string(mcp.MethodToolsList),
		}
		if cursor != "" {
			req.Params = map[string]any{"cursor": cursor}
		}
		resp, err := cli.GetTransport().SendRequest(ctx, req)
		if err != nil {
			return nil, transport.NewError(err)
		}
		if resp.Error != nil {
			return nil, resp.Error.AsError()
		}
		var page struct {
			Tools      []json.RawMessage `json:"tools"`
			NextCursor string            `json:"nextCursor"`
		}
		if err := json.Unmarshal(resp.Result, &page); err != nil {
			return nil, fmt.Errorf("tools/list result: %w", err)
		}
		for _, raw := range page.Tools {
			t, err := rawTool(raw)
			if err != nil {
				return nil, err
			}
			tools, raws = append(tools, t), append(raws, raw)
		}
		if page.NextCursor == "" {
			if m.opts.ToolFilter != nil {
				tools = m.opts.ToolFilter(server, tools, raws)
			}
			return tools, nil
		}
		if seen[page.NextCursor] {
			return nil, fmt.Errorf("tools/list: cursor %q repeats", page.NextCursor)
		}
		seen[page.NextCursor], cursor = true, page.NextCursor
	}
	return nil, fmt.Errorf("tools/list: more than %d pages", maxToolPages)
}

// rawTool decodes one tool with its schemas kept as sent.
func rawTool(raw json.RawMessage) (mcp.Tool, error) {
	var t mcp.Tool
	if err := json.Unmarshal(raw, &t); err != nil {
		return t, fmt.Errorf("tools/list: a tool: %w", err)
	}
	var schemas struct {
		In  json.RawMessage `json:"inputSchema"`
		Out json.RawMessage `json:"outputSchema"`
	}
	if err := json.Unmarshal(raw, &schemas); err != nil {
		return t, fmt.Errorf("tools/list: tool %q: %w", t.Name, err)
	}
	if len(schemas.In) > 0 && string(schemas.In) != "null" {
		t.InputSchema, t.RawInputSchema = mcp.ToolInputSchema{}, schemas.In
	}
	if len(schemas.Out) > 0 && string(schemas.Out) != "null" {
		t.OutputSchema, t.RawOutputSchema = mcp.ToolOutputSchema{}, schemas.Out
	}
	return t, nil
}
