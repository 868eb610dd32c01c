package agenttest

import mcpgo "github.com/mark3labs/mcp-go/mcp"

// ProxyOneServer is a proxy agent px over one server, files, which gets the
// caller's X-Tenant; px hides files__admin_* and caller alice may not call
// files__write.
const ProxyOneServer = `
name: unit
mcp:
  servers:
    files: {url: "http://127.0.0.1:1/mcp", forward_headers: {X-Tenant: X-Tenant}}
policy:
  callers:
    alice: {tools: {deny: ["files__write"]}}
agents:
  px: {kind: proxy, servers: [files], tools: {deny: ["files__admin_*"]}}
`

// OneServerDown is the downstream of ProxyOneServer: read (a rich isError
// result), write and admin_wipe.
func OneServerDown() *FakeDown {
	img := mcpgo.NewImageContent("iVBORw0KGgo=", "image/png")
	img.Meta = mcpgo.NewMetaFromMap(map[string]any{"k": "v"})
	rich := &mcpgo.CallToolResult{
		Result:            mcpgo.Result{Meta: mcpgo.NewMetaFromMap(map[string]any{"trace": "abc"})},
		Content:           []mcpgo.Content{mcpgo.NewTextContent("hi"), img, mcpgo.NewAudioContent("UklGRg==", "audio/wav")},
		StructuredContent: map[string]any{"n": float64(3)},
		IsError:           true,
	}
	return &FakeDown{
		ToolLists: map[string][]mcpgo.Tool{"files": {
			mcpgo.NewTool("read", mcpgo.WithDescription("reads"), mcpgo.WithString("path", mcpgo.Required())),
			mcpgo.NewTool("write"), mcpgo.NewTool("admin_wipe"),
		}},
		Results: map[string]*mcpgo.CallToolResult{"files/read": rich, "files/write": mcpgo.NewToolResultText("written")},
	}
}

// ProxyTwoServers is a proxy agent px over two servers, a and b.
const ProxyTwoServers = `
name: unit
mcp:
  servers:
    a: {url: "http://127.0.0.1:1/mcp"}
    b: {url: "http://127.0.0.1:2/mcp"}
agents:
  px: {kind: proxy, servers: [a, b]}
`

// TwoServersDown is the downstream of ProxyTwoServers: each server has an
// echo tool, b also a get_health; a has a prompt, both a resource, b a
// resource template.
func TwoServersDown() *FakeDown {
	return &FakeDown{
		ToolLists: map[string][]mcpgo.Tool{"a": {mcpgo.NewTool("echo")}, "b": {mcpgo.NewTool("echo"), mcpgo.NewTool("get_health")}},
		Results: map[string]*mcpgo.CallToolResult{
			"a/echo": mcpgo.NewToolResultText("from a"), "b/echo": mcpgo.NewToolResultText("from b"),
		},
		Prompts: map[string][]mcpgo.Prompt{"a": {mcpgo.NewPrompt("greet", mcpgo.WithArgument("who"))}},
		Resources: map[string][]mcpgo.Resource{
			"a": {mcpgo.NewResource("test://a/doc", "doc")},
			"b": {mcpgo.NewResource("test://b/doc", "doc")},
		},
		Templates: map[string][]mcpgo.ResourceTemplate{"b": {mcpgo.NewResourceTemplate("test://items/{id}", "item")}},
	}
}
