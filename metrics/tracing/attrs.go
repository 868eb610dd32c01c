package tracing

import (
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// The carriers' keys: W3C trace context, in HTTP headers and in MCP's
// params._meta alike (SEP-414).
const (
	KeyTraceparent = "traceparent"
	KeyTracestate  = "tracestate"
)

// Span operations (the first word of a span's name).
const (
	OpInvokeAgent = "invoke_agent"
	OpChat        = "chat"
)

// Attribute keys of the OpenTelemetry MCP and GenAI semantic conventions
// (and the HTTP and error ones they build on); Server is the gateway's own.
const (
	MCPMethod          = attribute.Key("mcp.method.name")
	MCPProtocolVersion = attribute.Key("mcp.protocol.version")
	MCPSessionID       = attribute.Key("mcp.session.id")
	JSONRPCRequestID   = attribute.Key("jsonrpc.request.id")
	HTTPStatusCode     = attribute.Key("http.response.status_code")
	HTTPRequestMethod  = attribute.Key("http.request.method")
	ErrorType          = attribute.Key("error.type")
	ServerAddress      = attribute.Key("server.address")

	GenAIOperation     = attribute.Key("gen_ai.operation.name")
	GenAIToolName      = attribute.Key("gen_ai.tool.name")
	GenAIAgentName     = attribute.Key("gen_ai.agent.name")
	GenAIProvider      = attribute.Key("gen_ai.provider.name")
	GenAIRequestModel  = attribute.Key("gen_ai.request.model")
	GenAIInputTokens   = attribute.Key("gen_ai.usage.input_tokens")
	GenAIOutputTokens  = attribute.Key("gen_ai.usage.output_tokens")
	GenAIFinishReasons = attribute.Key("gen_ai.response.finish_reasons")

	Server = attribute.Key("pallasgw.mcp.server") // the downstream's name in mcp.servers
)

// ToolError is error.type of a tool result with isError (MCP conventions).
const ToolError = "tool_error"

// Fail marks span failed with err: error status, error.type and the
// error's message. Nothing when err is nil or span does not record.
func Fail(span trace.Span, err error, errorType string) {
	if err == nil || !span.IsRecording() {
		return
	}
	span.SetAttributes(ErrorType.String(errorType))
	span.SetStatus(codes.Error, err.Error())
}
