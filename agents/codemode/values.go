package codemode

// Values crossing the script's edge: arguments to JSON, results from
// JSON, and the size of a value as its text would be (sizeOf).
//
// A result decodes as: structuredContent when the tool gives it; else
// its text content (parts joined by newlines), decoded when it is a JSON
// object or array and kept as a string otherwise. JSON numbers become int
// when whole, float otherwise; null becomes None. An object's keys are
// sorted (structured content reaches the gateway as a Go map, whose order
// is random).

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"math/big"
	"slices"
	"strconv"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	"go.starlark.net/starlark"
)

// maxDepth bounds how deep a value may nest where it is converted or
// measured (arguments, results, printing).
const maxDepth = 64

// elemCost is what one element of a list, tuple, dict or set counts for in
// max_value_bytes.
const elemCost = 16

var errDepth = fmt.Errorf("the value nests deeper than %d levels", maxDepth)

// sizeOf is the size of v's text (what str(v) would build), counted up to
// limit: past it, sizeOf stops and returns a number above limit.
func sizeOf(v starlark.Value, limit int) (int, error) {
	n := 0
	var walk func(v starlark.Value, depth int) error
	walk = func(v starlark.Value, depth int) error {
		if depth > maxDepth {
			return errDepth
		}
		if n > limit {
			return nil
		}
		switch x := v.(type) {
		case starlark.String:
			n += len(x) + 2
		case starlark.Bytes:
			n += len(x) + 3
		case starlark.Int:
			n += intBytes(x)
		case *starlark.List:
			n += 2
			for i := 0; i < x.Len() && n <= limit; i++ {
				n += 2
				if err := walk(x.Index(i), depth+1); err != nil {
					return err
				}
			}
		case starlark.Tuple:
			n += 2
			for _, e := range x {
				n += 2
				if err := walk(e, depth+1); err != nil || n > limit {
					return err
				}
			}
		case *starlark.Dict:
			n += 2
			for _, kv := range x.Items() {
				n += 4
				if err := walk(kv[0], depth+1); err != nil {
					return err
				}
				if err := walk(kv[1], depth+1); err != nil || n > limit {
					return err
				}
			}
		case *starlark.Set:
			n += 5
			iter := x.Iterate()
			defer iter.Done()
			var e starlark.Value
			for iter.Next(&e) && n <= limit {
				n += 2
				if err := walk(e, depth+1); err != nil {
					return err
				}
			}
		case *toolError:
			n += len(x.msg) + 16
		default:
			n += 16 // None, bools, floats, functions: short texts
		}
		return nil
	}
	err := walk(v, 0)
	return n, err
}

// intBytes is the size of i's decimal text, about.
func intBytes(i starlark.Int) int {
	if _, ok := i.Int64(); ok {
		return 8
	}
	return i.BigInt().BitLen()/3 + 2
}

// encodeJSON writes v as JSON to b. Dict keys must be strings; floats
// must be finite.
func encodeJSON(b *bytes.Buffer, v starlark.Value, depth int) error {
	if depth > maxDepth {
		return errDepth
	}
	switch x := v.(type) {
	case starlark.NoneType:
		b.WriteString("null")
	case starlark.Bool:
		b.WriteString(strconv.FormatBool(bool(x)))
	case starlark.Int:
		b.WriteString(x.String())
	case starlark.Float:
		f := float64(x)
		if math.IsInf(f, 0) || math.IsNaN(f) {
			return fmt.Errorf("cannot encode %v as JSON", x)
		}
		b.WriteString(strconv.FormatFloat(f, 'g', -1, 64))
	case starlark.String:
		s, _ := json.Marshal(string(x))
		b.Write(s)
	case starlark.Bytes:
		s, _ := json.Marshal(string(x))
		b.Write(s)
	case starlark.Indexable: // list, tuple
		b.WriteByte('[')
		for i := 0; i < x.Len(); i++ {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := encodeJSON(b, x.Index(i), depth+1); err != nil {
				return err
			}
		}
		b.WriteByte(']')
	case *starlark.Dict:
		b.WriteByte('{')
		for i, kv := range x.Items() {
			k, ok := kv[0].(starlark.String)
			if !ok {
				return fmt.Errorf("cannot encode a dict with a %s key as JSON (keys must be strings)", kv[0].Type())
			}
			if i > 0 {
				b.WriteByte(',')
			}
			s, _ := json.Marshal(string(k))
			b.Write(s)
			b.WriteByte(':')
			if err := encodeJSON(b, kv[1], depth+1); err != nil {
				return err
			}
		}
		b.WriteByte('}')
	case *starlark.Set:
		b.WriteByte('[')
		iter := x.Iterate()
		defer iter.Done()
		var e starlark.Value
		for i := 0; iter.Next(&e); i++ {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := encodeJSON(b, e, depth+1); err != nil {
				return err
			}
		}
		b.WriteByte(']')
	case *toolError:
		s, _ := json.Marshal(map[string]any{"error": x.msg})
		b.Write(s)
	default:
		return fmt.Errorf("cannot encode a %s as JSON", v.Type())
	}
	return nil
}

