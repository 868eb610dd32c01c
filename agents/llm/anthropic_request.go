package llm

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"maps"

	"github.com/anthropics/anthropic-sdk-go"
)

// defaultAnthropicMaxTokens is sent when params.max_tokens is unset: the
// Messages API requires it.
const defaultAnthropicMaxTokens = 4096

// anthropicBody marshals req as a streaming Messages request with
// anthropic-sdk-go's param types. Params the Messages API does not know
// (presence/frequency penalty, seed, response_format) are dropped rather
// than sent, since it rejects unknown fields; Extra is merged as-is (an
// extra "tools" replaces the tools), so operators can still send anything.
func anthropicBody(req Request) ([]byte, error) {
	params, extra, err := anthropicParams(req)
	if err != nil {
		return nil, err
	}
	params.SetExtraFields(extra)
	body, err := json.Marshal(params)
	if err != nil {
		return nil, fmt.Errorf("encoding request: %w", err)
	}
	return body, nil
}

// anthropicParams converts req to the SDK's params and the extra fields
// merged into them: stream, tool_choice (the SDK's union cannot hold an
// operator's raw value) and params.extra.
func anthropicParams(req Request) (anthropic.MessageNewParams, map[string]any, error) {
	p := req.Params
	params := anthropic.MessageNewParams{
		Model:     anthropic.Model(req.Model),
		MaxTokens: defaultAnthropicMaxTokens,
		Messages:  anthropicMessages(req.Messages),
	}
	if req.System != "" {
		params.System = []anthropic.TextBlockParam{{Text: req.System}}
	}
	// The Messages API has no system turn: a conversation's system turns
	// (a replayed history's) follow the request's system prompt, in order.
	for _, m := range req.Messages {
		if m.Role == RoleSystem && m.Text != "" {
			params.System = append(params.System, anthropic.TextBlockParam{Text: m.Text})
		}
	}
	for _, t := range req.Tools {
		tool, err := anthropicTool(t)
		if err != nil {
			return params, nil, err
		}
		params.Tools = append(params.Tools, tool)
	}
	if p.MaxTokens != nil && *p.MaxTokens > 0 {
		params.MaxTokens = int64(*p.MaxTokens)
	}
	if p.Temperature != nil {
		params.Temperature = anthropic.Float(*p.Temperature)
	}
	if p.TopP != nil {
		params.TopP = anthropic.Float(*p.TopP)
	}
	if p.TopK != nil {
		params.TopK = anthropic.Int(int64(*p.TopK))
	}
	params.StopSequences = p.Stop
	if req.Schema != nil {
		params.OutputConfig.Format = anthropic.JSONOutputFormatParam{Schema: req.Schema.Schema}
	}

	extra := map[string]any{"stream": true}
	if tc := anthropicToolChoice(p.ToolChoice); tc != nil && len(req.Tools) > 0 {
		extra["tool_choice"] = tc
	}
	maps.Copy(extra, p.Extra)
	return params, extra, nil
}

// anthropicToolChoice maps the OpenAI-style strings; objects pass through.
func anthropicToolChoice(tc any) any {
	if t, ok := anthropicChoiceType(tc); ok {
		return map[string]any{"type": t}
	}
	return tc
}

// anthropicChoiceType is the Messages API's tool_choice type for an
// OpenAI-style tool_choice string.
func anthropicChoiceType(tc any) (string, bool) {
	switch tc {
	case "auto":
		return "auto", true
	case "required", "any":
		return "any", true
	case "none":
		return "none", true
	}
	return "", false
}

// anthropicMessages converts the conversation. Tool results become
// tool_result blocks in a user message; consecutive results share one.
func anthropicMessages(msgs []Message) []anthropic.MessageParam {
	var out []anthropic.MessageParam
	for _, m := range msgs {
		switch m.Role {
		case RoleUser:
			out = append(out, anthropic.NewUserMessage(anthropicUserBlocks(m)...))
		case RoleAssistant:
			out = append(out, anthropic.NewAssistantMessage(anthropicAssistantBlocks(m)...))
		case RoleTool:
			block := anthropicToolResult(m)
			if n := len(out); n > 0 && out[n-1].Role == anthropic.MessageParamRoleUser && isToolResults(out[n-1]) {
				out[n-1].Content = append(out[n-1].Content, block)
			} else {
				out = append(out, anthropic.NewUserMessage(block))
			}
		}
	}
	return out
}

