package mcpclient

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// maxToolPages bounds a paginated tools/list.
const maxToolPages = 100

// listTools lists the server's tools, all pages, keeping each tool's
// inputSchema and outputSchema as the server sent them (RawInputSchema,
// RawOutputSchema). mcp-go's ListTools parses schemas into its
// ToolArgumentsSchema, which keeps only type, properties, required,
// additionalProperties and $defs (and rewrites draft-07 definitions): a
// proxy would hand its callers a different schema. So the request goes
// through the client's transport, as mcp-go's own would on a session-based
// connection (no _meta or header additions apply there), with an id of its
// own that cannot clash with the client's numeric ones.
func (m *Manager) listTools(ctx context.Context, cli *client.Client) ([]mcp.Tool, error) {
	var tools []mcp.Tool
	seen := map[string]bool{}
	cursor := ""
	for range maxToolPages {
		req := transport.JSONRPCRequest{
			JSONRPC: mcp.JSONRPC_VERSION,
			ID:      mcp.NewRequestId(fmt.Sprintf("pgw-tools-%d", m.listSeq.Add(1))),
			Method:  string(mcp.MethodToolsList),
		}
		if cursor != "" {
			req.Params = map[string]any{"cursor": cursor}
		}
		resp, err := cli.GetTransport().SendRequest(ctx, req)
		if err != nil {
			return nil, transport.NewError(err)
		}
		if resp.Error != nil {
			return nil, resp.Error.AsError()
		}
		var page struct {
			Tools      []json.RawMessage `json:"tools"`
			NextCursor string            `json:"nextCursor"`
		}
		if err := json.Unmarshal(resp.Result, &page); err != nil {
			return nil, fmt.Errorf("tools/list result: %w", err)
		}
		for _, raw := range page.Tools {
			t, err := rawTool(raw)
			if err != nil {
				return nil, err
			}
			tools = append(tools, t)
		}
		if page.NextCursor == "" {
			return tools, nil
		}
		if seen[page.NextCursor] {
			return nil, fmt.Errorf("tools/list: cursor %q repeats", page.NextCursor)
		}
		seen[page.NextCursor], cursor = true, page.NextCursor
	}
	return nil, fmt.Errorf("tools/list: more than %d pages", maxToolPages)
}

// rawTool decodes one tool with its schemas kept as sent.
func rawTool(raw json.RawMessage) (mcp.Tool, error) {
	var t mcp.Tool
	if err := json.Unmarshal(raw, &t); err != nil {
		return t, fmt.Errorf("tools/list: a tool: %w", err)
	}
	var schemas struct {
		In  json.RawMessage `json:"inputSchema"`
		Out json.RawMessage `json:"outputSchema"`
	}
	if err := json.Unmarshal(raw, &schemas); err != nil {
		return t, fmt.Errorf("tools/list: tool %q: %w", t.Name, err)
	}
	if len(schemas.In) > 0 && string(schemas.In) != "null" {
		t.InputSchema, t.RawInputSchema = mcp.ToolInputSchema{}, schemas.In
	}
	if len(schemas.Out) > 0 && string(schemas.Out) != "null" {
		t.OutputSchema, t.RawOutputSchema = mcp.ToolOutputSchema{}, schemas.Out
	}
	return t, nil
}
