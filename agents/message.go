package agents

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"

	"github.com/pallasgw/pallasgw/agents/internal/jsonmember"
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

	// paramsRead reports params absent or one object, read into Params.
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
// message then serves no fast path. The members are slices of body, which
// must not change afterwards.
//
// A valid object is read with jsonmember.Each, matching member names as
// encoding/json does (case-insensitively, the last of a name winning): for
// the message of every call that was about a fifth of the gateway's JSON
// work (README, P18). Anything else, and a body with more than one params,
// is decoded by encoding/json (decodeMessage), which also writes the errors.
func ParseMessage(body []byte) (*Message, error) {
	if jsonmember.IsObject(body) && json.Valid(body) {
		if m, ok := readMessage(body); ok {
			return m, nil
		}
	}
	return decodeMessage(body)
}

// readMessage reads a valid JSON object; false when it has more than one
// member named params (decodeMessage's case).
func readMessage(body []byte) (*Message, bool) {
	m := new(Message)
	var params []byte
	n := 0
	jsonmember.Each(body, func(name string, v []byte) {
		switch {
		case strings.EqualFold(name, "jsonrpc"):
			m.JSONRPC = v
		case strings.EqualFold(name, "id"):
			m.ID = v
		case strings.EqualFold(name, "method"):
			m.Method = v
		case strings.EqualFold(name, "result"):
			m.Result = v
		case strings.EqualFold(name, "error"):
			m.Error = v
		case strings.EqualFold(name, "params"):
			params, n = v, n+1
		}
	})
	switch {
	case n > 1:
		return nil, false
	case n == 0 || string(params) == "null":
		m.paramsRead = true
	case params[0] == '{':
		p := &m.Params
		jsonmember.Each(params, func(name string, v []byte) {
			switch {
			case strings.EqualFold(name, "name"):
				p.Name = v
			case strings.EqualFold(name, "arguments"):
				p.Arguments = v
			case strings.EqualFold(name, "_meta"):
				p.Meta = v
			case strings.EqualFold(name, "task"):
				p.Task = v
			case strings.EqualFold(name, "inputResponses"):
				p.InputResponses = v
			case strings.EqualFold(name, "requestState"):
				p.RequestState = v
			}
		})
		m.paramsRead = true
	}
	return m, true
}

// decodeMessage is ParseMessage through encoding/json.
func decodeMessage(body []byte) (*Message, error) {
	m := new(Message)
	err := json.Unmarshal(body, m)
	var typeErr *json.UnmarshalTypeError
	switch {
	case err == nil && jsonmember.IsObject(body):
		m.paramsRead = !paramsRepeated(body)
	case err == nil: // null
		return nil, errNotObject
	case errors.As(err, &typeErr) && typeErr.Field == "params" && jsonmember.IsObject(body):
		m.Params = MessageParams{}
	default:
		return nil, err
	}
	return m, nil
}

var errNotObject = errors.New("not a JSON object")

// paramsRepeated reports a body with more than one member named params, in
// any case (encoding/json matches names so): mcp-go reads the last one
// whole, where decoding into MessageParams merges them.
func paramsRepeated(body []byte) bool {
	n := 0
	jsonmember.Each(body, func(name string, _ []byte) {
		if strings.EqualFold(name, "params") {
			n++
		}
	})
	return n > 1
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
