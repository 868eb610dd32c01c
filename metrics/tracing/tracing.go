// Package tracing owns the gateway's OpenTelemetry traces: the
// tracer provider a config's tracing block asks for (an OTLP/HTTP exporter
// configured by the block and the standard OTEL_* variables, a
// parent-based ratio sampler), the span names and attributes of the
// OpenTelemetry GenAI and MCP semantic conventions, and W3C trace context in
// and out (HTTP headers and MCP params._meta).
//
// A Provider belongs to one snapshot. The inbound span puts it in the
// request's context, and every span below it (an agent run, a model call, a
// downstream call) is started from that context with Start: a request ends
// on the provider it began with, a reload never drops its spans, and no
// process-wide tracer exists to swap. Without a Provider in the context,
// Start returns the context unchanged and a span that records nothing, and
// Inject sends nothing: tracing off costs one context lookup per span site.
//
// It is a leaf: it imports no package of the project. It must not decide
// anything about a call; it only observes.
package tracing

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
	"go.uber.org/zap"
)

// Options are a config's tracing block, resolved.
type Options struct {
	// Endpoint is the OTLP/HTTP collector's base URL (…:4318; /v1/traces
	// is added when the URL has no path). "": OTEL_EXPORTER_OTLP_TRACES_ENDPOINT
	// or OTEL_EXPORTER_OTLP_ENDPOINT, read by the exporter; neither set: off.
	Endpoint    string
	Sampling    float64 // ratio of new traces sampled; a caller's sampled flag wins
	ServiceName string
	Version     string // service.version

	// Exporter, when set, replaces OTLP (tests: tracetest's in-memory
	// exporter); spans are then exported as they end.
	Exporter sdktrace.SpanExporter
}

// Provider is one snapshot's tracer provider. A nil *Provider is tracing
// off.
type Provider struct {
	tp     *sdktrace.TracerProvider
	tracer trace.Tracer
}

// scope is the instrumentation scope of every span.
const scope = "github.com/pallasgw/pallasgw"

// Enabled reports whether o turns tracing on: an endpoint in the block or
// in the environment, or an Exporter.
func Enabled(o Options) bool {
	return o.Exporter != nil || o.Endpoint != "" ||
		os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != "" || os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != ""
}

// New builds the provider of o, or nil when o leaves tracing off. Nothing
// connects before the first export, and an unreachable collector only
// drops spans (the batch processor exports in the background, its queue
// bounded): it never blocks or fails a call.
func New(o Options) (*Provider, error) {
	if !Enabled(o) {
		return nil, nil
	}
	exp := o.Exporter
	if exp == nil {
		var opts []otlptracehttp.Option
		if o.Endpoint != "" {
			u, err := tracesURL(o.Endpoint)
			if err != nil {
				return nil, err
			}
			opts = append(opts, otlptracehttp.WithEndpointURL(u))
		}
		var err error
		if exp, err = otlptracehttp.New(context.Background(), opts...); err != nil {
			return nil, fmt.Errorf("tracing: OTLP exporter: %w", err)
		}
	}
	attrs := []attribute.KeyValue{attribute.String("service.name", o.ServiceName)}
	if o.Version != "" {
		attrs = append(attrs, attribute.String("service.version", o.Version))
	}
	// OTEL_RESOURCE_ATTRIBUTES adds to the resource; the config's service
	// name wins over OTEL_SERVICE_NAME.
	res, err := resource.New(context.Background(), resource.WithFromEnv(), resource.WithTelemetrySDK(), resource.WithAttributes(attrs...))
	if err != nil && !errors.Is(err, resource.ErrPartialResource) {
		return nil, fmt.Errorf("tracing: resource: %w", err)
	}
	export := sdktrace.WithBatcher(exp)
	if o.Exporter != nil {
		export = sdktrace.WithSyncer(exp)
	}
	tp := sdktrace.NewTracerProvider(export, sdktrace.WithResource(res),
		sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(o.Sampling))))
	return &Provider{tp: tp, tracer: tp.Tracer(scope)}, nil
}

// tracesURL is endpoint with the OTLP traces path when it has none.
func tracesURL(endpoint string) (string, error) {
	u, err := url.Parse(endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("tracing: endpoint %q is not an http(s) URL", endpoint)
	}
	if u.Path == "" || u.Path == "/" {
		u.Path = "/v1/traces"
	}
	return u.String(), nil
}