// isToolResults reports whether a user message holds only tool results.
func isToolResults(m anthropic.MessageParam) bool {
	for _, b := range m.Content {
		if b.OfToolResult == nil {
			return false
		}
	}
	return len(m.Content) > 0
}

func anthropicUserBlocks(m Message) []anthropic.ContentBlockParamUnion {
	var blocks []anthropic.ContentBlockParamUnion
	for _, img := range m.Images {
		blocks = append(blocks, anthropic.NewImageBlockBase64(img.MIMEType, base64.StdEncoding.EncodeToString(img.Data)))
	}
	// The API rejects empty text blocks, and a message needs some content.
	if m.Text != "" || len(blocks) == 0 {
		blocks = append(blocks, anthropic.NewTextBlock(nonEmpty(m.Text)))
	}
	return blocks
}

func anthropicAssistantBlocks(m Message) []anthropic.ContentBlockParamUnion {
	var blocks []anthropic.ContentBlockParamUnion
	if m.Text != "" || len(m.ToolCalls) == 0 {
		blocks = append(blocks, anthropic.NewTextBlock(nonEmpty(m.Text)))
	}
	for _, tc := range m.ToolCalls {
		blocks = append(blocks, anthropic.NewToolUseBlock(tc.ID, jsonObject(tc.Arguments), tc.Name))
	}
	return blocks
}

func anthropicToolResult(m Message) anthropic.ContentBlockParamUnion {
	res := anthropic.ToolResultBlockParam{ToolUseID: m.ToolCallID}
	if m.IsError {
		res.IsError = anthropic.Bool(true)
	}
	if m.Text != "" || len(m.Images) == 0 {
		res.Content = append(res.Content, anthropic.ToolResultBlockParamContentUnion{
			OfText: &anthropic.TextBlockParam{Text: nonEmpty(m.Text)},
		})
	}
	for _, img := range m.Images {
		res.Content = append(res.Content, anthropic.ToolResultBlockParamContentUnion{
			OfImage: &anthropic.ImageBlockParam{Source: anthropic.ImageBlockParamSourceUnion{
				OfBase64: &anthropic.Base64ImageSourceParam{
					MediaType: anthropic.Base64ImageSourceMediaType(img.MIMEType),
					Data:      base64.StdEncoding.EncodeToString(img.Data),
				},
			}},
		})
	}
	return anthropic.ContentBlockParamUnion{OfToolResult: &res}
}

// anthropicTool splits a JSON Schema into the SDK's input_schema shape.
func anthropicTool(t Tool) (anthropic.ToolUnionParam, error) {
	schema, err := schemaMap(t.InputSchema)
	if err != nil {
		return anthropic.ToolUnionParam{}, fmt.Errorf("tool %q: %w", t.Name, err)
	}
	in := anthropic.ToolInputSchemaParam{Properties: schema["properties"], ExtraFields: map[string]any{}}
	if req, ok := schema["required"].([]any); ok {
		for _, r := range req {
			if s, ok := r.(string); ok {
				in.Required = append(in.Required, s)
			}
		}
	}
	for k, v := range schema {
		if k != "properties" && k != "required" && k != "type" {
			in.ExtraFields[k] = v
		}
	}
	tool := anthropic.ToolParam{Name: t.Name, InputSchema: in}
	if t.Description != "" {
		tool.Description = anthropic.String(t.Description)
	}
	return anthropic.ToolUnionParam{OfTool: &tool}, nil
}

// jsonObject returns args when they are a JSON object, else {} (tool_use
// input must be an object).
func jsonObject(args json.RawMessage) json.RawMessage {
	var obj map[string]json.RawMessage
	if json.Unmarshal(args, &obj) != nil || obj == nil {
		return json.RawMessage("{}")
	}
	return args
}

func nonEmpty(s string) string {
	if s == "" {
		return "(empty)"
	}
	return s
}
