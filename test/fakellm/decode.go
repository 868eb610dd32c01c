package fakellm

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
)

// Request is one request the fake received, in arrival order.
type Request struct {
	Method string
	Path   string
	Header http.Header
	Body   []byte
	// Chat is the decoded view of a chat request (nil for other requests or
	// when the body was not JSON).
	Chat *Chat
}

// Chat is a provider-neutral view of a chat request, for assertions.
type Chat struct {
	API      string // "openai" or "anthropic"
	Model    string
	System   string
	Stream   bool
	Messages []Message
	Tools    []string // names of the tools offered
	// IncludeUsage is OpenAI's stream_options.include_usage.
	IncludeUsage bool
	// Body is the whole body, for parameter assertions (nil from NewAuto's
	// fake, which asserts nothing).
	Body map[string]any
}

// Message is one decoded conversation entry.
type Message struct {
	Role        string // "system", "user", "assistant" or "tool" (OpenAI)
	Text        string // text parts joined by "\n"
	Images      []Image
	ToolCalls   []Call       // assistant tool_calls / tool_use blocks
	ToolCallID  string       // OpenAI tool message
	ToolResults []ToolResult // Anthropic tool_result blocks
}

// Image is an image found in a request, decoded.
type Image struct {
	MIMEType string
	Data     []byte
	Format   string // "image_url" (OpenAI data URL) or "base64" (Anthropic block)
}

// ToolResult is an Anthropic tool_result block.
type ToolResult struct {
	ToolUseID string
	IsError   bool
	Text      string
	Images    []Image
}

// LastUserText is the text of the last user message that has text.
func (c *Chat) LastUserText() string {
	for i := len(c.Messages) - 1; i >= 0; i-- {
		if m := c.Messages[i]; m.Role == "user" && m.Text != "" {
			return m.Text
		}
	}
	return ""
}

func (c *Chat) words() int64 {
	n := 0
	for _, m := range c.Messages {
		n += len(strings.Fields(m.Text))
	}
	return int64(max(n, 1))
}

// rawMsg is a message in either API.
type rawMsg struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	ToolCallID string          `json:"tool_call_id"`
	ToolCalls  []struct {
		ID       string `json:"id"`
		Function struct {
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		} `json:"function"`
	} `json:"tool_calls"`
}

// rawPart is a content part/block in either API.
type rawPart struct {
	Type     string `json:"type"`
	Text     string `json:"text"`
	ImageURL struct {
		URL string `json:"url"`
	} `json:"image_url"`
	Source struct {
		MediaType string `json:"media_type"`
		Data      string `json:"data"`
	} `json:"source"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	IsError   bool            `json:"is_error"`
	Content   json.RawMessage `json:"content"`
}

type rawChat struct {
	Model    string          `json:"model"`
	Stream   bool            `json:"stream"`
	System   json.RawMessage `json:"system"`
	Messages []rawMsg        `json:"messages"`
	Tools    []struct {
		Name     string `json:"name"` // Anthropic
		Function struct {
			Name string `json:"name"`
		} `json:"function"` // OpenAI
	} `json:"tools"`
	StreamOptions struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
}

// decodeChat builds the view of a chat body; api is "openai" or "anthropic".
// whole also decodes the body into Chat.Body, which costs more than the
// rest together (every tool schema becomes maps).
func decodeChat(api string, body []byte, whole bool) *Chat {
	var raw rawChat
	if json.Unmarshal(body, &raw) != nil {
		return nil
	}
	c := &Chat{API: api, Model: raw.Model, Stream: raw.Stream, IncludeUsage: raw.StreamOptions.IncludeUsage}
	if whole {
		_ = json.Unmarshal(body, &c.Body)
	}
	c.System = partsMessage(raw.System).Text
	for _, t := range raw.Tools {
		c.Tools = append(c.Tools, t.Name+t.Function.Name)
	}
	for _, rm := range raw.Messages {
		m := partsMessage(rm.Content)
		m.Role, m.ToolCallID = rm.Role, rm.ToolCallID
		for _, tc := range rm.ToolCalls {
			m.ToolCalls = append(m.ToolCalls, Call{ID: tc.ID, Name: tc.Function.Name, Args: json.RawMessage(tc.Function.Arguments)})
		}
		if m.Role == "system" && c.System == "" {
			c.System = m.Text
		}
		c.Messages = append(c.Messages, m)
	}
	return c
}

// partsMessage decodes content that is a string or a list of parts/blocks.
func partsMessage(content json.RawMessage) Message {
	var m Message
	var s string
	if json.Unmarshal(content, &s) == nil {
		m.Text = s
		return m
	}
	var parts []rawPart
	_ = json.Unmarshal(content, &parts)
	var texts []string
	for _, p := range parts {
		switch p.Type {
		case "text":
			texts = append(texts, p.Text)
		case "image_url", "image":
			if img, ok := decodeImage(p); ok {
				m.Images = append(m.Images, img)
			}
		case "tool_use":
			m.ToolCalls = append(m.ToolCalls, Call{ID: p.ID, Name: p.Name, Args: p.Input})
		case "tool_result":
			inner := partsMessage(p.Content)
			m.ToolResults = append(m.ToolResults, ToolResult{ToolUseID: p.ToolUseID,
				IsError: p.IsError, Text: inner.Text, Images: inner.Images})
		}
	}
	m.Text = strings.Join(texts, "\n")
	return m
}

func decodeImage(p rawPart) (Image, bool) {
	if p.Type == "image" {
		data, err := base64.StdEncoding.DecodeString(p.Source.Data)
		return Image{MIMEType: p.Source.MediaType, Data: data, Format: "base64"}, err == nil
	}
	rest, ok := strings.CutPrefix(p.ImageURL.URL, "data:")
	if !ok {
		return Image{}, false
	}
	mime, b64, ok := strings.Cut(rest, ";base64,")
	if !ok {
		return Image{}, false
	}
	data, err := base64.StdEncoding.DecodeString(b64)
	return Image{MIMEType: mime, Data: data, Format: "image_url"}, err == nil
}
