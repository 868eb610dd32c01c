package llm

import "encoding/json"

// Hand-written decoders for the stream chunks, which come once per token
// of an answer. decodeFast fills the zero value exactly as json.Unmarshal
// would, or reports false when jsonReader is not sure it can (see there);
// the partly filled value is then discarded and json.Unmarshal decodes the
// chunk, which also gives the error. The member names are the json tags of
// the types: a change to a type must be made here too (the tests and the
// fuzz targets FuzzOpenAIChunk and FuzzAnthropicEvent compare with
// encoding/json).

// decodeOAChunk decodes one Chat Completions chunk as json.Unmarshal does.
func decodeOAChunk(data []byte) (c oaChunk, err error) {
	if !c.decodeFast(data) {
		c = oaChunk{}
		err = json.Unmarshal(data, &c)
	}
	return c, err
}

// decodeANEvent decodes one Messages stream event as json.Unmarshal does.
func decodeANEvent(data []byte) (ev anEvent, err error) {
	if !ev.decodeFast(data) {
		ev = anEvent{}
		err = json.Unmarshal(data, &ev)
	}
	return ev, err
}

// decodeFast decodes an OpenAI Chat Completions chunk into the zero c.
func (c *oaChunk) decodeFast(data []byte) bool {
	r := &jsonReader{data: data}
	var seen fieldSet
	r.object(func(name []byte) {
		switch r.field(name, &seen, "choices", "usage", "error") {
		case 0:
			readSlice(r, &c.Choices, readOAChoice)
		case 1:
			readPtr(r, &c.Usage, readOAUsage)
		case 2:
			r.raw(&c.Error)
		default:
			r.skip()
		}
	})
	return r.done()
}

func readOAChoice(r *jsonReader, ch *oaChoice) {
	var seen fieldSet
	r.object(func(name []byte) {
		switch r.field(name, &seen, "index", "delta", "message", "finish_reason") {
		case 0:
			r.readInt(&ch.Index)
		case 1:
			readOADelta(r, &ch.Delta)
		case 2:
			readPtr(r, &ch.Message, readOADelta)
		case 3:
			readPtr(r, &ch.FinishReason, (*jsonReader).readString)
		default:
			r.skip()
		}
	})
}

func readOADelta(r *jsonReader, d *oaDelta) {
	var seen fieldSet
	r.object(func(name []byte) {
		switch r.field(name, &seen, "content", "tool_calls", "function_call") {
		case 0:
			readPtr(r, &d.Content, (*jsonReader).readString)
		case 1:
			readSlice(r, &d.ToolCalls, readOAToolDelta)
		case 2:
			readPtr(r, &d.Function, readOAFuncDelta)
		default:
			r.skip()
		}
	})
}

func readOAToolDelta(r *jsonReader, t *oaToolDelta) {
	var seen fieldSet
	r.object(func(name []byte) {
		switch r.field(name, &seen, "index", "id", "function") {
		case 0:
			readPtr(r, &t.Index, (*jsonReader).readInt)
		case 1:
			r.readString(&t.ID)
		case 2:
			readOAFuncDelta(r, &t.Function)
		default:
			r.skip()
		}
	})
}

func readOAFuncDelta(r *jsonReader, f *oaFuncDelta) {
	var seen fieldSet
	r.object(func(name []byte) {
		switch r.field(name, &seen, "name", "arguments") {
		case 0:
			r.readString(&f.Name)
		case 1:
			r.raw(&f.Arguments)
		default:
			r.skip()
		}
	})
}

func readOAUsage(r *jsonReader, u *oaUsage) {
	var seen fieldSet
	r.object(func(name []byte) {
		switch r.field(name, &seen, "prompt_tokens", "completion_tokens") {
		case 0:
			r.readInt64(&u.PromptTokens)
		case 1:
			r.readInt64(&u.CompletionTokens)
		default:
			r.skip()
		}
	})
}

// decodeFast decodes an Anthropic Messages stream event into the zero ev.
func (ev *anEvent) decodeFast(data []byte) bool {
	r := &jsonReader{data: data}
	var seen fieldSet
	r.object(func(name []byte) {
		switch r.field(name, &seen, "type", "index", "message", "content_block", "delta", "usage", "error") {
		case 0:
			r.readString(&ev.Type)
		case 1:
			r.readInt(&ev.Index)
		case 2:
			readANMessage(r, &ev.Message.Usage)
		case 3:
			readANBlock(r, ev)
		case 4:
			readANDelta(r, ev)
		case 5:
			readPtr(r, &ev.Usage, readANUsage)
		case 6:
			r.raw(&ev.Error)
		default:
			r.skip()
		}
	})
	return r.done()
}

// readANMessage reads the message of message_start, of which only the
// usage is kept.
func readANMessage(r *jsonReader, u *anUsage) {
	var seen fieldSet
	r.object(func(name []byte) {
		if r.field(name, &seen, "usage") == 0 {
			readANUsage(r, u)
		} else {
			r.skip()
		}
	})
}

func readANBlock(r *jsonReader, ev *anEvent) {
	b := &ev.ContentBlock
	var seen fieldSet
	r.object(func(name []byte) {
		switch r.field(name, &seen, "type", "id", "name", "text", "input") {
		case 0:
			r.readString(&b.Type)
		case 1:
			r.readString(&b.ID)
		case 2:
			r.readString(&b.Name)
		case 3:
			r.readString(&b.Text)
		case 4:
			r.raw(&b.Input)
		default:
			r.skip()
		}
	})
}

func readANDelta(r *jsonReader, ev *anEvent) {
	d := &ev.Delta
	var seen fieldSet
	r.object(func(name []byte) {
		switch r.field(name, &seen, "type", "text", "partial_json", "stop_reason") {
		case 0:
			r.readString(&d.Type)
		case 1:
			r.readString(&d.Text)
		case 2:
			r.readString(&d.PartialJSON)
		case 3:
			r.readString(&d.StopReason)
		default:
			r.skip()
		}
	})
}

func readANUsage(r *jsonReader, u *anUsage) {
	var seen fieldSet
	r.object(func(name []byte) {
		switch r.field(name, &seen, "input_tokens", "output_tokens") {
		case 0:
			r.readInt64(&u.InputTokens)
		case 1:
			r.readInt64(&u.OutputTokens)
		default:
			r.skip()
		}
	})
}

// readPtr reads a value for a pointer field as encoding/json does: null
// leaves it nil, anything else is read into a new value.
func readPtr[T any](r *jsonReader, p **T, read func(*jsonReader, *T)) {
	if r.null() {
		return
	}
	*p = new(T)
	read(r, *p)
}

// readSlice reads an array for a slice field as encoding/json does: null
// leaves it nil, [] makes it empty but not nil.
func readSlice[T any](r *jsonReader, s *[]T, read func(*jsonReader, *T)) {
	if r.null() {
		return
	}
	*s = []T{}
	r.array(func() {
		var zero T
		*s = append(*s, zero)
		read(r, &(*s)[len(*s)-1])
	})
}
