package agents_test

import (
	"context"
	"sync"

	"github.com/pallasgw/pallasgw/agents/llm"
)

// funcLLM (as agents/kinds/workflow's tests have it) is a model scripted by a function of the request; it records
// every request.
type funcLLM struct {
	mu   sync.Mutex
	reqs []llm.Request
	fn   func(n int, req llm.Request) (*llm.Response, error) // n: this model's turn, from 1
	per  map[string]int
}

func newFuncLLM(fn func(n int, req llm.Request) (*llm.Response, error)) *funcLLM {
	return &funcLLM{fn: fn, per: map[string]int{}}
}

func (*funcLLM) Name() string                            { return "openai" }
func (*funcLLM) Preflight(context.Context, string) error { return nil }

func (f *funcLLM) Chat(_ context.Context, req llm.Request) (*llm.Response, error) {
	f.mu.Lock()
	f.reqs = append(f.reqs, req)
	f.per[req.Model]++
	n := f.per[req.Model]
	f.mu.Unlock()
	return f.fn(n, req)
}

// requests lists the requests to model.
func (f *funcLLM) requests(model string) []llm.Request {
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

func text(s string) (*llm.Response, error) { return &llm.Response{Text: s, FinishReason: "stop"}, nil }
