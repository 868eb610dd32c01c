package agenttest

import (
	"context"
	"sync"

	"github.com/pallasgw/pallasgw/agents/llm"
)

// FuncLLM is a model scripted by a function of the request (an "openai"
// provider); it records every request.
type FuncLLM struct {
	mu   sync.Mutex
	reqs []llm.Request
	fn   func(n int, req llm.Request) (*llm.Response, error) // n: this model's turn, from 1
	per  map[string]int
}

// NewFuncLLM is a FuncLLM answering with fn.
func NewFuncLLM(fn func(n int, req llm.Request) (*llm.Response, error)) *FuncLLM {
	return &FuncLLM{fn: fn, per: map[string]int{}}
}

func (*FuncLLM) Name() string                            { return "openai" }
func (*FuncLLM) Preflight(context.Context, string) error { return nil }

func (f *FuncLLM) Chat(_ context.Context, req llm.Request) (*llm.Response, error) {
	f.mu.Lock()
	f.reqs = append(f.reqs, req)
	f.per[req.Model]++
	n := f.per[req.Model]
	f.mu.Unlock()
	return f.fn(n, req)
}

// Requests lists the requests to model.
func (f *FuncLLM) Requests(model string) []llm.Request {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []llm.Request
	for _, r := range f.reqs {
		if r.Model == model {
			out = append(out, r)
		}
	}
	return out
}

// Text is a final answer s.
func Text(s string) (*llm.Response, error) { return &llm.Response{Text: s, FinishReason: "stop"}, nil }
