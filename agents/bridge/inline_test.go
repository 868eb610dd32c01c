package bridge

import (
	"context"
	"runtime/metrics"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/pallasgw/pallasgw/agents/wire"
)

// plainTarget answers every call at once and asks nothing.
type plainTarget struct{}

func (plainTarget) Answers(string) bool { return true }
func (plainTarget) RawArgs() bool       { return true }
func (plainTarget) Answer(_ context.Context, c *wire.Call) any {
	_ = c
	return wire.RawAnswer(`{"jsonrpc":"2.0","id":1,"result":{"content":[]}}`)
}

// BenchmarkAnswerPlain is one 2026-07-28 call that asks nothing, of a
// caller that declared no capability (run on the request's goroutine:
// startInline) and of one that declared elicitation (run detached), with
// the goroutines each starts per call.
func BenchmarkAnswerPlain(b *testing.B) {
	for _, bc := range []struct {
		name string
		caps *mcp.ClientCapabilities
	}{
		{"no-capabilities", &mcp.ClientCapabilities{}},
		{"elicitation", &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapability{}}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			br := New(NewShared(NewSealer()), "a", plainTarget{})
			ctx := server.WithRequestProtocolInfo(context.Background(), &server.RequestProtocolInfo{Modern: true, ClientCapabilities: bc.caps})
			var req mcp.CallToolRequest
			req.Params.Name = "echo"
			created := []metrics.Sample{{Name: "/sched/goroutines-created:goroutines"}}
			metrics.Read(created)
			before := created[0].Value.Uint64()
			b.ReportAllocs()
			for b.Loop() {
				br.Answer(ctx, &wire.Call{Req: req, ID: mcp.NewRequestId(int64(1)), Modern: true})
			}
			metrics.Read(created)
			b.ReportMetric(float64(created[0].Value.Uint64()-before)/float64(b.N), "goroutines/op")
		})
	}
}
