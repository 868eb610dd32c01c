package chat

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// maxErrorBody bounds how much of an error answer is read: the gateway's
// are a line of JSON; something else on the URL may send a page.
const maxErrorBody = 16 << 10

// GatewayError is a refused request: the HTTP status and what the gateway
// said, with the request id its log line carries (docs/operations.md,
// "Troubleshooting": grep the log for it).
type GatewayError struct {
	Status    int
	Message   string // the body's "error" (or JSON-RPC error message), else its text
	RequestID string // the body's request_id, else the X-Request-Id header
}

func (e *GatewayError) Error() string {
	msg := fmt.Sprintf("the gateway answered %d %s", e.Status, http.StatusText(e.Status))
	if e.Message != "" {
		msg += ": " + e.Message
	}
	if e.RequestID != "" && !strings.Contains(e.Message, e.RequestID) {
		msg += " (request id " + e.RequestID + ")"
	}
	return msg
}

// gatewayErrors turns a refused POST into a *GatewayError. The SDK keeps
// only the status text of an answer that is not JSON-RPC ("Forbidden"),
// while the gateway says why in its body ({"error": "access denied:
// agent_not_allowed", "request_id": ...}). GET and DELETE answers pass
// unchanged: the SDK reads their statuses (405: no GET stream).
type gatewayErrors struct{ next http.RoundTripper }

func (g gatewayErrors) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := g.next.RoundTrip(r)
	if err != nil || r.Method != http.MethodPost || resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return resp, err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	e := &GatewayError{Status: resp.StatusCode, RequestID: resp.Header.Get("X-Request-Id")}
	var doc struct {
		Error     json.RawMessage `json:"error"`
		RequestID string          `json:"request_id"`
	}
	var rpc struct {
		Message string `json:"message"`
	}
	switch {
	case json.Unmarshal(body, &doc) == nil && doc.Error != nil:
		if json.Unmarshal(doc.Error, &e.Message) != nil && json.Unmarshal(doc.Error, &rpc) == nil {
			e.Message = rpc.Message // a JSON-RPC error answer
		}
		if doc.RequestID != "" {
			e.RequestID = doc.RequestID
		}
	default:
		e.Message = strings.TrimSpace(strings.ToValidUTF8(string(body), ""))
		if len(e.Message) > 200 || strings.HasPrefix(e.Message, "<") {
			e.Message = "" // a page, not a message
		}
	}
	return nil, e
}
