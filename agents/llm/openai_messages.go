package llm

import (
	"encoding/base64"
	"slices"
)

// hasOpenAIMessages reports whether openAIMessages would return any message:
// the SDK omits an empty messages member.
func hasOpenAIMessages(req *Request) bool {
	if req.System != "" {
		return true
	}
	for _, m := range req.Messages {
		switch m.Role {
		case RoleUser, RoleAssistant, RoleTool:
			return true
		}
	}
	return false
}

// messages writes the conversation as openAIMessages converts it,
// including the user message that carries the images of each run of tool
// results.
func (w *openAIWriter) messages() {
	w.b = append(w.b, '[')
	if w.req.System != "" {
		w.b = append(w.b, `{"content":`...)
		w.b = appendJSONString(w.b, w.req.System)
		w.b = append(w.b, `,"role":"system"}`...)
	}
	msgs := w.req.Messages
	run := 0 // the current run of tool results is msgs[run:i]
	for i, m := range msgs {
		if m.Role != RoleTool {
			w.toolImages(msgs[run:i])
			run = i + 1
		}
		switch m.Role {
		case RoleUser:
			w.user(m)
		case RoleAssistant:
			w.assistant(m)
		case RoleTool:
			w.tool(m)
		}
	}
	w.toolImages(msgs[run:])
	w.b = append(w.b, ']')
}

// elem separates an array element from the one before it, if any.
func (w *openAIWriter) elem() {
	if w.b[len(w.b)-1] != '[' {
		w.b = append(w.b, ',')
	}
}

func (w *openAIWriter) user(m Message) {
	w.elem()
	if len(m.Images) == 0 {
		w.b = append(w.b, `{"content":`...)
		w.b = appendJSONString(w.b, m.Text)
		w.b = append(w.b, `,"role":"user"}`...)
		return
	}
	w.b = append(w.b, `{"content":[`...)
	if m.Text != "" {
		w.b = append(w.b, `{"text":`...)
		w.b = appendJSONString(w.b, m.Text)
		w.b = append(w.b, `,"type":"text"}`...)
	}
	w.images(m.Images)
	w.b = append(w.b, `],"role":"user"}`...)
}

func (w *openAIWriter) assistant(m Message) {
	w.elem()
	w.b = append(w.b, '{')
	if m.Text != "" || len(m.ToolCalls) == 0 {
		w.b = append(w.b, `"content":`...)
		w.b = appendJSONString(w.b, m.Text)
		w.b = append(w.b, ',')
	}
	if len(m.ToolCalls) > 0 {
		w.b = append(w.b, `"tool_calls":[`...)
		for _, tc := range m.ToolCalls {
			w.elem()
			w.b = append(w.b, `{"id":`...)
			w.b = appendJSONString(w.b, tc.ID)
			w.b = append(w.b, `,"function":{"arguments":`...)
			w.b = appendJSONString(w.b, string(argsOrEmpty(tc.Arguments)))
			w.b = append(w.b, `,"name":`...)
			w.b = appendJSONString(w.b, tc.Name)
			w.b = append(w.b, `},"type":"function"}`...)
		}
		w.b = append(w.b, `],`...)
	}
	w.b = append(w.b, `"role":"assistant"}`...)
}

func (w *openAIWriter) tool(m Message) {
	w.elem()
	w.b = append(w.b, `{"content":"`...)
	if m.IsError {
		w.b = append(w.b, "Error: "...)
	}
	w.b = appendJSONChars(w.b, toolResultText(m))
	w.b = append(w.b, `","tool_call_id":`...)
	w.b = appendJSONString(w.b, m.ToolCallID)
	w.b = append(w.b, `,"role":"tool"}`...)
}

// toolImages writes the user message carrying the images of run, a run of
// tool results, if they have any.
func (w *openAIWriter) toolImages(run []Message) {
	if !slices.ContainsFunc(run, func(m Message) bool { return len(m.Images) > 0 }) {
		return
	}
	w.elem()
	w.b = append(w.b, `{"content":[`...)
	for _, m := range run {
		if len(m.Images) == 0 {
			continue
		}
		w.elem()
		w.b = append(w.b, `{"text":"Image(s) returned by tool call `...)
		w.b = appendJSONChars(w.b, m.ToolCallID)
		w.b = append(w.b, `:","type":"text"}`...)
		w.images(m.Images)
	}
	w.b = append(w.b, `],"role":"user"}`...)
}

// images writes image content parts holding data URLs (see dataURL).
func (w *openAIWriter) images(imgs []Image) {
	for _, img := range imgs {
		w.elem()
		w.b = append(w.b, `{"image_url":{"url":"data:`...)
		w.b = appendJSONChars(w.b, imageMIME(img))
		w.b = append(w.b, ";base64,"...)
		w.b = base64.StdEncoding.AppendEncode(w.b, img.Data)
		w.b = append(w.b, `"},"type":"image_url"}`...)
	}
}
