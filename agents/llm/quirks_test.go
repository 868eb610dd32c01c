package llm_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/pallasgw/pallasgw/test/fakellm"
)

// TestOpenAIQuirks runs each real-server quirk through the whole provider.
func TestOpenAIQuirks(t *testing.T) {
	twoCalls := fakellm.ToolCalls(
		fakellm.Call{Name: "a", Args: json.RawMessage(`{"x":"first call","n":1}`)},
		fakellm.Call{Name: "b", Args: json.RawMessage(`{"y":[1,2,3]}`)},
	)
	tests := []struct {
		name    string
		step    fakellm.Step
		wantErr string // substring; "" = success
	}{
		{"no index", twoCalls.Quirks(fakellm.QuirkNoIndex), ""},
		{"changing ids", twoCalls.Quirks(fakellm.QuirkChangingIDs), ""},
		{"cumulative usage", twoCalls.Quirks(fakellm.QuirkCumulativeUsage), ""},
		{"null error", twoCalls.Quirks(fakellm.QuirkNullError), ""},
		{"ping comments", twoCalls.Quirks(fakellm.QuirkPing), ""},
		{"all tolerable quirks", twoCalls.Quirks(fakellm.QuirkNoIndex, fakellm.QuirkChangingIDs,
			fakellm.QuirkCumulativeUsage, fakellm.QuirkNullError, fakellm.QuirkPing), ""},
		{"no finish reason", twoCalls.Quirks(fakellm.QuirkNoFinishReason), "stream ended without finish_reason"},
		{"malformed chunk", twoCalls.Quirks(fakellm.QuirkMalformedChunk), "malformed stream chunk"},
		{"stream error", fakellm.StreamError("model overloaded"), "openai: stream error: model overloaded"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := fakellm.New(t)
			srv.Script(tc.step.Usage(40, 9))
			resp, err := newProvider(t, "openai", srv).Chat(ctxT(t), userReq("go"))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("chat: %v", err)
			}
			if len(resp.ToolCalls) != 2 || resp.ToolCalls[0].Name != "a" || resp.ToolCalls[1].Name != "b" {
				t.Fatalf("calls = %+v", resp.ToolCalls)
			}
			if resp.ToolCalls[0].ID == resp.ToolCalls[1].ID {
				t.Errorf("duplicate call ids %q", resp.ToolCalls[0].ID)
			}
			jsonEq(t, resp.ToolCalls[0].Arguments, json.RawMessage(`{"x":"first call","n":1}`))
			jsonEq(t, resp.ToolCalls[1].Arguments, json.RawMessage(`{"y":[1,2,3]}`))
			if resp.Usage.InputTokens != 40 || resp.Usage.OutputTokens != 9 {
				t.Errorf("usage = %+v, want 40/9 (never summed)", resp.Usage)
			}
		})
	}
}

func TestOpenAITextQuirks(t *testing.T) {
	srv := fakellm.New(t)
	srv.Script(fakellm.Text("a longer answer in many pieces").Quirks(fakellm.QuirkChangingIDs,
		fakellm.QuirkNullError, fakellm.QuirkPing, fakellm.QuirkCumulativeUsage).Usage(3, 8))
	resp, err := newProvider(t, "openai", srv).Chat(ctxT(t), userReq("go"))
	if err != nil {
		t.Fatalf("chat: %v", err)
	}
	if resp.Text != "a longer answer in many pieces" || resp.FinishReason != "stop" || resp.Usage.OutputTokens != 8 {
		t.Errorf("resp = %+v", resp)
	}
}

func TestAnthropicStreamFailures(t *testing.T) {
	tests := []struct {
		name, wantErr string
		step          fakellm.Step
	}{
		{"no stop reason", "anthropic: stream ended without stop_reason", fakellm.Text("cut").Quirks(fakellm.QuirkNoFinishReason)},
		{"malformed event", "malformed stream event", fakellm.Text("oops here").Quirks(fakellm.QuirkMalformedChunk)},
		{"error event", "anthropic: stream error: overloaded now", fakellm.StreamError("overloaded now")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := fakellm.New(t)
			srv.Script(tc.step)
			_, err := newProvider(t, "anthropic", srv).Chat(ctxT(t), userReq("go"))
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("err = %v, want containing %q", err, tc.wantErr)
			}
		})
	}
}

func TestAnthropicPingTolerated(t *testing.T) {
	srv := fakellm.New(t)
	srv.Script(fakellm.Text("fine").Quirks(fakellm.QuirkPing))
	resp, err := newProvider(t, "anthropic", srv).Chat(ctxT(t), userReq("go"))
	if err != nil || resp.Text != "fine" {
		t.Fatalf("resp = %+v, err = %v", resp, err)
	}
}
