package agents

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/pallasgw/pallasgw/agents/llm"
)

// Turn is the input of one send_message call: the new user message, its
// images, and the client-owned history the run starts from.
type Turn struct {
	Message        string
	Images         []llm.Image
	History        []llm.Message
	ConversationID string
}

// skipFunc is told about every malformed history entry that was skipped.
type skipFunc func(index int, reason string)

// ArgumentError is a send_message argument that cannot be used.
type ArgumentError struct{ Msg string }

func (e *ArgumentError) Error() string { return "invalid arguments: " + e.Msg }

// parseTurnFor reads send_message arguments. The new turn must be well
// formed; malformed history entries are skipped (reported through skip),
// never fatal. Only the newest maxHistory entries are kept. A history
// system turn instructs the model as the agent's instruction does, so it
// is taken only when allowSystem (callers who may change the instruction,
// overrides.system); otherwise it is skipped as bad_role.
func parseTurnFor(args map[string]any, maxHistory int, maxImage int64, allowSystem bool, skip skipFunc) (Turn, error) {
	var t Turn
	msg, ok := args["message"].(string)
	if !ok {
		return t, &ArgumentError{"message is required and must be a string"}
	}
	t.Message = msg
	if cid, ok := args["conversation_id"]; ok && cid != nil {
		s, ok := cid.(string)
		if !ok {
			return t, &ArgumentError{"conversation_id must be a string"}
		}
		t.ConversationID = s
	}
	if raw, ok := args["images"]; ok && raw != nil {
		imgs, err := parseImages(raw, maxImage)
		if err != nil {
			return t, &ArgumentError{"images: " + err.Error()}
		}
		t.Images = imgs
	}
	if raw, ok := args["history"]; ok && raw != nil {
		list, ok := raw.([]any)
		if !ok {
			return t, &ArgumentError{"history must be an array"}
		}
		t.History = parseHistory(list, maxHistory, maxImage, allowSystem, skip)
	}
	return t, nil
}

func parseHistory(list []any, max int, maxImage int64, allowSystem bool, skip skipFunc) []llm.Message {
	start := 0
	if max > 0 && len(list) > max {
		start = len(list) - max
		for i := 0; i < start; i++ {
			skip(i, "too_many")
		}
	}
	out := make([]llm.Message, 0, len(list)-start)
	// The tool calls of the last assistant turn that no tool turn has
	// answered yet, and where that turn is in out and in list. A tool turn
	// must answer one of them, with only tool turns between: providers
	// refuse a result that follows anything else.
	var open map[string]bool
	asked, askedAt := -1, -1
	settle := func() {
		if len(open) == 0 {
			return
		}
		// Providers refuse a call without its result: drop the calls the
		// history does not answer.
		m := &out[asked]
		m.ToolCalls = slices.DeleteFunc(m.ToolCalls, func(c llm.ToolCall) bool { return open[c.ID] })
		skip(askedAt, "unanswered_tool_call")
		if len(m.ToolCalls) == 0 && strings.TrimSpace(m.Text) == "" {
			out = out[:asked] // nothing was answered, so nothing follows it
		}
		open = nil
	}
	for i := start; i < len(list); i++ {
		m, reason := parseHistoryEntry(list[i], maxImage)
		if reason == "" && m.Role == llm.RoleSystem && !allowSystem {
			reason = "bad_role"
		}
		if reason != "" {
			skip(i, reason)
			continue
		}
		if m.Role == llm.RoleTool {
			if !open[m.ToolCallID] {
				skip(i, "bad_tool_call")
				continue
			}
			delete(open, m.ToolCallID)
			out = append(out, m)
			continue
		}
		settle()
		out = append(out, m)
		if len(m.ToolCalls) > 0 {
			open = make(map[string]bool, len(m.ToolCalls))
			for _, c := range m.ToolCalls {
				open[c.ID] = true
			}
			asked, askedAt = len(out)-1, i
		}
	}
	settle()
	return out
}

