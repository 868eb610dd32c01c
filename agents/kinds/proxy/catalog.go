package proxy

// Prompts, resources and resource templates of the proxy kind (see
// proxy.go for the design). Prompt names and resource names are prefixed
// like tool names when the agent has several servers; resource URIs are
// never changed. With one server every read goes to it; with several, a
// read goes to the first server (in config order) the caller may use whose
// resources/list contains the URI, else whose resources/templates/list has a
// template matching it; a URI no server lists is not found.

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/pallasgw/pallasgw/agents/mcpclient"
	"github.com/pallasgw/pallasgw/policy"
)

// promptView lists the prompts of the servers the caller may use, under
// their exposed names, and registers those names.
func (p *Proxy) promptView(ctx context.Context, inbound http.Header) []mcp.Prompt {
	out := []mcp.Prompt{}
	var missing []server.ServerPrompt
	for _, srv := range p.servers(policy.CallerFrom(ctx)) {
		res, err := p.d.Downstream.ListPrompts(ctx, srv, p.outbound(ctx, srv, inbound, nil))
		if err != nil {
			p.listFailed(ctx, "prompts/list", srv, err)
			continue
		}
		for _, pr := range res.Prompts {
			name := p.exposed(srv, pr.Name)
			if _, ok := p.prompts.Load(name); !ok {
				p.prompts.Store(name, route{server: srv, name: pr.Name})
			}
			if _, ok := p.promptsReg.Load(name); !ok {
				missing = append(missing, server.ServerPrompt{Prompt: mcp.NewPrompt(name), Handler: p.handlePrompt})
			}
			pr.Name = name
			out = append(out, pr)
		}
	}
	if len(missing) > 0 {
		p.regMu.Lock()
		fresh := missing[:0]
		for _, sp := range missing {
			if _, ok := p.promptsReg.Load(sp.Prompt.Name); !ok {
				fresh = append(fresh, sp)
			}
		}
		if len(fresh) > 0 {
			// Marked only once mcp-go has them, as in registerTools.
			p.srv.AddPrompts(fresh...)
			for _, sp := range fresh {
				p.promptsReg.Store(sp.Prompt.Name, true)
			}
		}
		p.regMu.Unlock()
	}
	return out
}

func (p *Proxy) ensurePrompt(ctx context.Context, name string, inbound http.Header) {
	if _, ok := p.promptsReg.Load(name); !ok {
		p.promptView(ctx, inbound)
	}
}

// handlePrompt is mcp-go's handler of an exposed prompt: getPrompt
// without a relay.
func (p *Proxy) handlePrompt(ctx context.Context, req mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
	return p.getPrompt(ctx, req, nil)
}

// getPrompt forwards prompts/get, the downstream's server-to-client
// requests meanwhile to relay (nil: none); the result is the downstream's.
func (p *Proxy) getPrompt(ctx context.Context, req mcp.GetPromptRequest, relay *mcpclient.Relay) (*mcp.GetPromptResult, error) {
	v, ok := p.prompts.Load(req.Params.Name)
	if !ok {
		return nil, fmt.Errorf("prompt %q not found", req.Params.Name)
	}
	r := v.(route)
	if err := p.allowServer(ctx, r.server, "prompt:"+r.name); err != nil {
		return nil, err
	}
	hdr, err := p.d.Outbound(ctx, r.server, req.Header, relay)
	if err != nil {
		return nil, err // as a call's: a caller not connected gets where to connect
	}
	return p.d.Downstream.GetPrompt(ctx, r.server, r.name, req.Params.Arguments, hdr, relay)
}

// allowServer audits the caller's use of srv for what and returns an error
// when the caller rule refuses it.
func (p *Proxy) allowServer(ctx context.Context, srv, what string) error {
	start := time.Now()
	caller := policy.CallerFrom(ctx)
	d := p.d.Callers.AllowServer(caller, srv)
	p.d.Auditor.Record(ctx, policy.AuditEvent{RequestID: p.d.RequestID(ctx), Caller: caller, Agent: p.d.Agent,
		Server: srv, Tool: what, Decision: d, Latency: time.Since(start)})
	if !d.Allowed {
		return fmt.Errorf("%s is denied by policy (%s) (request id %s)", what, d.Reason, p.d.RequestID(ctx))
	}
	return nil
}

