package fakellm

import "strconv"

// openAI writes a Chat Completions stream: a role chunk, content or
// tool-call deltas, a finish chunk, a usage chunk when asked for (or usage
// in every chunk with QuirkCumulativeUsage), then [DONE].
func (s *stream) openAI() {
	s.start()
	n := 0 // chunks sent
	chunk := func(delta map[string]any, finish any) {
		n++
		id := "chatcmpl-" + s.id
		if s.step.has(QuirkChangingIDs) {
			id += "-" + strconv.Itoa(n)
		}
		c := map[string]any{"id": id, "object": "chat.completion.chunk", "created": 1700000000,
			"model": s.chat.Model, "choices": []any{map[string]any{"index": 0, "delta": delta,
				"logprobs": nil, "finish_reason": finish}}}
		if s.step.has(QuirkNullError) {
			c["error"] = nil
		}
		if s.step.has(QuirkCumulativeUsage) {
			in, out := s.usage()
			c["usage"] = oaUsage(in, min(int64(n), out))
		}
		s.event("", c)
	}

	chunk(map[string]any{"role": "assistant", "content": ""}, nil)
	switch s.step.kind {
	case kindHang:
		s.hang()
		return
	case kindStreamError:
		s.event("", map[string]any{"error": map[string]any{"message": s.step.message, "type": "server_error"}})
		return
	case kindToolCalls:
		s.oaToolCalls(chunk)
	default:
		s.oaText(chunk)
	}
	if !s.step.has(QuirkNoFinishReason) {
		reason := "stop"
		if s.step.kind == kindToolCalls {
			reason = "tool_calls"
		}
		chunk(map[string]any{}, reason)
	}
	s.oaFinalUsage()
	s.raw("data: [DONE]\n\n")
}

func (s *stream) oaText(chunk func(map[string]any, any)) {
	for i, p := range split(s.step.text, 4) {
		chunk(map[string]any{"content": p}, nil)
		s.pieces++
		if i == 0 && s.step.has(QuirkMalformedChunk) {
			s.raw("data: {\"id\": \"broken\", choices: [\n\n")
		}
	}
}

func (s *stream) oaToolCalls(chunk func(map[string]any, any)) {
	for i, c := range s.step.calls {
		first := map[string]any{"id": s.callID(i, c, "call_"), "type": "function",
			"function": map[string]any{"name": c.Name, "arguments": ""}}
		if !s.step.has(QuirkNoIndex) {
			first["index"] = i
		}
		chunk(map[string]any{"tool_calls": []any{first}}, nil)
		for j, frag := range thirds(args(c)) {
			d := map[string]any{"function": map[string]any{"arguments": frag}}
			if !s.step.has(QuirkNoIndex) {
				d["index"] = i
			}
			chunk(map[string]any{"tool_calls": []any{d}}, nil)
			s.pieces++
			if i == 0 && j == 0 && s.step.has(QuirkMalformedChunk) {
				s.raw("data: not json at all\n\n")
			}
		}
	}
}

// oaFinalUsage sends the usage-only chunk of stream_options.include_usage.
func (s *stream) oaFinalUsage() {
	if !s.chat.IncludeUsage && !s.step.has(QuirkCumulativeUsage) {
		return
	}
	in, out := s.usage()
	c := map[string]any{"id": "chatcmpl-" + s.id, "object": "chat.completion.chunk",
		"created": 1700000000, "model": s.chat.Model, "choices": []any{}, "usage": oaUsage(in, out)}
	if s.step.has(QuirkNullError) {
		c["error"] = nil
	}
	s.event("", c)
}

func oaUsage(in, out int64) map[string]any {
	return map[string]any{"prompt_tokens": in, "completion_tokens": out, "total_tokens": in + out}
}
