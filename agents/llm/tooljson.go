package llm

import (
	"bytes"
	"fmt"
	"sync"
)

// toolJSON caches the encoded form of tool definitions for one provider,
// keyed by name, description and schema. The SDKs' nested marshalling
// re-reads every schema at every level on every call, which made tool
// definitions most of an agent's CPU per call once it offered more than a
// few tools; each definition is now encoded once (by the SDK types, so the
// wire form is unchanged) and the request's tools array is appended to the
// encoded body. Tools change only with configs and downstream servers; past
// maxEntries the cache starts over.
type toolJSON struct {
	encode     func(Tool) ([]byte, error)
	maxEntries int

	mu sync.Mutex
	m  map[string][]byte
}

func newToolJSON(encode func(Tool) ([]byte, error)) *toolJSON {
	return &toolJSON{encode: encode, maxEntries: 4096, m: map[string][]byte{}}
}

func (c *toolJSON) get(t Tool) ([]byte, error) {
	key := t.Name + "\x00" + t.Description + "\x00" + string(t.InputSchema)
	c.mu.Lock()
	b, ok := c.m[key]
	c.mu.Unlock()
	if ok {
		return b, nil
	}
	b, err := c.encode(t)
	if err != nil {
		return nil, fmt.Errorf("tool %q: %w", t.Name, err)
	}
	c.mu.Lock()
	if len(c.m) >= c.maxEntries {
		clear(c.m)
	}
	c.m[key] = b
	c.mu.Unlock()
	return b, nil
}

// appendTools returns body, an encoded JSON object, with a "tools" member
// holding tools' cached definitions.
func (c *toolJSON) appendTools(body []byte, tools []Tool) ([]byte, error) {
	end := bytes.LastIndexByte(body, '}')
	if end < 0 {
		return nil, fmt.Errorf("encoding request: not a JSON object")
	}
	obj := bytes.TrimRight(body[:end], " \t\r\n")
	out := bytes.NewBuffer(make([]byte, 0, len(body)+len(tools)*512))
	out.Write(obj)
	if obj[len(obj)-1] != '{' {
		out.WriteByte(',')
	}
	out.WriteString(`"tools":[`)
	for i, t := range tools {
		b, err := c.get(t)
		if err != nil {
			return nil, err
		}
		if i > 0 {
			out.WriteByte(',')
		}
		out.Write(b)
	}
	out.WriteString("]}")
	return out.Bytes(), nil
}
