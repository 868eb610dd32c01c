package llm

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
	// extraKeys appends the keys of the extra fields to keys, sorted.
	extraKeys(keys []string) []string
	// value writes an extra field's value as the SDK's merge encodes it.
	value(v any)
}

// objectWriter writes one JSON object member by member.
type objectWriter struct {
	b       []byte
	members int
	bad     bool // a value the SDK path must encode (or refuse)
}

// object writes o's members, fields being the SDK's own in struct order.
func (w *objectWriter) object(o sdkObject, fields []string) {
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
	for _, k := range o.extraKeys(buf[:0]) {
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
