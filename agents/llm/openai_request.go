package llm

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"maps"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/shared"
)

// openAIBodySDK marshals req as a streaming Chat Completions request using
// openai-go's param types (they know the wire format); fields the SDK types
// cannot express as given (tool_choice and response_format as raw values,
// top_k, extra) are merged as extra fields. The tools come from tools, each
// encoded once (see toolJSON), unless params.extra sets "tools" itself.
//
// It defines the body openAIBody writes directly, and still encodes the
// requests openAIBody leaves to it (see openAIDirect).
func openAIBodySDK(req Request, tools *toolJSON) ([]byte, error) {
	params := openai.ChatCompletionNewParams{
		Model:    shared.ChatModel(req.Model),
		Messages: openAIMessages(req.System, req.Messages),
	}
	_, extraTools := req.Params.Extra["tools"]
	if extraTools { // merged with extra.tools by the SDK, as before
		for _, t := range req.Tools {
			tool, err := openAITool(t)
			if err != nil {
				return nil, err
			}
			params.Tools = append(params.Tools, tool)
		}
	}
	openAIParams(&params, req.Params)

	extra := map[string]any{
		"stream":         true,
		"stream_options": map[string]any{"include_usage": true},
	}
	p := req.Params
	if p.TopK != nil {
		extra["top_k"] = *p.TopK
	}
	if p.ResponseFormat != nil {
		extra["response_format"] = p.ResponseFormat
	}
	if p.ToolChoice != nil && len(req.Tools) > 0 {
		extra["tool_choice"] = p.ToolChoice
	}
	maps.Copy(extra, p.Extra)
	params.SetExtraFields(extra)
	body, err := json.Marshal(params)
	if err != nil {
		return nil, fmt.Errorf("encoding request: %w", err)
	}
	if extraTools || len(req.Tools) == 0 {
		return body, nil
	}
	return tools.appendTools(body, req.Tools)
}

// encodeOpenAITool is a tool definition as openai-go encodes it.
func encodeOpenAITool(t Tool) ([]byte, error) {
	tool, err := openAITool(t)
	if err != nil {
		return nil, err
	}
	return json.Marshal(tool)
}

// openAIParams sets the sampling parameters the SDK types carry.
func openAIParams(params *openai.ChatCompletionNewParams, p Params) {
	if p.Temperature != nil {
		params.Temperature = openai.Float(*p.Temperature)
	}
	if p.TopP != nil {
		params.TopP = openai.Float(*p.TopP)
	}
	if p.MaxTokens != nil {
		// max_tokens, not max_completion_tokens: every compatible server
		// understands it.
		params.MaxTokens = openai.Int(int64(*p.MaxTokens))
	}
	if len(p.Stop) > 0 {
		params.Stop = openai.ChatCompletionNewParamsStopUnion{OfStringArray: p.Stop}
	}
	if p.PresencePenalty != nil {
		params.PresencePenalty = openai.Float(*p.PresencePenalty)
	}
	if p.FrequencyPenalty != nil {
		params.FrequencyPenalty = openai.Float(*p.FrequencyPenalty)
	}
	if p.Seed != nil {
		params.Seed = openai.Int(int64(*p.Seed))
	}
}

// openAIMessages converts the conversation. Tool messages cannot carry
// images, so the images of a run of consecutive tool results follow that run
// as one user message (placing it inside the run would separate tool results
// from the assistant turn that asked for them).
func openAIMessages(system string, msgs []Message) []openai.ChatCompletionMessageParamUnion {
	var out []openai.ChatCompletionMessageParamUnion
	if system != "" {
		out = append(out, openai.SystemMessage(system))
	}
	var pending []openai.ChatCompletionContentPartUnionParam // images of tool results
	flush := func() {
		if len(pending) > 0 {
			out = append(out, openai.UserMessage(pending))
			pending = nil
		}
	}
	for _, m := range msgs {
		if m.Role != RoleTool {
			flush()
		}
		switch m.Role {
		case RoleUser:
			out = append(out, openAIUser(m))
		case RoleAssistant:
			out = append(out, openAIAssistant(m))
		case RoleSystem:
			out = append(out, openai.SystemMessage(m.Text))
		case RoleTool:
			text := toolResultText(m)
			if m.IsError { // tool messages have no error flag
				text = "Error: " + text
			}
			out = append(out, openai.ToolMessage(text, m.ToolCallID))
			if len(m.Images) > 0 {
				pending = append(pending, openai.TextContentPart(
					fmt.Sprintf("Image(s) returned by tool call %s:", m.ToolCallID)))
				pending = append(pending, openAIImages(m.Images)...)
			}
		}
	}
	flush()
	return out
}

