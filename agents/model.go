package agents

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"

	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"

	"github.com/pallasgw/pallasgw/agents/llm"
	"github.com/pallasgw/pallasgw/gateway/config"
	"github.com/pallasgw/pallasgw/metrics/tracing"
	"github.com/pallasgw/pallasgw/policy"
)

// modelRef is an agent's model: its provider, model name and parameters.
type modelRef struct {
	provider     llm.Provider
	providerName string // config key under models.providers, or builtin
	model        string // without the provider prefix
	ref          string // provider.model as configured
	params       llm.Params
	headers      *policy.HeaderRules // nil: the provider sends no per-call headers
	price        *config.Price
	maxOut       int // the model's max_output_tokens (models.capabilities); 0: unknown
	// textOnly: models.capabilities says vision false; dropImages: its
	// drop_images (drop a message's images with a note, not refuse them).
	textOnly, dropImages bool
}

// errProvider marks errors of the model provider, for the caller's message.
var errProvider = errors.New("LLM provider failed")

func newModelRef(a *Agent, ref string) (*modelRef, error) {
	d := a.set.deps
	provName, model := config.SplitModel(ref)
	m := &modelRef{providerName: provName, model: model, ref: ref}
	params, err := parseParams(a.Config.Params)
	if err != nil {
		return nil, fmt.Errorf("params: %w", err)
	}
	m.maxOut = d.Config.MaxOutputTokens(ref)
	if caps, ok := d.Config.Models.Capabilities[ref]; ok && !caps.Vision {
		m.textOnly, m.dropImages = true, caps.DropImages
	}
	m.params = m.clamp(params)
	switch {
	case ref == "passthrough":
		m.provider = llm.NewPassthrough()
	case ref == "playback":
		m.provider = llm.NewPlayback()
	default:
		m.provider = d.Providers[provName]
		if m.provider == nil {
			return nil, fmt.Errorf("model %s: provider %s is not configured", ref, provName)
		}
		if pc := d.Config.Models.Providers[provName]; pc != nil && (len(pc.Headers) > 0 || len(pc.ForwardHeaders) > 0 || pc.ForwardInboundAuth) {
			rules := ProviderHeaderRules(provName, pc)
			m.headers = &rules
		}
	}
	if p, ok := d.Config.Models.Prices[ref]; ok {
		m.price = &p
	}
	return m, nil
}

