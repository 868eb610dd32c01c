package bridge

// Reading a retry's inputResponses and matching them with the requests
// they answer; the JSON-RPC answers the bridge makes.

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/pallasgw/pallasgw/agents/wire"
)

// matchResponses pairs the asks with responses: by key, then each ask left
// with the first (by key) response not matched yet whose shape fits its
// kind, in order.
func matchResponses(asks []*inputAsk, responses map[string]json.RawMessage) map[*inputAsk]json.RawMessage {
	out := map[*inputAsk]json.RawMessage{}
	used := map[string]bool{}
	for _, a := range asks {
		if r, ok := responses[a.key]; ok {
			out[a], used[a.key] = r, true
		}
	}
	keys := slices.Sorted(maps.Keys(responses))
	for _, a := range asks {
		if _, ok := out[a]; ok {
			continue
		}
		for _, k := range keys {
			if !used[k] && fits(a.method, responses[k]) == nil {
				out[a], used[k] = responses[k], true
				break
			}
		}
	}
	return out
}

// replayAnswers are the answers a replay of st's call gives: earlier
// rounds', and this retry's for the requests st names.
func replayAnswers(st *roundState, responses map[string]json.RawMessage) map[string]askedInput {
	out := map[string]askedInput{}
	for k, v := range st.Prior {
		out[k] = v
	}
	asks := make([]*inputAsk, 0, len(st.Asked))
	for _, k := range slices.Sorted(maps.Keys(st.Asked)) {
		v := st.Asked[k]
		asks = append(asks, &inputAsk{key: k, method: v.M, digest: v.D})
	}
	for a, r := range matchResponses(asks, responses) {
		if fits(a.method, r) == nil {
			out[a.key] = askedInput{M: a.method, D: a.digest, R: r}
		}
	}
	return out
}

// parseResponses reads a retry's inputResponses: an object whose members
// are objects (absent: none).
func parseResponses(raw json.RawMessage) (map[string]json.RawMessage, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	var m map[string]json.RawMessage
	if raw = bytes.TrimSpace(raw); len(raw) == 0 || raw[0] != '{' || json.Unmarshal(raw, &m) != nil {
		return nil, errNotObject
	}
	for k, v := range m {
		if v = bytes.TrimSpace(v); len(v) == 0 || v[0] != '{' {
			return nil, fmt.Errorf("%q: %w", k, errNotObject)
		}
	}
	return m, nil
}

// fits checks that r has the shape of a result of method.
func fits(method string, r json.RawMessage) error {
	var probe struct {
		Action  *string          `json:"action"`
		Role    *string          `json:"role"`
		Content json.RawMessage  `json:"content"`
		Roots   *json.RawMessage `json:"roots"`
	}
	if json.Unmarshal(r, &probe) != nil {
		return errNotObject
	}
	switch mcp.MCPMethod(method) {
	case mcp.MethodElicitationCreate:
		if probe.Action == nil {
			return fmt.Errorf("an elicitation result needs an action")
		}
	case mcp.MethodSamplingCreateMessage:
		if probe.Role == nil || len(probe.Content) == 0 {
			return fmt.Errorf("a sampling result needs a role and content")
		}
	case mcp.MethodListRoots:
		if probe.Roots == nil || len(*probe.Roots) == 0 || (*probe.Roots)[0] != '[' {
			return fmt.Errorf("a roots result needs a roots array")
		}
	}
	return nil
}

func newCallID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func mustJSON(v any) json.RawMessage {
	b, _ := json.Marshal(v)
	return b
}

// rawArgs are the call's arguments as JSON, for their digest.
func rawArgs(req mcp.CallToolRequest) json.RawMessage {
	if raw := bytes.TrimSpace(req.Params.RawArguments); len(raw) > 0 {
		var v any
		if json.Unmarshal(raw, &v) == nil {
			b, _ := json.Marshal(v) // canonical: sorted members
			return b
		}
		return raw
	}
	b, _ := json.Marshal(req.GetArguments())
	return b
}

// answerJSON is a Target's answer as JSON.
func answerJSON(ans any) (json.RawMessage, error) {
	if raw, ok := ans.(wire.RawAnswer); ok {
		return json.RawMessage(raw), nil
	}
	return json.Marshal(ans)
}

func errAnswer(id any, code int, msg string, data any) any {
	return mcp.JSONRPCError{JSONRPC: mcp.JSONRPC_VERSION, ID: mcp.NewRequestId(id),
		Error: mcp.NewJSONRPCErrorDetails(code, msg, data)}
}

func resultAnswer(id any, result map[string]any) any {
	return mcp.JSONRPCResponse{JSONRPC: mcp.JSONRPC_VERSION, ID: mcp.NewRequestId(id), Result: result}
}
