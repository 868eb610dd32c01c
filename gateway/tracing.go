package gateway

// Traces: each snapshot builds the tracer provider its tracing
// block asks for and shuts it down after its last request, so a changed
// block takes effect on reload while running requests end on the provider
// they began with. The inbound MCP request's span starts here, once the
// body is decoded; the spans below it start in agents and agents/mcpclient
// from the request's context (package tracing).

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/pallasgw/pallasgw/agents/wire"
	"github.com/pallasgw/pallasgw/gateway/config"
	"github.com/pallasgw/pallasgw/metrics/tracing"
)

// buildTracer is the provider of cfg's tracing block, nil when off.
func (g *Gateway) buildTracer(cfg *config.Config) (*tracing.Provider, error) {
	t := cfg.Tracing
	return tracing.New(tracing.Options{Endpoint: t.Endpoint, Sampling: t.Sampling, ServiceName: t.ServiceName,
		Version: g.opts.Version, Exporter: g.opts.TraceExporter})
}

// shutdownTraces exports the snapshot's buffered spans, within
// tracing.ShutdownTimeout, and stops its provider; once.
func (s *Snapshot) shutdownTraces() {
	s.tracesOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), tracing.ShutdownTimeout)
		defer cancel()
		_ = s.tracer.Shutdown(ctx) // an unreachable collector loses these spans, nothing more
	})
}

// traceRequest starts the server span of one decoded MCP request, named
// "{mcp.method.name} {target}" (the tool or prompt name), a child of the
// caller's trace context (_meta's, else the headers'); r carries it. With
// tracing off, or no message (a DELETE), r comes back unchanged and span
// is nil.
func (s *Snapshot) traceRequest(r *http.Request, msg *wire.Message) (_ *http.Request, span trace.Span) {
	if s.tracer == nil || msg == nil {
		return r, nil
	}
	method := msg.MethodName()
	target, _ := msg.Params.ToolName()
	name := method
	if target != "" && (method == string(mcp.MethodToolsCall) || method == string(mcp.MethodPromptsGet)) {
		name += " " + target
	}
	meta, _ := msg.Meta()
	ctx, span := s.tracer.StartServer(r.Context(), r.Header, meta, name)
	attrs := make([]attribute.KeyValue, 0, 5)
	attrs = append(attrs, tracing.MCPMethod.String(method))
	if method == string(mcp.MethodToolsCall) && target != "" {
		attrs = append(attrs, tracing.GenAIToolName.String(target), tracing.GenAIOperation.String("execute_tool"))
	}
	if !wire.IsNull(msg.ID) {
		attrs = append(attrs, tracing.JSONRPCRequestID.String(requestIDString(msg.ID)))
	}
	if v := r.Header.Get(mcp.HeaderProtocolVersion); v != "" {
		attrs = append(attrs, tracing.MCPProtocolVersion.String(v))
	} else if v := msg.MetaString(mcp.MetaKeyProtocolVersion); v != "" {
		attrs = append(attrs, tracing.MCPProtocolVersion.String(v))
	}
	if v := r.Header.Get("Mcp-Session-Id"); v != "" {
		attrs = append(attrs, tracing.MCPSessionID.String(v))
	}
	span.SetAttributes(attrs...)
	return r.WithContext(ctx), span
}

// traceUndecoded starts the server span of a request answered before its
// message was decoded (refused by auth or a quota, not a POST, a body that
// is not one JSON-RPC message): named "{HTTP method} {route}", started at
// start, a child of the caller's header trace context (there is no _meta
// to read); r carries it. With tracing off, r comes back unchanged and
// span is nil.
func (s *Snapshot) traceUndecoded(r *http.Request, agent string, start time.Time) (_ *http.Request, span trace.Span) {
	if s.tracer == nil {
		return r, nil
	}
	route := "/mcp" // a legacy port
	if strings.HasPrefix(r.URL.Path, "/agents/") {
		route = "/agents/{name}/mcp"
	}
	ctx, span := s.tracer.StartServer(r.Context(), r.Header, nil, r.Method+" "+route, trace.WithTimestamp(start))
	span.SetAttributes(tracing.HTTPRequestMethod.String(r.Method), tracing.GenAIAgentName.String(agent))
	return r.WithContext(ctx), span
}

// endRequest ends the span of traceRequest or traceUndecoded with the
// answer's HTTP status: error.type is a 4xx's or 5xx's code, and a 5xx
// fails the span (a 4xx is the caller's, as the HTTP conventions have it).
func endRequest(span trace.Span, w http.ResponseWriter) {
	if span == nil {
		return
	}
	if sw, ok := w.(*statusWriter); ok {
		code := sw.code
		if code == 0 {
			code = http.StatusOK
		}
		span.SetAttributes(tracing.HTTPStatusCode.Int(code))
		if code >= 400 {
			span.SetAttributes(tracing.ErrorType.String(strconv.Itoa(code)))
		}
		if code >= 500 {
			span.SetStatus(codes.Error, http.StatusText(code))
		}
	}
	span.End()
}

// requestIDString is a JSON-RPC id as the conventions record it: a
// string's value, a number's digits.
func requestIDString(raw []byte) string {
	if len(raw) > 0 && raw[0] == '"' {
		if s, err := strconv.Unquote(string(raw)); err == nil {
			return s
		}
	}
	return string(raw)
}
