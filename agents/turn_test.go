package agents

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"

	"github.com/pallasgw/pallasgw/agents/llm"
)

func TestParseTurn(t *testing.T) {
	png := base64.StdEncoding.EncodeToString([]byte("\x89PNG fake"))
	var skipped []string
	skip := func(_ int, reason string) { skipped = append(skipped, reason) }
	turn, err := parseTurn(map[string]any{
		"message": "now", "conversation_id": "c1",
		"images": []any{map[string]any{"data": png, "mime_type": "image/png"}},
		"history": []any{
			map[string]any{"role": "user", "content": "a"},
			map[string]any{"role": "tool", "content": "x"},
			map[string]any{"role": "robot", "content": "x"},
			map[string]any{"role": "assistant", "content": "b"},
			map[string]any{"role": "user", "content": "", "images": []any{map[string]any{"data": png, "mime_type": "image/png"}}},
			map[string]any{"role": "user", "content": "bad", "images": []any{map[string]any{"data": png, "mime_type": "text/plain"}}},
			map[string]any{"role": "user"},
			map[string]any{"role": "user", "content": "   "},
		},
	}, 500, 1<<20, skip)
	if err != nil {
		t.Fatal(err)
	}
	if turn.Message != "now" || turn.ConversationID != "c1" || len(turn.Images) != 1 || string(turn.Images[0].Data) != "\x89PNG fake" {
		t.Fatalf("turn = %+v", turn)
	}
	want := []llm.Message{{Role: llm.RoleUser, Text: "a"}, {Role: llm.RoleAssistant, Text: "b"}}
	if len(turn.History) != 3 || turn.History[0].Text != want[0].Text || turn.History[1].Role != llm.RoleAssistant || len(turn.History[2].Images) != 1 {
		t.Fatalf("history = %+v", turn.History)
	}
	if got, _ := json.Marshal(skipped); string(got) != `["bad_tool_call","bad_role","bad_image","bad_content","empty"]` {
		t.Fatalf("skipped = %s", got)
	}

	skipped = nil
	turn, _ = parseTurn(map[string]any{"message": "m", "history": []any{
		map[string]any{"role": "user", "content": "1"}, map[string]any{"role": "user", "content": "2"}, map[string]any{"role": "user", "content": "3"},
	}}, 2, 0, skip)
	if len(turn.History) != 2 || turn.History[0].Text != "2" || len(skipped) != 1 || skipped[0] != "too_many" {
		t.Fatalf("limit: %+v %v", turn.History, skipped)
	}
	for name, args := range map[string]map[string]any{
		"no message":      {},
		"message number":  {"message": 3},
		"bad image":       {"message": "m", "images": []any{map[string]any{"data": "!!", "mime_type": "image/png"}}},
		"image not image": {"message": "m", "images": []any{map[string]any{"data": png, "mime_type": "text/html"}}},
		"image too big":   {"message": "m", "images": []any{map[string]any{"data": base64.StdEncoding.EncodeToString(make([]byte, 2048)), "mime_type": "image/png"}}},
		"history object":  {"message": "m", "history": map[string]any{}},
	} {
		if _, err := parseTurn(args, 10, 1024, skip); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// An image's mime_type is a plain image/<subtype> token: one with control
// characters, parameters or spaces is refused with the error of any other
// bad image, in the new turn and (skipped as bad_image) in the history.
func TestParseTurnImageMIME(t *testing.T) {
	png := base64.StdEncoding.EncodeToString([]byte("\x89PNG fake"))
	for _, tt := range []struct {
		mime string
		ok   bool
	}{
		{"image/png", true},
		{"image/svg+xml", true},
		{"image/vnd.microsoft.icon", true},
		{"image/png\r\nX-Injected: 1", false},
		{"image/png\n", false},
		{"image/png; charset=x", false},
		{"image/", false},
		{"image/ png", false},
		{"image/p\x00ng", false},
		{"text/html", false},
	} {
		t.Run(tt.mime, func(t *testing.T) {
			img := []any{map[string]any{"data": png, "mime_type": tt.mime}}
			_, err := parseTurn(map[string]any{"message": "m", "images": img}, 10, 1024, func(int, string) {})
			if tt.ok != (err == nil) {
				t.Fatalf("mime_type %q: error %v, want accepted %v", tt.mime, err, tt.ok)
			}
			if !tt.ok && !strings.Contains(err.Error(), "images: entry 0: mime_type") || err != nil && !strings.HasSuffix(err.Error(), "is not an image type") {
				t.Fatalf("mime_type %q: error %q, want the bad image error", tt.mime, err)
			}
			var skipped []string
			turn, _ := parseTurn(map[string]any{"message": "m", "history": []any{map[string]any{"role": "user", "content": "c", "images": img}}},
				10, 1024, func(_ int, reason string) { skipped = append(skipped, reason) })
			if tt.ok != (len(turn.History) == 1) || !tt.ok && (len(skipped) != 1 || skipped[0] != "bad_image") {
				t.Fatalf("history with mime_type %q: kept %d, skipped %v", tt.mime, len(turn.History), skipped)
			}
		})
	}
}

// FuzzParseTurn: arbitrary JSON arguments never panic, never yield more
// history than the limit, and every kept entry is well formed.
func FuzzParseTurn(f *testing.F) {
	f.Add(`{"message":"hi","history":[{"role":"user","content":"a"},{"role":"assistant","content":"b","images":[{"data":"aGk=","mime_type":"image/png"}]}]}`)
	f.Add(`{"message":"hi","images":[{"data":"%%%","mime_type":"image/png"}]}`)
	f.Add(`{"history":[1,"x",null,{"role":"user"}]}`)
	f.Add(`{"message":"","conversation_id":5}`)
	f.Add(`{"message":"m","history":[{"role":"assistant","tool_calls":[{"id":"a","name":"f"},{"id":"b","type":"function","function":{"name":"g","arguments":"{}"}}]},{"role":"tool","tool_call_id":"b","content":""},{"role":"system","content":"s"},{"role":"tool","tool_call_id":"a","content":"late"}]}`)
	f.Fuzz(func(t *testing.T, raw string) {
		var args map[string]any
		if json.Unmarshal([]byte(raw), &args) != nil {
			return
		}
		turn, err := parseTurn(args, 5, 64, func(int, string) {})
		if err != nil {
			return
		}
		if len(turn.History) > 5 {
			t.Fatalf("%d history entries kept, limit 5", len(turn.History))
		}
		open := map[string]bool{} // the calls of the last assistant turn not yet answered
		for _, m := range turn.History {
			switch m.Role {
			case llm.RoleTool:
				if !open[m.ToolCallID] {
					t.Fatalf("tool turn %q answers no open call", m.ToolCallID)
				}
				delete(open, m.ToolCallID)
			case llm.RoleUser, llm.RoleAssistant, llm.RoleSystem:
				if len(open) > 0 {
					t.Fatalf("calls %v left unanswered", open)
				}
				for _, c := range m.ToolCalls {
					open[c.ID] = true
				}
			default:
				t.Fatalf("bad role kept: %q", m.Role)
			}
			for _, img := range m.Images {
				if len(img.Data) > 64 {
					t.Fatalf("oversized image kept")
				}
			}
		}
		if len(open) > 0 {
			t.Fatalf("calls %v left unanswered at the end", open)
		}
	})
}

// parseTurn reads send_message arguments. The new turn must be well formed;
// malformed history entries are skipped (reported through skip), never
// fatal. Only the newest maxHistory entries are kept. History system turns
// are taken (parseTurnFor decides per agent).
func parseTurn(args map[string]any, maxHistory int, maxImage int64, skip skipFunc) (Turn, error) {
	return parseTurnFor(args, maxHistory, maxImage, true, skip)
}
