package llm

import (
	"encoding/base64"
	"encoding/json"
)

// hasAnthropicMessages reports whether anthropicMessages would return any
// message: the SDK omits an empty messages member.
func hasAnthropicMessages(msgs []Message) bool {
	for _, m := range msgs {
		switch m.Role {
		case RoleUser, RoleAssistant, RoleTool:
			return true
		}
	}
	return false
}

// messages writes the conversation as anthropicMessages converts it: the
// tool results between two user or assistant messages share one user
// message (messages of other roles are skipped and do not end the run).
func (w *anthropicWriter) messages() {
	w.b = append(w.b, '[')
	results := false // a user message of tool results is open
	for _, m := range w.req.Messages {
		switch m.Role {
		case RoleUser, RoleAssistant:
			if results {
				w.b = append(w.b, `],"role":"user"}`...)
				results = false
			}
			w.elem()
			w.b = append(w.b, `{"content":[`...)
			if m.Role == RoleUser {
				w.user(m)
				w.b = append(w.b, `],"role":"user"}`...)
			} else {
				w.assistant(m)
				w.b = append(w.b, `],"role":"assistant"}`...)
			}
		case RoleTool:
			if !results {
				w.elem()
				w.b = append(w.b, `{"content":[`...)
				results = true
			}
			w.toolResult(m)
		}
	}
	if results {
		w.b = append(w.b, `],"role":"user"}`...)
	}
	w.b = append(w.b, ']')
}

// elem separates an array element from the one before it, if any.
func (w *anthropicWriter) elem() {
	if w.b[len(w.b)-1] != '[' {
		w.b = append(w.b, ',')
	}
}

func (w *anthropicWriter) user(m Message) {
	w.images(m.Images)
	if m.Text != "" || len(m.Images) == 0 {
		w.text(m.Text)
	}
}

func (w *anthropicWriter) assistant(m Message) {
	if m.Text != "" || len(m.ToolCalls) == 0 {
		w.text(m.Text)
	}
	for _, tc := range m.ToolCalls {
		w.elem()
		w.b = append(w.b, `{"id":`...)
		w.b = appendJSONString(w.b, tc.ID)
		w.b = append(w.b, `,"input":`...)
		if isJSONObject(tc.Arguments) {
			w.b = appendCompactJSON(w.b, tc.Arguments)
		} else {
			w.b = append(w.b, "{}"...)
		}
		w.b = append(w.b, `,"name":`...)
		w.b = appendJSONString(w.b, tc.Name)
		w.b = append(w.b, `,"type":"tool_use"}`...)
	}
}

func (w *anthropicWriter) toolResult(m Message) {
	w.elem()
	w.b = append(w.b, `{"tool_use_id":`...)
	w.b = appendJSONString(w.b, m.ToolCallID)
	if m.IsError {
		w.b = append(w.b, `,"is_error":true`...)
	}
	w.b = append(w.b, `,"content":[`...)
	if m.Text != "" || len(m.Images) == 0 {
		w.text(m.Text)
	}
	w.images(m.Images)
	w.b = append(w.b, `],"type":"tool_result"}`...)
}

// text writes a text block; the API rejects empty ones (see nonEmpty).
func (w *anthropicWriter) text(s string) {
	w.elem()
	w.b = append(w.b, `{"text":`...)
	w.b = appendJSONString(w.b, nonEmpty(s))
	w.b = append(w.b, `,"type":"text"}`...)
}

// images writes image blocks with base64 sources; the SDK omits an empty
// media type.
func (w *anthropicWriter) images(imgs []Image) {
	for _, img := range imgs {
		w.elem()
		w.b = append(w.b, `{"source":{"data":"`...)
		w.b = base64.StdEncoding.AppendEncode(w.b, img.Data)
		w.b = append(w.b, '"')
		if img.MIMEType != "" {
			w.b = append(w.b, `,"media_type":`...)
			w.b = appendJSONString(w.b, img.MIMEType)
		}
		w.b = append(w.b, `,"type":"base64"},"type":"image"}`...)
	}
}

// isJSONObject reports whether args is a JSON object: what jsonObject
// decodes to check, told by a scan that allocates nothing.
func isJSONObject(args json.RawMessage) bool {
	for _, c := range args {
		switch c {
		case ' ', '\t', '\n', '\r':
			continue
		case '{':
			return json.Valid(args)
		}
		return false
	}
	return false
}