// parseHistoryEntry returns the message or a bounded reason it was skipped.
// Roles: user, assistant (with tool_calls), system, and tool (answering
// tool_call_id); see parseToolCalls for the shapes of tool calls.
func parseHistoryEntry(v any, maxImage int64) (llm.Message, string) {
	e, ok := v.(map[string]any)
	if !ok {
		return llm.Message{}, "not_object"
	}
	var m llm.Message
	switch role, _ := e["role"].(string); role {
	case "user":
		m.Role = llm.RoleUser
	case "assistant":
		m.Role = llm.RoleAssistant
	case "system":
		m.Role = llm.RoleSystem
	case "tool":
		m.Role = llm.RoleTool
	default:
		return m, "bad_role"
	}
	if raw, ok := e["tool_calls"]; ok && raw != nil {
		calls, ok := parseToolCalls(raw)
		if !ok || m.Role != llm.RoleAssistant {
			return m, "bad_tool_call"
		}
		m.ToolCalls = calls
	}
	if m.Role == llm.RoleTool {
		id, _ := e["tool_call_id"].(string)
		if id == "" {
			return m, "bad_tool_call"
		}
		m.ToolCallID = id
		m.IsError, _ = e["is_error"].(bool)
	}
	content, ok := e["content"].(string)
	switch {
	case ok:
		m.Text = content
	case e["content"] == nil && (len(m.ToolCalls) > 0 || m.Role == llm.RoleTool):
		// OpenAI's shape: an assistant turn that only calls tools has
		// content null; a tool's result may be empty.
	default:
		return m, "bad_content"
	}
	if raw, ok := e["images"]; ok && raw != nil {
		imgs, err := parseImages(raw, maxImage)
		if err != nil || m.Role == llm.RoleSystem && len(imgs) > 0 {
			return m, "bad_image"
		}
		if m.Role == llm.RoleAssistant && len(imgs) > 0 {
			// Providers take images from users only: keep a note instead.
			m.Text += fmt.Sprintf("\n[%d image(s) omitted]", len(imgs))
			imgs = nil
		}
		m.Images = imgs
	}
	if strings.TrimSpace(m.Text) == "" && len(m.Images) == 0 && len(m.ToolCalls) == 0 && m.Role != llm.RoleTool {
		return m, "empty"
	}
	return m, ""
}

// parseToolCalls reads an assistant turn's tool_calls in OpenAI's shape,
// {id, type: "function", function: {name, arguments}} with arguments a JSON
// string, or flat, {id, name, arguments} with arguments an object or a
// JSON string. Each needs an id (unique in the turn) and a name; arguments
// must be a JSON object ("{}" when absent).
func parseToolCalls(raw any) ([]llm.ToolCall, bool) {
	list, ok := raw.([]any)
	if !ok || len(list) == 0 {
		return nil, false
	}
	out := make([]llm.ToolCall, 0, len(list))
	seen := make(map[string]bool, len(list))
	for _, v := range list {
		c, ok := v.(map[string]any)
		if !ok {
			return nil, false
		}
		id, _ := c["id"].(string)
		name, _ := c["name"].(string)
		args := c["arguments"]
		if fn, ok := c["function"].(map[string]any); ok {
			name, _ = fn["name"].(string)
			args = fn["arguments"]
		}
		if id == "" || name == "" || seen[id] {
			return nil, false
		}
		seen[id] = true
		var obj map[string]any
		switch a := args.(type) {
		case nil:
			obj = map[string]any{}
		case string:
			if json.Unmarshal([]byte(a), &obj) != nil || obj == nil {
				return nil, false
			}
		case map[string]any:
			obj = a
		default:
			return nil, false
		}
		b, err := json.Marshal(obj)
		if err != nil {
			return nil, false
		}
		out = append(out, llm.ToolCall{ID: id, Name: name, Arguments: b})
	}
	return out, true
}

// imageMIME is a plain image media type, "image/<subtype>" (RFC 6838
// restricted names, no parameters): the type travels to providers in
// headers and data URLs, so nothing else (a CR or LF, a ";") may ride in it.
var imageMIME = regexp.MustCompile(`^image/[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]{0,126}$`)

func parseImages(raw any, maxBytes int64) ([]llm.Image, error) {
	list, ok := raw.([]any)
	if !ok {
		return nil, fmt.Errorf("must be an array of {data, mime_type}")
	}
	out := make([]llm.Image, 0, len(list))
	for i, v := range list {
		o, ok := v.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("entry %d is not an object", i)
		}
		data, _ := o["data"].(string)
		mime, _ := o["mime_type"].(string)
		if data == "" || mime == "" {
			return nil, fmt.Errorf("entry %d needs data and mime_type", i)
		}
		if !imageMIME.MatchString(mime) {
			return nil, fmt.Errorf("entry %d: mime_type %q is not an image type", i, mime)
		}
		if maxBytes > 0 && int64(base64.StdEncoding.DecodedLen(len(data))) > maxBytes+3 {
			return nil, fmt.Errorf("entry %d is larger than %d bytes", i, maxBytes)
		}
		b, err := base64.StdEncoding.DecodeString(data)
		if err != nil {
			return nil, fmt.Errorf("entry %d: data is not valid base64", i)
		}
		out = append(out, llm.Image{MIMEType: mime, Data: b})
	}
	return out, nil
}
