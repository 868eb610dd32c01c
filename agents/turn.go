package agents

import (
	"encoding/base64"
	"fmt"
	"regexp"
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

// parseTurn reads send_message arguments. The new turn must be well formed;
// malformed history entries are skipped (reported through skip), never
// fatal. Only the newest maxHistory entries are kept.
func parseTurn(args map[string]any, maxHistory int, maxImage int64, skip skipFunc) (Turn, error) {
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
		t.History = parseHistory(list, maxHistory, maxImage, skip)
	}
	return t, nil
}

func parseHistory(list []any, max int, maxImage int64, skip skipFunc) []llm.Message {
	start := 0
	if max > 0 && len(list) > max {
		start = len(list) - max
		for i := 0; i < start; i++ {
			skip(i, "too_many")
		}
	}
	out := make([]llm.Message, 0, len(list)-start)
	for i := start; i < len(list); i++ {
		m, reason := parseHistoryEntry(list[i], maxImage)
		if reason != "" {
			skip(i, reason)
			continue
		}
		out = append(out, m)
	}
	return out
}

// parseHistoryEntry returns the message or a bounded reason it was skipped.
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
	default:
		return m, "bad_role"
	}
	content, ok := e["content"].(string)
	if !ok {
		return m, "bad_content"
	}
	m.Text = content
	if raw, ok := e["images"]; ok && raw != nil {
		imgs, err := parseImages(raw, maxImage)
		if err != nil {
			return m, "bad_image"
		}
		if m.Role == llm.RoleAssistant && len(imgs) > 0 {
			// Providers take images from users only: keep a note instead.
			m.Text += fmt.Sprintf("\n[%d image(s) omitted]", len(imgs))
			imgs = nil
		}
		m.Images = imgs
	}
	if strings.TrimSpace(m.Text) == "" && len(m.Images) == 0 {
		return m, "empty"
	}
	return m, ""
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
