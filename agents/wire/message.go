package wire

import (
	"bytes"
	"encoding/json"
	"errors"
)

// Message is a POST body's JSON-RPC message, decoded once by the gateway to
// check it (gateway/jsonrpc.go) and handed to the endpoint in the Body: the
// endpoint dispatches on its method (agents/endpoint) and the fast path reads
// its params (fastcall.go) without decoding the body again. Members are
// kept raw: a member of the wrong type is the checker's to name, not a
// decoding error. Decoding is encoding/json's, which matches member names
// as mcp-go's decoding does (case-insensitively, the last of a name
// winning), so both read the same message.
type Message struct {
	JSONRPC   json.RawMessage `json:"jsonrpc"`
	ID        json.RawMessage `json:"id"`
	Method    json.RawMessage `json:"method"`
	Result    json.RawMessage `json:"result"`
	Error     json.RawMessage `json:"error"`
	RawParams json.RawMessage `json:"params"`

	// Params are the members of params the gateway acts on, when params is
	// absent, null or an object (paramsRead); otherwise zero.
	Params     MessageParams `json:"-"`
	paramsRead bool
	method     string // Method when it is a JSON string, else ""

	meta             map[string]json.RawMessage // params._meta, decoded by Meta
	metaRead, metaOK bool
}

// MessageParams are the members of params the gateway acts on: those
// mcp-go reads from a tools/call, an initialize's capabilities, a
// logging/setLevel's level and a notifications/cancelled's request id.
type MessageParams struct {
	Name           json.RawMessage `json:"name"`
	Arguments      json.RawMessage `json:"arguments"`
	Meta           json.RawMessage `json:"_meta"`
	Task           json.RawMessage `json:"task"`
	InputResponses json.RawMessage `json:"inputResponses"`
	RequestState   json.RawMessage `json:"requestState"`
	Capabilities   struct {
		Elicitation json.RawMessage `json:"elicitation"`
		Sampling    json.RawMessage `json:"sampling"`
		Roots       json.RawMessage `json:"roots"`
	} `json:"capabilities"`
	Level     json.RawMessage `json:"level"`
	RequestID json.RawMessage `json:"requestId"`

	name             string // Name decoded (ToolName), once
	nameRead, nameOK bool
}

// Parse decodes body as one JSON-RPC message: a *json.SyntaxError
// when it is not JSON, ErrNotObject when it is not an object. A params that
// is not an object is not an error here (the gateway answers it before
// mcp-go would), but the message then serves no fast path.
func Parse(body []byte) (*Message, error) {
	if !json.Valid(body) {
		var v any
		return nil, json.Unmarshal(body, &v) // the *json.SyntaxError, with its offset
	}
	if t := bytes.TrimLeft(body, " \t\r\n"); len(t) == 0 || t[0] != '{' {
		return nil, ErrNotObject
	}
	m := new(Message)
	if err := json.Unmarshal(body, m); err != nil {
		return nil, err // not reached: every member is raw
	}
	if len(m.Method) > 0 && m.Method[0] == '"' {
		_ = json.Unmarshal(m.Method, &m.method)
	}
	switch {
	case IsNull(m.RawParams):
		m.paramsRead = true
	case m.RawParams[0] == '{':
		m.paramsRead = json.Unmarshal(m.RawParams, &m.Params) == nil
		if !m.paramsRead {
			m.Params = MessageParams{}
		}
	}
	return m, nil
}

var ErrNotObject = errors.New("not a JSON object")

// MethodName is the method, "" when absent or not a string.
func (m *Message) MethodName() string { return m.method }

// ParamsRead reports params absent, null or an object, read into Params.
func (m *Message) ParamsRead() bool { return m.paramsRead }

// ToolName is params.name as a string, and whether it is one; it is
// decoded on the first use (the endpoint, the gateway's tracing and the
// fast path each ask).
func (p *MessageParams) ToolName() (string, bool) {
	if !p.nameRead {
		p.nameRead = true
		p.nameOK = len(p.Name) > 0 && p.Name[0] == '"' && json.Unmarshal(p.Name, &p.name) == nil
	}
	return p.name, p.nameOK
}

// IsNull reports an absent or null member.
func IsNull(raw json.RawMessage) bool { return len(raw) == 0 || string(raw) == "null" }

// Meta returns params._meta's members, decoded on first use (exact names,
// as mcp-go's Meta accessors read them), and false when _meta is present
// but neither an object nor null (mcp-go refuses such a request).
func (m *Message) Meta() (map[string]json.RawMessage, bool) {
	if !m.metaRead {
		m.metaRead = true
		m.metaOK = IsNull(m.Params.Meta) || json.Unmarshal(m.Params.Meta, &m.meta) == nil
	}
	return m.meta, m.metaOK
}

// MetaString is the _meta member key when it is a string, else "".
func (m *Message) MetaString(key string) string {
	if !m.metaRead && !bytes.Contains(m.Params.Meta, []byte(key)) && bytes.IndexByte(m.Params.Meta, '\\') < 0 {
		return "" // the key is not there, even escaped: no need to decode _meta
	}
	meta, _ := m.Meta()
	var s string
	if raw := meta[key]; len(raw) > 0 && raw[0] == '"' {
		_ = json.Unmarshal(raw, &s)
	}
	return s
}
