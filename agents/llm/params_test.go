package llm_test

import (
	"testing"

	"github.com/pallasgw/pallasgw/agents/llm"
	"github.com/pallasgw/pallasgw/test/fakellm"
)

// top_k is not sent to servers that refuse it (OpenAI's own API); other
// OpenAI-compatible servers get it.
func TestOpenAITopK(t *testing.T) {
	k := 40
	for _, tt := range []struct {
		name string
		drop bool
		want bool
	}{{"kept for a compatible server", false, true}, {"dropped where refused", true, false}} {
		t.Run(tt.name, func(t *testing.T) {
			srv := fakellm.New(t)
			srv.Script(fakellm.Text("ok"))
			p := newProvider(t, "openai", srv, func(c *llm.ProviderConfig) { c.DropTopK = tt.drop })
			req := userReq("hi")
			req.Params.TopK = &k
			if _, err := p.Chat(ctxT(t), req); err != nil {
				t.Fatal(err)
			}
			_, sent := srv.ChatRequests()[0].Chat.Body["top_k"]
			if sent != tt.want {
				t.Errorf("top_k sent = %v, want %v", sent, tt.want)
			}
			if req.Params.TopK == nil {
				t.Error("the caller's request was changed")
			}
		})
	}
	for url, want := range map[string]bool{
		"https://api.openai.com/v1": true, "https://API.OpenAI.com:443/v1": true, "https://team.openai.azure.com/openai": true,
		"http://vllm:8000/v1": false, "http://localhost:11434/v1": false, "https://api.openai.com.evil.example/v1": false,
	} {
		if got := llm.RejectsTopK(url); got != want {
			t.Errorf("RejectsTopK(%q) = %v, want %v", url, got, want)
		}
	}
}

// sdk_body: a provider that encodes through openai-go's param types sends
// the bytes the direct encoder sends.
func TestOpenAISDKBody(t *testing.T) {
	srv := fakellm.New(t)
	srv.Script(fakellm.Text("ok"), fakellm.Text("ok"))
	temp, k := 0.5, 3
	req := userReq("hi")
	req.System = "be <brief> & kind"
	req.Params.Temperature, req.Params.TopK = &temp, &k
	req.Tools = []llm.Tool{{Name: "srv__echo", Description: "Echoes.", InputSchema: []byte(`{"type":"object","properties":{"text":{"type":"string"}}}`)}}
	for _, sdk := range []bool{false, true} {
		p := newProvider(t, "openai", srv, func(c *llm.ProviderConfig) { c.SDKBody = sdk })
		if _, err := p.Chat(ctxT(t), req); err != nil {
			t.Fatalf("sdk_body %v: %v", sdk, err)
		}
	}
	reqs := srv.ChatRequests()
	if len(reqs) != 2 || string(reqs[0].Body) != string(reqs[1].Body) {
		t.Fatalf("bodies differ:\n%s\n%s", reqs[0].Body, reqs[len(reqs)-1].Body)
	}
}
