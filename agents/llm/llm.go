// Package llm owns the conversation with language models: the provider-neutral
// request and response types, the OpenAI-compatible and Anthropic providers
// (streaming, retries, preflight) and the built-in passthrough and playback
// models. It knows nothing about MCP, agents or HTTP routing; callers hand it
// fully built requests and get back one assistant turn.
package llm

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"time"
)

// Role of a message in a conversation.
type Role string

const (
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	RoleTool      Role = "tool" // a tool result answering ToolCallID
	// RoleSystem is an instruction within the conversation (a replayed
	// history's system turn): OpenAI-compatible providers get it in place,
	// Anthropic after the request's System (its API has no system turn).
	RoleSystem Role = "system"
)

// Image is raw image bytes with their MIME type (already base64-decoded).
type Image struct {
	MIMEType string
	Data     []byte
}

// ToolCall is one tool invocation requested by the model.
type ToolCall struct {
	ID        string
	Name      string
	Arguments json.RawMessage // a JSON object; "{}" when the model sent nothing
}

// Message is one provider-neutral conversation entry.
//
// RoleUser: Text and/or Images. RoleAssistant: Text and/or ToolCalls.
// RoleTool: ToolCallID, Text (the result), optional Images, IsError.
// RoleSystem: Text.
type Message struct {
	Role       Role
	Text       string
	Images     []Image
	ToolCalls  []ToolCall
	ToolCallID string
	IsError    bool
}

// Tool is a function the model may call.
type Tool struct {
	Name        string // already sanitised to ^[a-zA-Z0-9_-]{1,64}$
	Description string
	InputSchema json.RawMessage // JSON Schema object
}

// Params are an agent's sampling parameters (its params block). Nil pointers are unset.
type Params struct {
	Temperature      *float64
	TopP             *float64
	TopK             *int
	MaxTokens        *int
	Stop             []string
	PresencePenalty  *float64
	FrequencyPenalty *float64
	Seed             *int
	ResponseFormat   any            // passed through as JSON
	ToolChoice       any            // "auto" | "none" | "required" | provider object
	Extra            map[string]any // merged into the request body as-is
	Playback         []string       // only for the built-in playback model
}

// Request is one model turn.
type Request struct {
	Model    string // model name without provider prefix
	System   string
	Messages []Message
	Tools    []Tool
	Params   Params
	// Header carries extra outbound headers for this call (e.g. the caller's
	// Authorization when the provider has forward_inbound_auth). May be nil.
	Header http.Header
	// Schema, when set, asks for the answer as JSON matching it
	// (structured output): OpenAI-compatible servers get response_format
	// json_schema (unless params.response_format is set), Anthropic
	// output_config.format; the built-in models ignore it. The caller
	// still parses the text: a model may answer otherwise.
	Schema *OutputSchema
	// OnText, when set, is given each text delta of the answer as it
	// streams in, on the goroutine that called Chat (the built-in models
	// give their whole answer once). The Response still holds all of it.
	OnText func(delta string)
}

// OutputSchema is a JSON schema the answer must follow.
type OutputSchema struct {
	Name   string         // OpenAI's json_schema.name: [a-zA-Z0-9_-]{1,64}
	Schema map[string]any // a JSON Schema object
}

// Usage is token accounting for one turn (final, not cumulative deltas).
type Usage struct {
	InputTokens  int64
	OutputTokens int64
}

// Response is the assistant's turn.
type Response struct {
	Text         string
	ToolCalls    []ToolCall
	FinishReason string // normalised: "stop", "tool_calls", "length", or the provider's own value
	Usage        Usage
}

// ErrModelNotListed: a provider's check found that it does not offer the
// model (Preflight).
var ErrModelNotListed = errors.New("not listed")

// Provider talks to one configured provider.
type Provider interface {
	// Name is the provider key: "openai", "anthropic", "builtin".
	Name() string
	// Chat runs one streamed turn. It honours ctx cancellation promptly (the
	// HTTP stream is closed). Errors name the provider and, for HTTP
	// failures, the status code; they never contain the API key.
	Chat(ctx context.Context, req Request) (*Response, error)
	// Preflight checks that the provider answers and lists model (5 s budget
	// is the caller's ctx); with model "" only that it answers and takes the
	// key. It never calls the model itself.
	Preflight(ctx context.Context, model string) error
}

// ProviderConfig is what a provider is built from (mapped from the config file
// by the caller; this package does not read config files).
type ProviderConfig struct {
	Kind    string // "openai" or "anthropic"
	BaseURL string
	APIKey  string
	// Headers are static headers sent with every request (chat and
	// preflight); their values are secrets, redacted from errors.
	Headers map[string]string
	Timeout time.Duration // whole-call timeout; 0 = none
	// MaxRetries on 429/5xx/connection errors before the first byte of the
	// stream. 0 means the default, 2; a negative value disables retries.
	// Backoff is exponential from 200 ms (cap 10 s, jittered) and honours
	// Retry-After / retry-after-ms (cap 30 s).
	MaxRetries int
	// DropTopK leaves top_k out of OpenAI requests, for servers that
	// refuse unknown parameters. It is implied for OpenAI's own API
	// (api.openai.com, *.openai.azure.com; see RejectsTopK); vLLM,
	// llama.cpp, Ollama and LiteLLM take top_k.
	DropTopK bool
	// SDKBody encodes OpenAI request bodies through openai-go's param
	// types instead of writing them directly (openai_body.go): the same
	// bytes, for more CPU per call.
	SDKBody bool
	// HTTPClient may be set by tests; nil = a tuned default client.
	HTTPClient *http.Client
}
