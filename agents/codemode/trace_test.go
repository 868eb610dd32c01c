package codemode

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/pallasgw/pallasgw/gateway/config"
	"github.com/pallasgw/pallasgw/metrics/tracing"
)

// Each call of a script runs under the script's span, as the downstream
// client's span does (it starts below the context the Caller is given).
func TestCallsUnderTheScriptSpan(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	p, err := tracing.New(tracing.Options{Exporter: exp, Sampling: 1, ServiceName: "unit"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Shutdown(context.Background()) })
	ctx, root := p.StartServer(context.Background(), nil, nil, "tools/call send_message")
	_, err = NewRunner(config.CodeMode{}).Run(ctx, Script{Tools: tools(), Code: "files.read(n=1)\nfiles.read(n=2)",
		Call: func(ctx context.Context, _, tool string, _ json.RawMessage) (*mcp.CallToolResult, error) {
			_, span := tracing.Start(ctx, trace.SpanKindClient, "tools/call", tool)
			span.End()
			return mcp.NewToolResultText("{}"), nil
		}})
	root.End()
	if err != nil {
		t.Fatal(err)
	}
	spans := exp.GetSpans()
	byName := map[string][]tracetest.SpanStub{}
	for _, s := range spans {
		byName[s.Name] = append(byName[s.Name], s)
	}
	script := byName["execute_tool run_script"]
	if len(script) != 1 || script[0].Parent.SpanID() != root.SpanContext().SpanID() {
		t.Fatalf("script span %+v under %s", script, root.SpanContext().SpanID())
	}
	calls := byName["tools/call read"]
	if len(calls) != 2 {
		t.Fatalf("%d call spans, want 2", len(calls))
	}
	for _, c := range calls {
		if c.Parent.SpanID() != script[0].SpanContext.SpanID() {
			t.Errorf("a call's span is not under the script's")
		}
	}
}