// Shutdown exports what is buffered, within ctx, and stops the provider.
func (p *Provider) Shutdown(ctx context.Context) error {
	if p == nil {
		return nil
	}
	return p.tp.Shutdown(ctx)
}

// ShutdownTimeout bounds the export of a retired provider's last spans.
const ShutdownTimeout = 5 * time.Second

type providerKey struct{}

// noSpan is what Start returns with tracing off: it records nothing.
var noSpan trace.Span = noop.Span{}

// propagator is W3C trace context (traceparent, tracestate).
var propagator propagation.TextMapPropagator = propagation.TraceContext{}

// StartServer starts the span of an inbound request, named name, a child
// of the caller's trace context when it sent a valid one: params._meta's
// traceparent/tracestate (MCP's own carrier, which wins), else the HTTP
// headers'. A malformed one is ignored: the span starts a new trace. The
// returned context carries p for the spans below; opts add to the start
// options (a start time). With p nil it returns
// ctx and a span that records nothing.
func (p *Provider) StartServer(ctx context.Context, h http.Header, meta map[string]json.RawMessage, name string, opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	if p == nil {
		return ctx, noSpan
	}
	parent := propagator.Extract(ctx, propagation.HeaderCarrier(h))
	if tp := metaString(meta, KeyTraceparent); tp != "" {
		mc := propagation.MapCarrier{KeyTraceparent: tp, KeyTracestate: metaString(meta, KeyTracestate)}
		if m := propagator.Extract(ctx, mc); trace.SpanContextFromContext(m).IsValid() {
			parent = m
		}
	}
	ctx, span := p.tracer.Start(parent, name, append(opts, trace.WithSpanKind(trace.SpanKindServer))...)
	return context.WithValue(ctx, providerKey{}, p), span
}

// Start starts a span named op+" "+target (op alone when target is "")
// below the span of ctx, on the provider of ctx's request. Without one it
// returns ctx and a span that records nothing, building no name: set
// attributes under span.IsRecording().
func Start(ctx context.Context, kind trace.SpanKind, op, target string) (context.Context, trace.Span) {
	p, _ := ctx.Value(providerKey{}).(*Provider)
	if p == nil {
		return ctx, noSpan
	}
	name := op
	if target != "" {
		name = op + " " + target
	}
	return p.tracer.Start(ctx, name, trace.WithSpanKind(kind))
}

// Inject sets traceparent (and tracestate) of ctx's span on h, for an
// outbound request; nothing when ctx has no recording span of the
// gateway's. It reports whether it set anything.
func Inject(ctx context.Context, h http.Header) bool {
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() || ctx.Value(providerKey{}) == nil {
		return false
	}
	propagator.Inject(ctx, propagation.HeaderCarrier(h))
	return true
}

// Context is ctx's W3C trace context as MCP's _meta carries it
// (traceparent, tracestate; "" when none), for an outbound request.
func Context(ctx context.Context) (traceparent, tracestate string) {
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() || ctx.Value(providerKey{}) == nil {
		return "", ""
	}
	c := propagation.MapCarrier{}
	propagator.Inject(ctx, c)
	return c[KeyTraceparent], c[KeyTracestate]
}

// LogField is the zap field trace_id of ctx's span when it records, else
// a field zap skips.
func LogField(ctx context.Context) zap.Field {
	span := trace.SpanFromContext(ctx)
	if !span.IsRecording() {
		return zap.Skip()
	}
	return zap.String(FieldTraceID, span.SpanContext().TraceID().String())
}

// FieldTraceID is the log field of a recording span's trace id.
const FieldTraceID = "trace_id"

// metaString is meta[key] when it is a JSON string.
func metaString(meta map[string]json.RawMessage, key string) string {
	raw := meta[key]
	if len(raw) < 2 || raw[0] != '"' {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return ""
	}
	return strings.TrimSpace(s)
}

// Active reports whether ctx has a valid span of the gateway's, whose
// context Inject would send.
func Active(ctx context.Context) bool {
	return ctx.Value(providerKey{}) != nil && trace.SpanContextFromContext(ctx).IsValid()
}