func openAIUser(m Message) openai.ChatCompletionMessageParamUnion {
	if len(m.Images) == 0 {
		return openai.UserMessage(m.Text)
	}
	var parts []openai.ChatCompletionContentPartUnionParam
	if m.Text != "" {
		parts = append(parts, openai.TextContentPart(m.Text))
	}
	return openai.UserMessage(append(parts, openAIImages(m.Images)...))
}

func openAIImages(imgs []Image) []openai.ChatCompletionContentPartUnionParam {
	parts := make([]openai.ChatCompletionContentPartUnionParam, 0, len(imgs))
	for _, img := range imgs {
		parts = append(parts, openai.ImageContentPart(openai.ChatCompletionContentPartImageImageURLParam{
			URL: dataURL(img),
		}))
	}
	return parts
}

// dataURL encodes an image as data:<mime>;base64,<data>.
func dataURL(img Image) string {
	return "data:" + imageMIME(img) + ";base64," + base64.StdEncoding.EncodeToString(img.Data)
}

// imageMIME is the MIME type of img, application/octet-stream if unknown.
func imageMIME(img Image) string {
	if img.MIMEType == "" {
		return "application/octet-stream"
	}
	return img.MIMEType
}

func openAIAssistant(m Message) openai.ChatCompletionMessageParamUnion {
	var a openai.ChatCompletionAssistantMessageParam
	if m.Text != "" || len(m.ToolCalls) == 0 {
		a.Content.OfString = openai.String(m.Text)
	}
	for _, tc := range m.ToolCalls {
		a.ToolCalls = append(a.ToolCalls, openai.ChatCompletionMessageToolCallUnionParam{
			OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{
				ID: tc.ID,
				Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{
					Name:      tc.Name,
					Arguments: string(argsOrEmpty(tc.Arguments)),
				},
			},
		})
	}
	return openai.ChatCompletionMessageParamUnion{OfAssistant: &a}
}

func openAITool(t Tool) (openai.ChatCompletionToolUnionParam, error) {
	schema, err := schemaMap(t.InputSchema)
	if err != nil {
		return openai.ChatCompletionToolUnionParam{}, fmt.Errorf("tool %q: %w", t.Name, err)
	}
	def := shared.FunctionDefinitionParam{Name: t.Name, Parameters: schema}
	if t.Description != "" {
		def.Description = openai.String(t.Description)
	}
	return openai.ChatCompletionFunctionTool(def), nil
}

// schemaMap decodes a tool's JSON Schema; an empty schema is an empty object.
func schemaMap(raw json.RawMessage) (map[string]any, error) {
	schema := map[string]any{}
	if len(raw) > 0 && string(raw) != "null" {
		if err := json.Unmarshal(raw, &schema); err != nil {
			return nil, fmt.Errorf("input schema is not a JSON object: %w", err)
		}
	}
	if _, ok := schema["type"]; !ok {
		schema["type"] = "object"
	}
	return schema, nil
}

// argsOrEmpty returns the arguments or {} when there are none.
func argsOrEmpty(a json.RawMessage) json.RawMessage {
	if len(a) == 0 || string(a) == "null" {
		return json.RawMessage("{}")
	}
	return a
}

// toolResultText is the text of a tool result; an empty result says so,
// since some servers reject empty tool messages.
func toolResultText(m Message) string {
	if m.Text == "" && len(m.Images) > 0 {
		return "(see the image(s) in the next message)"
	}
	if m.Text == "" {
		return "(empty result)"
	}
	return m.Text
}
