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

// get returns t's encoded definition. The key is built in a stack buffer
// and looked up as string(key), which does not copy it: a hit allocates
// nothing, where building the key as a string cost more than writing the
// rest of an OpenAI request body.
func (c *toolJSON) get(t Tool) ([]byte, error) {
	var buf [1024]byte
	key := append(buf[:0], t.Name...)
	key = append(append(key, 0), t.Description...)
	key = append(append(key, 0), t.InputSchema...)
	c.mu.Lock()
	b, ok := c.m[string(key)]
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
	c.m[string(key)] = b
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
	out := make([]byte, 0, len(body)+len(tools)*512)
	out = append(out, obj...)
	if obj[len(obj)-1] != '{' {
		out = append(out, ',')
	}
	out = append(out, `"tools":`...)
	out, err := c.appendArray(out, tools)
	if err != nil {
		return nil, err
	}
	return append(out, '}'), nil
}

// appendArray appends tools' cached definitions to b as a JSON array.
func (c *toolJSON) appendArray(b []byte, tools []Tool) ([]byte, error) {
	b = append(b, '[')
	for i, t := range tools {
		def, err := c.get(t)
		if err != nil {
			return nil, err
		}
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, def...)
	}
	return append(b, ']'), nil
}
