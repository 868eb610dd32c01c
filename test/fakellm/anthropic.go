package fakellm

// anthropic writes a Messages stream: message_start, ping, one
// content_block_start/delta.../stop per block (text_delta or
// input_json_delta), message_delta with stop_reason and cumulative usage,
// message_stop.
func (s *stream) anthropic() {
	s.start()
	in, _ := s.usage()
	s.event("message_start", map[string]any{"type": "message_start", "message": map[string]any{
		"id": "msg_" + s.id, "type": "message", "role": "assistant", "content": []any{},
		"model": s.chat.Model, "stop_reason": nil, "stop_sequence": nil,
		"usage": map[string]any{"input_tokens": in, "output_tokens": 1}}})
	switch s.step.kind {
	case kindHang:
		s.hang()
		return
	case kindStreamError:
		s.event("error", map[string]any{"type": "error",
			"error": map[string]any{"type": "overloaded_error", "message": s.step.message}})
		return
	}
	s.event("ping", map[string]any{"type": "ping"})
	stop := "end_turn"
	if s.step.kind == kindToolCalls {
		stop = "tool_use"
		for i, c := range s.step.calls {
			s.anToolUse(i, c)
		}
	} else {
		s.anText()
	}
	if s.step.has(QuirkNoFinishReason) {
		return
	}
	_, out := s.usage()
	s.event("message_delta", map[string]any{"type": "message_delta",
		"delta": map[string]any{"stop_reason": stop, "stop_sequence": nil},
		"usage": map[string]any{"output_tokens": out}})
	s.event("message_stop", map[string]any{"type": "message_stop"})
}

func (s *stream) anText() {
	s.event("content_block_start", map[string]any{"type": "content_block_start", "index": 0,
		"content_block": map[string]any{"type": "text", "text": ""}})
	for i, p := range split(s.step.text, 4) {
		s.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0,
			"delta": map[string]any{"type": "text_delta", "text": p}})
		s.pieces++
		if i == 0 && s.step.has(QuirkMalformedChunk) {
			s.raw("event: content_block_delta\ndata: {\"type\": oops\n\n")
		}
	}
	s.event("content_block_stop", map[string]any{"type": "content_block_stop", "index": 0})
}

func (s *stream) anToolUse(i int, c Call) {
	s.event("content_block_start", map[string]any{"type": "content_block_start", "index": i,
		"content_block": map[string]any{"type": "tool_use", "id": s.callID(i, c, "toolu_"),
			"name": c.Name, "input": map[string]any{}}})
	frags := append([]string{""}, thirds(args(c))...) // the API starts with an empty fragment
	for _, frag := range frags {
		s.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": i,
			"delta": map[string]any{"type": "input_json_delta", "partial_json": frag}})
		s.pieces++
	}
	s.event("content_block_stop", map[string]any{"type": "content_block_stop", "index": i})
}
