package proxy

// Mcp-Param-* headers of a 2026-07-28 tools/call (SEP-2243): a tool whose
// input schema marks a parameter x-mcp-header has it mirrored in an
// Mcp-Param-<name> header (plain, or the =?base64?…?= form), which must
// agree with the body. mcp-go (v1.2.1) checks that against the tool it has
// registered; a proxy registers placeholders (proxy.go), so the proxy checks
// against the downstream's own definition, kept from the last listing. An
// Mcp-Param-* header that no parameter of the tool declares is not checked,
// and is left alone. Mcp-Method and Mcp-Name are mcp-go's to check (and the
// fast path's and the bridge's, which leave a mismatch to mcp-go).

import (
	"bytes"
	"encoding/json"
	"net/http"

	"github.com/mark3labs/mcp-go/mcp"
)

// headerBound returns t when its input schema declares an x-mcp-header
// binding, else nil.
func headerBound(t mcp.Tool) *mcp.Tool {
	if !bytes.Contains(t.RawInputSchema, []byte("x-mcp-header")) {
		if t.RawInputSchema != nil {
			return nil
		}
		if b, _ := json.Marshal(t.InputSchema); !bytes.Contains(b, []byte("x-mcp-header")) {
			return nil
		}
	}
	if len(mcp.ExtractParamHeaderBindings(&t)) == 0 {
		return nil
	}
	return &t
}

// CheckParamHeaders checks the Mcp-Param-* headers h of a 2026-07-28
// tools/call of the exposed tool name (params: the request's params)
// against the downstream tool's x-mcp-header bindings; the error is an
// mcp.HeaderMismatchError (-32020).
func (p *Proxy) CheckParamHeaders(name string, h http.Header, params json.RawMessage) error {
	v, ok := p.tools.Load(name)
	if !ok || v.(route).bound == nil {
		return nil
	}
	return mcp.ValidateParamHeadersLookup(func(k string) (string, bool) {
		values := h.Values(k)
		if len(values) == 0 {
			return "", false
		}
		return values[0], true
	}, v.(route).bound, params)
}
