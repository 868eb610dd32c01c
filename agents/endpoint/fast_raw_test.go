package endpoint_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"testing"

	mcpgo "github.com/mark3labs/mcp-go/mcp"

	"github.com/pallasgw/pallasgw/agents/internal/agenttest"
	"github.com/pallasgw/pallasgw/agents/mcpclient"
)

// rawFakeDown is a FakeDown whose CallToolRaw sends rawSent's bytes for
// the tools it names.
type rawFakeDown struct{ *agenttest.FakeDown }

// rawSent are results sent as they are, in ways mcp-go's client would
// normalize or refuse: member order, an unknown member, HTML characters
// unescaped, a content type mcp-go does not know, no content, line breaks.
var rawSent = map[string]string{
	"verbatim": `{"zeta":1,"content":[{"type":"text","text":"<b>&</b>"},{"type":"future","x":[1,2]}],` +
		`"structuredContent":{"n":12345678901234567890}}`,
	"normalized": `{"zeta":1,"content":[{"type":"text","text":"<b>&</b>"}],"structuredContent":{"n":12345678901234567890}}`,
	"pretty":     "{\n  \"content\": [\n    {\"type\": \"text\", \"text\": \"p\"}\n  ]\n}",
	"own_meta":   `{"_meta":{"trace":"t1"},"content":[]}`,
	"empty":      `{}`,
	"typed_done": `{"resultType":"complete","content":[]}`,
	"null_meta":  `{"_meta":null,"resultType":null,"content":[]}`,
}

func (f rawFakeDown) CallToolRaw(ctx context.Context, server, tool string, args json.RawMessage, hdr http.Header, onProgress mcpclient.ProgressFunc, opts mcpclient.CallOptions) (*mcpclient.RawResult, error) {
	sent, ok := rawSent[tool]
	if !ok {
		return f.FakeDown.CallToolRaw(ctx, server, tool, args, hdr, onProgress, opts)
	}
	if _, err := f.CallTool(ctx, server, "text", nil, hdr, onProgress, opts); err != nil { // records the path taken
		return nil, err
	}
	return agenttest.RawOf([]byte(sent))
}

// sameExchange reports whether two responses are the same to a caller:
// same status and headers, and the same JSON-RPC messages in the same
// order. The messages are compared as JSON values, not bytes: the fast
// path writes a downstream's result as the downstream sent it, and a
// 2026-07-28 result's decoration in front of it, where mcp-go re-encodes
// the result with sorted members. For a result that mcp-go leaves as it is
// (every case of fastResult but the decorated ones) the bytes are the same
// too, which TestProxyFastRawBytes checks.
func sameExchange(a, b agenttest.Exchange) bool {
	if a.String() == b.String() {
		return true
	}
	if a.Status != b.Status || a.Headers != b.Headers {
		return false
	}
	ma, mb := messages(a.Body), messages(b.Body)
	return ma != nil && reflect.DeepEqual(ma, mb)
}

// messages decodes the JSON-RPC messages of a body (SSE data lines or one
// JSON document); nil if one is not JSON.
func messages(body string) []any {
	var payloads []string
	if strings.HasPrefix(body, "event:") || strings.HasPrefix(body, "data:") {
		for _, line := range strings.Split(body, "\n") {
			if data, ok := strings.CutPrefix(line, "data: "); ok {
				payloads = append(payloads, data)
			}
		}
	} else {
		payloads = []string{body}
	}
	var out []any
	for _, p := range payloads {
		var v any
		dec := json.NewDecoder(strings.NewReader(p))
		dec.UseNumber()
		if dec.Decode(&v) != nil {
			return nil
		}
		out = append(out, v)
	}
	return out
}