// resourceView lists the resources of the servers the caller may use; names
// are prefixed like tools, URIs unchanged.
func (p *Proxy) resourceView(ctx context.Context, inbound http.Header) []mcp.Resource {
	return listView(ctx, p, inbound, "resources/list", func(ctx context.Context, srv string, hdr http.Header) ([]mcp.Resource, error) {
		res, err := p.d.Downstream.ListResources(ctx, srv, hdr)
		if err != nil {
			return nil, err
		}
		for i := range res.Resources {
			res.Resources[i].Name = p.exposed(srv, res.Resources[i].Name)
		}
		return res.Resources, nil
	})
}

// templateView lists the resource templates of the servers the caller may
// use (the catch-all template of the registry is never shown).
func (p *Proxy) templateView(ctx context.Context, inbound http.Header) []mcp.ResourceTemplate {
	return listView(ctx, p, inbound, "resources/templates/list", func(ctx context.Context, srv string, hdr http.Header) ([]mcp.ResourceTemplate, error) {
		res, err := p.d.Downstream.ListResourceTemplates(ctx, srv, hdr)
		if err != nil {
			return nil, err
		}
		for i := range res.ResourceTemplates {
			res.ResourceTemplates[i].Name = p.exposed(srv, res.ResourceTemplates[i].Name)
		}
		return res.ResourceTemplates, nil
	})
}

// listView is what list (method) answers for each server the caller may
// use, in the servers' order; a server that fails is logged and left out.
func listView[T any](ctx context.Context, p *Proxy, inbound http.Header, method string, list func(ctx context.Context, srv string, hdr http.Header) ([]T, error)) []T {
	out := []T{}
	for _, srv := range p.servers(policy.CallerFrom(ctx)) {
		items, err := list(ctx, srv, p.outbound(ctx, srv, inbound, nil))
		if err != nil {
			p.listFailed(ctx, method, srv, err)
			continue
		}
		out = append(out, items...)
	}
	return out
}

// ensureURI registers uri exactly when the catch-all template cannot match
// it and a server of the caller lists it.
func (p *Proxy) ensureURI(ctx context.Context, uri string, inbound http.Header) {
	if catchAllTemplate.URITemplate.Regexp().MatchString(uri) {
		return
	}
	if _, ok := p.exactURIs.Load(uri); ok {
		return
	}
	if _, err := p.resourceServer(ctx, uri, inbound); err != nil {
		return
	}
	p.regMu.Lock()
	defer p.regMu.Unlock()
	if _, ok := p.exactURIs.Load(uri); !ok {
		// Marked only once mcp-go has it, as in registerTools.
		p.srv.AddResource(mcp.NewResource(uri, uri), p.readResource)
		p.exactURIs.Store(uri, true)
	}
}

// readResource forwards resources/read to the server that owns the URI.
func (p *Proxy) readResource(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
	uri := req.Params.URI
	srv, err := p.resourceServer(ctx, uri, req.Header)
	if err != nil {
		return nil, err
	}
	if err := p.allowServer(ctx, srv, "resource:"+uri); err != nil {
		return nil, err
	}
	hdr, err := p.d.Outbound(ctx, srv, req.Header, nil)
	if err != nil {
		return nil, err // as getPrompt's
	}
	res, err := p.d.Downstream.ReadResource(ctx, srv, uri, hdr, nil)
	if err != nil {
		return nil, err
	}
	return res.Contents, nil
}

// resourceServer picks the server a read of uri goes to (see the file
// comment).
func (p *Proxy) resourceServer(ctx context.Context, uri string, inbound http.Header) (string, error) {
	if len(p.d.Servers) == 1 {
		return p.d.Servers[0], nil
	}
	servers := p.servers(policy.CallerFrom(ctx))
	for _, srv := range servers {
		res, err := p.d.Downstream.ListResources(ctx, srv, p.outbound(ctx, srv, inbound, nil))
		if err != nil {
			continue
		}
		for _, r := range res.Resources {
			if r.URI == uri {
				return srv, nil
			}
		}
	}
	for _, srv := range servers {
		res, err := p.d.Downstream.ListResourceTemplates(ctx, srv, p.outbound(ctx, srv, inbound, nil))
		if err != nil {
			continue
		}
		for _, t := range res.ResourceTemplates {
			if t.URITemplate != nil && t.URITemplate.Regexp().MatchString(uri) {
				return srv, nil
			}
		}
	}
	return "", fmt.Errorf("resource %q not found on any server of %s: %w", uri, p.d.Agent, mcp.ErrResourceNotFound)
}
