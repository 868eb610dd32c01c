package mcpclient

// The client span of a downstream tools/call ("tools/call {tool}", MCP
// semantic conventions) and the trace context it sends: W3C headers on
// every HTTP request of the call, and params._meta's traceparent and
// tracestate in the request the gateway builds. All of it is nothing when
// the call's context carries no tracer (package tracing).

import (
	"context"
	"net/url"

	"github.com/mark3labs/mcp-go/mcp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/pallasgw/pallasgw/metrics/tracing"
)

// startCall starts the span of one tools/call of tool on server.
func (m *Manager) startCall(ctx context.Context, server, tool string) (context.Context, trace.Span) {
	ctx, span := tracing.Start(ctx, trace.SpanKindClient, string(mcp.MethodToolsCall), tool)
	if span.IsRecording() {
		attrs := [5]attribute.KeyValue{tracing.MCPMethod.String(string(mcp.MethodToolsCall)), tracing.GenAIToolName.String(tool),
			tracing.GenAIOperation.String("execute_tool"), tracing.Server.String(server)}
		n := 4
		if srv := m.servers[server]; srv != nil && srv.host != "" {
			attrs[n], n = tracing.ServerAddress.String(srv.host), n+1
		}
		span.SetAttributes(attrs[:n]...)
	}
	return ctx, span
}

// hostOf is rawURL's host name, server.address of the spans of calls to
// it; "" when it has none (a stdio server) or does not parse. Computed
// once per server, not per call.
func hostOf(rawURL string) string {
	if rawURL == "" {
		return ""
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		return ""
	}
	return u.Hostname()
}

// endCall ends span with the call's outcome: an error, or a result with
// isError (error.type tool_error).
func endCall(span trace.Span, isError bool, err error) {
	if span.IsRecording() {
		if err != nil {
			tracing.Fail(span, err, Outcome(err))
		} else if isError {
			span.SetAttributes(tracing.ErrorType.String(tracing.ToolError))
			span.SetStatus(codes.Error, tracing.ToolError)
		}
	}
	span.End()
}