// chat runs one model turn, records the LLM metrics and its span ("chat
// {model}", a client span of the GenAI conventions), and sends the span's
// trace context to the provider.
func (m *modelRef) chat(ctx context.Context, a *Agent, req llm.Request, c *Call) (_ *llm.Response, err error) {
	if m.textOnly {
		if req.Messages, err = m.withoutImages(req.Messages); err != nil {
			return nil, err
		}
	}
	req.Model, req.Params = m.model, m.params
	if m.headers != nil {
		// Static headers ride here too (the client sends them as well), so
		// that the provider redacts their values from its errors.
		comp := a.set.deps.Composer
		if comp == nil {
			comp = &policy.Composer{}
		}
		req.Header = comp.Compose(*m.headers, c.Inbound, a.set.deps.InboundAuthMayTravel)
	}
	ctx, span := tracing.Start(ctx, trace.SpanKindClient, tracing.OpChat, m.model)
	defer span.End()
	if span.IsRecording() {
		span.SetAttributes(tracing.GenAIOperation.String(tracing.OpChat), tracing.GenAIProvider.String(m.providerName),
			tracing.GenAIRequestModel.String(m.model))
		// The gateway's own headers, added after any forwarded one.
		h := req.Header.Clone()
		if h == nil {
			h = http.Header{}
		}
		if tracing.Inject(ctx, h) {
			req.Header = h
		}
		defer func() { tracing.Fail(span, err, outcomeOf(ctx, err)) }()
	}
	guard := a.set.deps.Quotas
	id := policy.IdentityFrom(ctx)
	qkey, qlabel := id.QuotaKey()
	limits := a.set.deps.Callers.Limits(id.PolicyKey())
	if err := guard.Tokens(ctx, qkey, qlabel, limits); err != nil {
		return nil, err // a quota.ExceededError: the caller gets a JSON-RPC error saying when to retry
	}
	start := time.Now()
	resp, err := m.provider.Chat(ctx, req)
	if err != nil && req.Schema != nil && refusedRequest(err) {
		// A server without structured output (an older vLLM, a proxy)
		// refuses the request: ask again for text, which is parsed anyway.
		a.log.Info("structured output refused by the provider; asking for text", zap.String("request_id", c.RequestID),
			zap.String("model", m.ref), zap.Error(err))
		req.Schema = nil
		resp, err = m.provider.Chat(ctx, req)
	}
	took := time.Since(start)
	met := a.set.deps.Metrics
	met.GenAIDuration.WithLabelValues(m.providerName, m.model).Observe(took.Seconds())
	outcome := outcomeOf(ctx, err)
	if seen := a.set.deps.ProviderSeen; seen != nil && outcome != "canceled" {
		seen(m.providerName, err)
	}
	met.LLMRequests.WithLabelValues(a.Name, m.providerName, m.model, outcome).Inc()
	if err != nil {
		if outcome == "canceled" {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("%w: %s: %w", errProvider, m.ref, err)
	}
	if a.latency != nil {
		a.latency.add(took) // answered calls only: how long an answer takes
	}
	u := resp.Usage
	if span.IsRecording() {
		span.SetAttributes(tracing.GenAIInputTokens.Int64(u.InputTokens), tracing.GenAIOutputTokens.Int64(u.OutputTokens))
		if resp.FinishReason != "" {
			span.SetAttributes(tracing.GenAIFinishReasons.StringSlice([]string{resp.FinishReason}))
		}
	}
	guard.Spend(ctx, qkey, limits, int64(u.InputTokens+u.OutputTokens))
	met.GenAITokens.WithLabelValues(m.providerName, m.model, "input").Observe(float64(u.InputTokens))
	met.GenAITokens.WithLabelValues(m.providerName, m.model, "output").Observe(float64(u.OutputTokens))
	met.LLMTokens.WithLabelValues(a.Name, m.ref, "input").Add(float64(u.InputTokens))
	met.LLMTokens.WithLabelValues(a.Name, m.ref, "output").Add(float64(u.OutputTokens))
	if m.price != nil {
		cost := (float64(u.InputTokens)*m.price.Input + float64(u.OutputTokens)*m.price.Output) / 1e6
		met.LLMCost.WithLabelValues(a.Name, m.ref).Add(cost)
	}
	return resp, nil
}

// refusedRequest reports whether err is the provider refusing the request
// as malformed (HTTP 400 or 422), not failing to answer it.
func refusedRequest(err error) bool {
	var he *llm.HTTPError
	return errors.As(err, &he) && (he.Status == 400 || he.Status == 422)
}

// clamp returns p with max_tokens no larger than the model's
// max_output_tokens, when the model's capabilities name it.
func (m *modelRef) clamp(p llm.Params) llm.Params {
	if m.maxOut > 0 && p.MaxTokens != nil && *p.MaxTokens > m.maxOut {
		n := m.maxOut
		p.MaxTokens = &n
	}
	return p
}

// parseParams maps an agent's params block onto llm.Params.
func parseParams(p map[string]any) (llm.Params, error) {
	var out llm.Params
	var err error
	num := func(k string) *float64 {
		v, ok := p[k]
		if !ok || err != nil {
			return nil
		}
		switch n := v.(type) {
		case int:
			f := float64(n)
			return &f
		case float64:
			return &n
		}
		err = fmt.Errorf("%s must be a number", k)
		return nil
	}
	integer := func(k string) *int {
		f := num(k)
		if f == nil {
			return nil
		}
		i := int(*f)
		return &i
	}
	out.Temperature, out.TopP = num("temperature"), num("top_p")
	out.PresencePenalty, out.FrequencyPenalty = num("presence_penalty"), num("frequency_penalty")
	out.TopK, out.MaxTokens, out.Seed = integer("top_k"), integer("max_tokens"), integer("seed")
	if err != nil {
		return out, err
	}
	out.ResponseFormat, out.ToolChoice = p["response_format"], p["tool_choice"]
	if s, ok := p["stop"]; ok {
		if out.Stop, err = stringList(s, "stop"); err != nil {
			return out, err
		}
	}
	if s, ok := p["playback"]; ok {
		if out.Playback, err = stringList(s, "playback"); err != nil {
			return out, err
		}
	}
	if e, ok := p["extra"]; ok {
		m, ok := e.(map[string]any)
		if !ok {
			return out, fmt.Errorf("extra must be a mapping")
		}
		out.Extra = m
	}
	return out, nil
}

func stringList(v any, key string) ([]string, error) {
	switch s := v.(type) {
	case string:
		return []string{s}, nil
	case []any:
		out := make([]string, len(s))
		for i, x := range s {
			str, ok := x.(string)
			if !ok {
				return nil, fmt.Errorf("%s must be a list of strings", key)
			}
			out[i] = str
		}
		return out, nil
	}
	return nil, fmt.Errorf("%s must be a string or a list of strings", key)
}

// withoutImages is msgs for a model without vision: a tool result's images
// are dropped with a note (the tool, not the caller, sent them); a
// message's are refused, or dropped with a note under drop_images. msgs
// is not changed.
func (m *modelRef) withoutImages(msgs []llm.Message) ([]llm.Message, error) {
	var out []llm.Message
	for i, msg := range msgs {
		if len(msg.Images) == 0 {
			continue
		}
		if msg.Role != llm.RoleTool && !m.dropImages {
			return nil, &ArgumentError{fmt.Sprintf("images: model %s has no vision capability (models.capabilities: vision false); "+
				"send text only, or set drop_images to have images dropped", m.ref)}
		}
		if out == nil {
			out = slices.Clone(msgs)
		}
		note := fmt.Sprintf("[%d image(s) omitted: model %s cannot see images]", len(msg.Images), m.ref)
		if msg.Text != "" {
			note = msg.Text + "\n" + note
		}
		out[i].Text, out[i].Images = note, nil
	}
	if out == nil {
		return msgs, nil
	}
	return out, nil
}
