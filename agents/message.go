package agents

import (
	"bytes"
	"encoding/json"
	"errors"
)

// Message is a POST body's JSON-RPC message, parsed once by the gateway to
// check it (gateway/jsonrpc.go) and handed to the endpoint in the Body, so
// that a proxy's fast tools/call (proxy_fast.go) reads its members without
// parsing the body again. Every member is kept raw: a member of the wrong
// type is the checker's to name, not a parse error.
type Message struct {
	JSONRPC json.RawMessage `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  json.RawMessage `json:"method"`
	Result  json.RawMessage `json:"result"`
	Error   json.RawMessage `json:"error"`
	Params  MessageParams   `json:"params"`

	// paramsRead reports params absent or an object, read into Params.
	paramsRead bool
}

// MessageParams are the members of params the gateway acts on: those
// mcp-go reads from a tools/call.
type MessageParams struct {
	Name           json.RawMessage `json:"name"`
	Arguments      json.RawMessage `json:"arguments"`
	Meta           json.RawMessage `json:"_meta"`
	Task           json.RawMessage `json:"task"`
	InputResponses json.RawMessage `json:"inputResponses"`
	RequestState   json.RawMessage `json:"requestState"`
}

// ParseMessage parses body as one JSON-RPC message: a *json.SyntaxError
// when it is not JSON, another error when it is not an object. A params
// that is not an object is not an error here (mcp-go answers it), but the
// message then serves no fast path.
func ParseMessage(body []byte) (*Message, error) {
	m := new(Message)
	err := json.Unmarshal(body, m)
	var typeErr *json.UnmarshalTypeError
	switch {
	case err == nil && objectBody(body):
		m.paramsRead = true
	case err == nil: // null
		return nil, errNotObject
	case errors.As(err, &typeErr) && typeErr.Field == "params" && objectBody(body):
		m.Params = MessageParams{}
	default:
		return nil, err
	}
	return m, nil
}

var errNotObject = errors.New("not a JSON object")

// objectBody reports a body whose first token opens an object.
func objectBody(body []byte) bool {
	trimmed := bytes.TrimLeft(body, " \t\r\n")
	return len(trimmed) > 0 && trimmed[0] == '{'
}

// isMethod reports a method member that is exactly the JSON string of
// name. A method written with escapes reads as another one, which only
// costs the fast path.
func (m *Message) isMethod(name string) bool {
	return len(m.Method) == len(name)+2 && m.Method[0] == '"' && string(m.Method[1:len(m.Method)-1]) == name
}

// name is params.name as a string, and whether it is one.
func (p *MessageParams) name() (string, bool) {
	raw := p.Name
	if len(raw) >= 2 && raw[0] == '"' && bytes.IndexByte(raw, '\\') < 0 {
		return string(raw[1 : len(raw)-1]), true
	}
	var s string
	return s, json.Unmarshal(raw, &s) == nil && len(raw) > 0 && raw[0] == '"'
}