// The fast path writes the downstream's bytes, where mcp-go's path writes
// its own encoding of them.
func TestProxyFastRawBytes(t *testing.T) {
	agenttest.NeedFast(t)
	p := newFastPair(t)
	for _, ta := range []*agenttest.Agents{p.fast, p.slow} {
		f := p.down[ta]
		f.Edit(func() {
			for name := range rawSent {
				f.ToolLists["files"] = append(f.ToolLists["files"], mcpgo.NewTool(name))
			}
			prev := f.Relayed
			f.Relayed = func(ctx context.Context, server, tool string, args map[string]any, onProgress mcpclient.ProgressFunc, rel *mcpclient.Relay) (*mcpgo.CallToolResult, error) {
				sent, ok := rawSent[tool]
				if !ok {
					return prev(ctx, server, tool, args, onProgress, rel)
				}
				_, _ = prev(ctx, server, "text", args, onProgress, rel) // records the path taken
				raw := json.RawMessage(sent)
				res, err := mcpgo.ParseCallToolResult(&raw) // what mcp-go's client makes of it
				if err != nil {
					return nil, fmt.Errorf("downstream %q: %w", server, err)
				}
				return res, nil
			}
		})
	}
	p.listTools(t)
	id, _ := json.Marshal(mcpgo.Implementation{Name: "px", Version: p.fast.Config.Version, Title: "Files", Description: "files, proxied"})
	info := `{"_meta":{"io.modelcontextprotocol/serverInfo":` + string(id) + `}`
	for _, c := range []struct {
		tool, style, want string
	}{
		{"verbatim", "legacy", rawSent["verbatim"]},
		{"normalized", "legacy", rawSent["normalized"]},
		{"verbatim", "modern", info + `,"resultType":"complete",` + rawSent["verbatim"][1:]},
		{"pretty", "legacy", rawSent["pretty"]}, // a JSON answer: as sent (an SSE data line would be compacted)
		{"empty", "modern", info + `,"resultType":"complete"}`},
		{"typed_done", "modern", info + `,` + rawSent["typed_done"][1:]},
		{"null_meta", "modern", `{"_meta":{"io.modelcontextprotocol/serverInfo":` + string(id) + `},"content":[],"resultType":"complete"}`},
		{"own_meta", "modern", `{"_meta":{"io.modelcontextprotocol/serverInfo":` + string(id) + `,"trace":"t1"},"content":[],"resultType":"complete"}`},
	} {
		t.Run(c.tool+"/"+c.style, func(t *testing.T) {
			hdr, meta := legacySSE, ""
			if c.style == "modern" {
				hdr, meta = with(modern, "Mcp-Name", c.tool), modernMeta
			}
			got := send(t, p.fast, callBody("7", c.tool, meta), hdr)
			want := fmt.Sprintf(`{"jsonrpc":"2.0","id":7,"result":%s}`, c.want)
			if !strings.Contains(got.Body, "data: "+want+"\n") && got.Body != want+"\n" {
				t.Errorf("fast path wrote\n%s\nwant the result\n%s", got.Body, want)
			}
			if c.tool == "normalized" {
				// mcp-go's path: "zeta" dropped, members sorted, HTML
				// escaped (structuredContent it keeps raw).
				slow := send(t, p.slow, callBody("7", c.tool, meta), hdr)
				const norm = `"result":{"content":[{"type":"text","text":"\u003cb\u003e\u0026\u003c/b\u003e"}],"structuredContent":{"n":12345678901234567890}}`
				if !strings.Contains(slow.Body, norm) {
					t.Errorf("mcp-go's path no longer normalizes this way (update test/bench/README.md's P9 note): %s", slow.Body)
				}
			}
			if c.tool == "verbatim" && c.style == "legacy" {
				// mcp-go's client refuses a content type it does not know:
				// through its types this result is an error.
				slow := send(t, p.slow, callBody("7", c.tool, meta), hdr)
				if !strings.Contains(slow.Body, "unknown content type: future") {
					t.Errorf("mcp-go's path no longer normalizes (update test/bench/README.md's P9 note): %s", slow.Body)
				}
			}
		})
	}
}
