package llm

import "slices"

// The direct request encoders (openai_body.go, anthropic_body.go) write a
// body as the SDKs' param.MarshalWithExtras merges one: the SDK's own
// members in its struct order, each replaced in place by an extra field of
// the same name, then the other extra fields, by key. objectWriter is that
// merge; each encoder supplies its members (sdkObject).

// sdkObject is one request body's members as an SDK's param types define
// them, with the extra fields merged into it.
type sdkObject interface {
	// hasField reports whether the SDK types encode the member k.
	hasField(k string) bool
	// field writes the value of the member k as the SDK types encode it.
	field(k string)
	// extra returns the extra field k, if the request has one.
	extra(k string) (any, bool)
	// value writes an extra field's value as the SDK's merge encodes it.
	value(v any)
}

// objectWriter writes one JSON object member by member.
type objectWriter struct {
	b       []byte
	members int
	bad     bool // a value the SDK path must encode (or refuse)
}

// object writes o's members: fields are the SDK's own in struct order,
// added the extra fields the encoder may add itself (when o.extra has
// them), and params the extra fields of the request's config.
func (w *objectWriter) object(o sdkObject, fields, added []string, params map[string]any) {
	w.b = append(w.b, '{')
	for _, k := range fields {
		if !o.hasField(k) {
			continue
		}
		w.key(k)
		if v, ok := o.extra(k); ok {
			o.value(v)
		} else {
			o.field(k)
		}
	}
	var buf [16]string
	for _, k := range extraKeys(o, buf[:0], added, params) {
		if !o.hasField(k) {
			v, _ := o.extra(k)
			w.key(k)
			o.value(v)
		}
	}
}

// key starts the member k.
func (w *objectWriter) key(k string) {
	if w.members > 0 {
		w.b = append(w.b, ',')
	}
	w.members++
	w.b = appendJSONString(w.b, k)
	w.b = append(w.b, ':')
}

// extraKeys appends to keys, sorted and once each, the names of the extra
// fields: those of added that o has, and those of params.
func extraKeys(o sdkObject, keys, added []string, params map[string]any) []string {
	for _, k := range added {
		if _, ok := o.extra(k); ok {
			keys = append(keys, k)
		}
	}
	for k := range params {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return slices.Compact(keys)
}

// end appends the definitions of tools, if any, and closes the object.
func (w *objectWriter) end(cache *toolJSON, tools []Tool) ([]byte, error) {
	if len(tools) > 0 {
		w.b = append(w.b, `,"tools":`...)
		var err error
		if w.b, err = cache.appendArray(w.b, tools); err != nil {
			return nil, err
		}
	}
	return append(w.b, '}'), nil
}
