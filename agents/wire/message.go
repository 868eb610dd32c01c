package wire

import (
	"bytes"
	"encoding/json"
	"errors"

	"github.com/mark3labs/mcp-go/mcp"
)

// Message is a POST body's JSON-RPC message, decoded once by the gateway to
// check it (gateway/jsonrpc.go) and handed to the endpoint in the Body: the
// endpoint dispatches on its method (agents/endpoint) and the fast path reads
// its params (fastcall.go) without decoding the body again. Members are
// kept raw: a member of the wrong type is the checker's to name, not a
// decoding error. Decoding is encoding/json's, or jsontext's where it reads
// the same (jsonfast.go), which matches member names as mcp-go's decoding
// does (case-insensitively, the last of a name winning), so both read the
// same message.
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
//
// With the switch on (Fast), the message is read with jsontext where it can
// be (parseFast); off, with encoding/json alone, as before.
func Parse(body []byte) (*Message, error) {
	if Fast() {
		if m := parseFast(body); m != nil {
			return m, nil
		}
	}
	return parseSlow(body)
}

// parseFast is Parse with jsontext (jsonfast.go) on a copy of body, or nil
// when the message is not of the shapes it reads.
func parseFast(body []byte) *Message {
	m := new(Message)
	if !members(bytes.Clone(body), func(name, v []byte) bool {
		var field *json.RawMessage
		switch {
		case foldIs(name, "JSONRPC"):
			field = &m.JSONRPC
		case foldIs(name, "ID"):
			field = &m.ID
		case foldIs(name, "METHOD"):
			field = &m.Method
		case foldIs(name, "RESULT"):
			field = &m.Result
		case foldIs(name, "ERROR"):
			field = &m.Error
		case foldIs(name, "PARAMS"):
			field = &m.RawParams
		default:
			return true
		}
		return set(field, v)
	}) {
		return nil
	}
	if len(m.Method) > 0 && m.Method[0] == '"' {
		m.method, _ = rawString(m.Method)
	}
	switch {
	case IsNull(m.RawParams):
		m.paramsRead = true
	case m.RawParams[0] == '{':
		read, ok := m.Params.readFast(m.RawParams)
		if !ok {
			return nil
		}
		m.paramsRead = read
		if !read {
			m.Params = MessageParams{}
		}
	}
	return m
}

// readFast reads params, an object, as encoding/json would into p: read
// false for a member of the wrong type, ok false when it is not of the
// shapes parseFast reads.
func (p *MessageParams) readFast(params []byte) (read, ok bool) {
	read, caps := true, 0
	ok = members(params, func(name, v []byte) bool {
		var field *json.RawMessage
		switch {
		case foldIs(name, "NAME"):
			field = &p.Name
		case foldIs(name, "ARGUMENTS"):
			field = &p.Arguments
		case foldIs(name, "_META"):
			field = &p.Meta
		case foldIs(name, "TASK"):
			field = &p.Task
		case foldIs(name, "INPUTRESPONSES"):
			field = &p.InputResponses
		case foldIs(name, "REQUESTSTATE"):
			field = &p.RequestState
		case foldIs(name, "LEVEL"):
			field = &p.Level
		case foldIs(name, "REQUESTID"):
			field = &p.RequestID
		case foldIs(name, "CAPABILITIES"):
			if caps++; caps > 1 {
				return false
			}
			switch {
			case string(v) == "null":
			case v[0] != '{':
				read = false // encoding/json's type error
			case !p.readCapabilities(v):
				return false
			}
			return true
		default:
			return true
		}
		return set(field, v)
	})
	return read && ok, ok
}

// readCapabilities reads params.capabilities, an object; false when it is
// not of the shapes parseFast reads.
func (p *MessageParams) readCapabilities(caps []byte) bool {
	c := &p.Capabilities
	return members(caps, func(name, v []byte) bool {
		var field *json.RawMessage
		switch {
		case foldIs(name, "ELICITATION"):
			field = &c.Elicitation
		case foldIs(name, "SAMPLING"):
			field = &c.Sampling
		case foldIs(name, "ROOTS"):
			field = &c.Roots
		default:
			return true
		}
		return set(field, v)
	})
}