// fromGo converts a decoded JSON value to Starlark, adding its size to
// *n.
func fromGo(v any, depth int, n *int) (starlark.Value, error) {
	if depth > maxDepth {
		return nil, errDepth
	}
	*n += elemCost
	switch x := v.(type) {
	case nil:
		return starlark.None, nil
	case bool:
		return starlark.Bool(x), nil
	case string:
		*n += len(x)
		return starlark.String(x), nil
	case float64:
		if x == math.Trunc(x) && math.Abs(x) < 1<<53 {
			return starlark.MakeInt64(int64(x)), nil
		}
		return starlark.Float(x), nil
	case json.Number:
		if i, err := strconv.ParseInt(string(x), 10, 64); err == nil {
			return starlark.MakeInt64(i), nil
		}
		if bi, ok := new(big.Int).SetString(string(x), 10); ok {
			return starlark.MakeBigInt(bi), nil
		}
		f, _ := x.Float64()
		return starlark.Float(f), nil
	case []any:
		elems := make([]starlark.Value, len(x))
		for i, e := range x {
			var err error
			if elems[i], err = fromGo(e, depth+1, n); err != nil {
				return nil, err
			}
		}
		return starlark.NewList(elems), nil
	case map[string]any:
		d := starlark.NewDict(len(x))
		for _, k := range slices.Sorted(maps.Keys(x)) { // one order, run after run
			e := x[k]
			sv, err := fromGo(e, depth+1, n)
			if err != nil {
				return nil, err
			}
			*n += len(k)
			_ = d.SetKey(starlark.String(k), sv)
		}
		return d, nil
	}
	// Another Go type (mcp-go's structured content may be any): through JSON.
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("cannot decode a %T", v)
	}
	var a any
	if err := decodeJSON(b, &a); err != nil {
		return nil, err
	}
	return fromGo(a, depth, n)
}

func decodeJSON(b []byte, v *any) error {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	return d.Decode(v)
}

// resultValue is a tool result as the script gets it, and its size.
func resultValue(r *mcp.CallToolResult) (starlark.Value, int, error) {
	n := 0
	text := resultText(r)
	if r.IsError {
		return &toolError{msg: text}, len(text), nil
	}
	if r.StructuredContent != nil {
		v, err := fromGo(r.StructuredContent, 0, &n)
		return v, n, err
	}
	t := strings.TrimSpace(text)
	if len(t) > 0 && (t[0] == '{' || t[0] == '[') {
		var a any
		if decodeJSON([]byte(t), &a) == nil {
			v, err := fromGo(a, 0, &n)
			return v, n, err
		}
	}
	return starlark.String(text), len(text), nil
}

// resultText is the text of a result's content: text parts joined by
// newlines, other parts as short notes.
func resultText(r *mcp.CallToolResult) string {
	var parts []string
	for _, c := range r.Content {
		switch v := c.(type) {
		case mcp.TextContent:
			parts = append(parts, v.Text)
		case mcp.ImageContent:
			parts = append(parts, "[image "+v.MIMEType+"]")
		case mcp.AudioContent:
			parts = append(parts, "[audio "+v.MIMEType+"]")
		default:
			b, _ := json.Marshal(v)
			parts = append(parts, string(b))
		}
	}
	if len(parts) == 0 && r.StructuredContent != nil {
		b, _ := json.Marshal(r.StructuredContent)
		return string(b)
	}
	return strings.Join(parts, "\n")
}

// toolError is a tool's error result as a script sees it: falsy, its
// message in .error.
type toolError struct{ msg string }

var _ starlark.HasAttrs = (*toolError)(nil)

func (e *toolError) String() string        { return "tool_error(" + strconv.Quote(e.msg) + ")" }
func (e *toolError) Type() string          { return "tool_error" }
func (e *toolError) Freeze()               {}
func (e *toolError) Truth() starlark.Bool  { return false }
func (e *toolError) Hash() (uint32, error) { return starlark.String(e.msg).Hash() }
func (e *toolError) AttrNames() []string   { return []string{"error", "ok"} }
func (e *toolError) Attr(name string) (starlark.Value, error) {
	switch name {
	case "error":
		return starlark.String(e.msg), nil
	case "ok":
		return starlark.False, nil
	}
	return nil, nil
}
