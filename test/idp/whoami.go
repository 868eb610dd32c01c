package idp

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Identity is what the whoami tool reports about the credentials its call
// arrived with: the claims of a bearer JWT, never the token.
type Identity struct {
	// Authorization is "none", "bearer" or "other" (the scheme only).
	Authorization string `json:"authorization"`
	// Verified is true when the bearer was checked against Whoami.Keys;
	// VerifyError says why it failed.
	Verified    bool     `json:"verified"`
	VerifyError string   `json:"verify_error,omitempty"`
	Iss         string   `json:"iss,omitempty"`
	Sub         string   `json:"sub,omitempty"`
	Aud         []string `json:"aud,omitempty"`
	ClientID    string   `json:"client_id,omitempty"`
	Scope       []string `json:"scope,omitempty"` // `scope` or `scp`
	Actor       string   `json:"act,omitempty"`   // act.sub (RFC 8693)
	// Fingerprint is the token's last 8 signature characters: enough for a
	// test to tell two tokens apart, useless to replay.
	Fingerprint string `json:"fingerprint,omitempty"`
}

// Whoami is an MCP server (the official Go SDK, Streamable HTTP) whose
// tool `whoami` reports the Authorization its request carried, and whose
// tool `echo` answers its `message`; its prompt `whoami` says whose token
// its prompts/get carried (the sub). It keeps every Authorization value any
// of its HTTP requests carried (initialize and list included) in memory,
// for tests to assert that a caller's token never arrived; it never logs
// them.
type Whoami struct {
	// Keys, when set, verifies bearer tokens (Identity.Verified).
	Keys *KeySet

	mu   sync.Mutex
	seen []string
}

// NewWhoami makes the server; keys may be nil.
func NewWhoami(keys *KeySet) *Whoami { return &Whoami{Keys: keys} }

type whoamiIn struct{}

type echoIn struct {
	Message string `json:"message" jsonschema:"the text to echo"`
}

type echoOut struct {
	Message string `json:"message"`
}

// Handler is the MCP endpoint (any path).
func (w *Whoami) Handler() http.Handler {
	s := mcp.NewServer(&mcp.Implementation{Name: "whoami", Version: "1.0.0"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "whoami", Description: "Reports the identity of the bearer token this call carried."},
		func(ctx context.Context, req *mcp.CallToolRequest, _ whoamiIn) (*mcp.CallToolResult, Identity, error) {
			var h http.Header
			if req.Extra != nil {
				h = req.Extra.Header
			}
			return nil, w.identify(ctx, h.Get("Authorization")), nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Echoes its message."},
		func(_ context.Context, _ *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, echoOut, error) {
			return nil, echoOut{Message: in.Message}, nil
		})
	s.AddPrompt(&mcp.Prompt{Name: "whoami", Description: "Says whose bearer token this prompts/get carried."},
		func(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			var h http.Header
			if req.Extra != nil {
				h = req.Extra.Header
			}
			id := w.identify(ctx, h.Get("Authorization"))
			return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "you are " + id.Sub}}}}, nil
		})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		w.mu.Lock()
		w.seen = append(w.seen, r.Header.Get("Authorization"))
		w.mu.Unlock()
		h.ServeHTTP(rw, r)
	})
}

// Seen is every Authorization value (empty: none) of every request so far.
func (w *Whoami) Seen() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.seen)
}

func (w *Whoami) identify(ctx context.Context, authz string) Identity {
	if authz == "" {
		return Identity{Authorization: "none"}
	}
	scheme, token, ok := strings.Cut(authz, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return Identity{Authorization: "other"}
	}
	id := Identity{Authorization: "bearer"}
	if i := strings.LastIndexByte(token, '.'); i >= 0 && len(token)-i > 8 {
		id.Fingerprint = token[len(token)-8:]
	}
	_, claims, err := Decode(token)
	if err != nil {
		id.VerifyError = "not a JWT: " + err.Error()
		return id
	}
	if w.Keys != nil {
		ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		if _, err := w.Keys.Verify(ctx, token, 5*time.Second); err != nil {
			id.VerifyError = err.Error()
		} else {
			id.Verified = true
		}
	}
	id.Iss, id.Sub, id.ClientID = claims.String("iss"), claims.String("sub"), claims.String("client_id")
	id.Aud = claims.Strings("aud")
	id.Scope = claims.Strings("scope")
	if id.Scope == nil {
		id.Scope = claims.Strings("scp")
	}
	if act, ok := claims["act"].(map[string]any); ok {
		id.Actor, _ = act["sub"].(string)
	}
	return id
}