// parseSlow is Parse with encoding/json, for every message.
func parseSlow(body []byte) (*Message, error) {
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

// EnvelopeError is what is wrong with a message's JSON-RPC envelope: the
// error code and message the gateway answers it with.
type EnvelopeError struct {
	Code    int
	Message string
}

func (e *EnvelopeError) Error() string { return e.Message }

// Check is the one check of a message's envelope, the gateway's body check
// (answered before mcp-go sees the message) and the test of every request
// the endpoint answers itself (IsRequest): jsonrpc "2.0"; an id that is a
// string or a number, or absent (a notification, or a response with a
// null id); a method that is a string, or a response's members; params an
// object when present; params.name a string for the methods whose name
// mcp-go decodes as one. mcp-go would fail a method or id of the wrong
// type with a parse error, accept a message with neither a method nor a
// result as an empty response (202, silently), and hand params that are
// not an object to its decoder, whose answer is a Go unmarshal error.
func (m *Message) Check() *EnvelopeError {
	switch {
	case string(m.ID) == "null" && !IsNull(m.Method):
		// mcp-go would take it for a notification and never answer.
		return &EnvelopeError{mcp.INVALID_REQUEST, "invalid request: id must not be null (omit it for a notification)"}
	case !IsNull(m.ID) && !m.HasID():
		return &EnvelopeError{mcp.INVALID_REQUEST, "invalid request: id must be a string or a number"}
	}
	switch {
	case string(m.JSONRPC) != `"2.0"`:
		return &EnvelopeError{mcp.INVALID_REQUEST, `invalid request: jsonrpc must be "2.0"`}
	case !IsNull(m.Method) && m.Method[0] != '"':
		return &EnvelopeError{mcp.INVALID_REQUEST, "invalid request: method must be a string"}
	case IsNull(m.Method) && len(m.Result) == 0 && len(m.Error) == 0:
		return &EnvelopeError{mcp.INVALID_REQUEST, "invalid request: the message has no method (and is not a response)"}
	case !IsNull(m.RawParams) && m.RawParams[0] != '{':
		return &EnvelopeError{mcp.INVALID_PARAMS, "invalid params: params must be an object"}
	case namedMethod[m.method] && !IsNull(m.Params.Name) && m.Params.Name[0] != '"':
		return &EnvelopeError{mcp.INVALID_PARAMS, "invalid params: name must be a string"}
	}
	return nil
}

// HasID reports an id that is a string or a number.
func (m *Message) HasID() bool {
	return !IsNull(m.ID) && (m.ID[0] == '"' || m.ID[0] == '-' || (m.ID[0] >= '0' && m.ID[0] <= '9'))
}

// namedMethod are the methods whose params.name is a string, which mcp-go
// would refuse with its decoder's message ("cannot unmarshal number into
// Go struct field CallToolRequest.params.name of type string").
var namedMethod = map[string]bool{string(mcp.MethodToolsCall): true, string(mcp.MethodPromptsGet): true}

// IsRequest reports a request mcp-go dispatches as one: an envelope Check
// accepts, with an id, without the members of a response, its params read
// (absent, null or an object).
func (m *Message) IsRequest() bool {
	return m.HasID() && len(m.Result) == 0 && len(m.Error) == 0 && m.paramsRead && m.Check() == nil
}

// IsNotification reports a notification: an envelope Check accepts,
// without an id.
func (m *Message) IsNotification() bool {
	return IsNull(m.ID) && !IsNull(m.Method) && m.Check() == nil
}

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
		p.name, p.nameOK = rawString(p.Name)
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
		switch {
		case IsNull(m.Params.Meta):
			m.metaOK = true
		case m.Params.Meta[0] == '{' && Fast():
			m.meta, m.metaOK = metaFast(m.Params.Meta)
			if !m.metaOK {
				m.meta = nil
				m.metaOK = json.Unmarshal(m.Params.Meta, &m.meta) == nil
			}
		default:
			m.metaOK = json.Unmarshal(m.Params.Meta, &m.meta) == nil
		}
	}
	return m.meta, m.metaOK
}

// MetaString is the _meta member key when it is a string, else "".
func (m *Message) MetaString(key string) string {
	if !m.metaRead && !bytes.Contains(m.Params.Meta, keyBytes(key)) && bytes.IndexByte(m.Params.Meta, '\\') < 0 {
		return "" // the key is not there, even escaped: no need to decode _meta
	}
	meta, _ := m.Meta()
	raw := meta[key]
	if len(raw) > 2 && raw[0] == '"' {
		for _, v := range mcp.ValidProtocolVersions { // asked for on every call: no copy
			if string(raw[1:len(raw)-1]) == v {
				return v
			}
		}
	}
	s, _ := rawString(raw)
	return s
}

// metaFast reads _meta, an object, into a map as encoding/json does (exact
// names, values kept raw), and false when it is not of the shapes jsonfast.go
// reads: a name with an escape or not in ASCII, or given twice.
func metaFast(b []byte) (map[string]json.RawMessage, bool) {
	meta := make(map[string]json.RawMessage, 4)
	if !members(b, func(name, v []byte) bool {
		key := metaKey(name)
		if _, twice := meta[key]; twice {
			return false
		}
		meta[key] = v
		return true
	}) {
		return nil, false
	}
	return meta, true
}

// metaKey is name as a string, the protocol's own _meta names without an
// allocation (a 2026-07-28 call carries three of them).
func metaKey(name []byte) string {
	switch string(name) { // compared without a copy
	case mcp.MetaKeyProtocolVersion:
		return mcp.MetaKeyProtocolVersion
	case mcp.MetaKeyClientInfo:
		return mcp.MetaKeyClientInfo
	case mcp.MetaKeyClientCapabilities:
		return mcp.MetaKeyClientCapabilities
	case mcp.MetaKeyLogLevel:
		return mcp.MetaKeyLogLevel
	case "progressToken":
		return "progressToken"
	}
	return string(name)
}

// metaKeyBytes are the _meta names MetaString is asked for on every call,
// as bytes made once.
var metaKeyBytes = map[string][]byte{
	mcp.MetaKeyProtocolVersion: []byte(mcp.MetaKeyProtocolVersion),
	mcp.MetaKeyLogLevel:        []byte(mcp.MetaKeyLogLevel),
}

func keyBytes(key string) []byte {
	if b, ok := metaKeyBytes[key]; ok {
		return b
	}
	return []byte(key)
}
