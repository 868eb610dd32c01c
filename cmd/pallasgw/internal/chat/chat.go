// Package chat is `pallasgw chat`: an MCP client (the official Go SDK) of
// one agent of a running gateway. It sends send_message with a progress
// token, prints the progress to its progress writer and the answer to its
// output, and keeps the conversation's history itself (agents are
// stateless: history is what the client sends). It knows nothing of the
// gateway's packages; it speaks MCP over HTTP only.
package chat

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Options are one chat session's settings.
type Options struct {
	URL     string // the gateway's base URL, e.g. http://127.0.0.1:8200
	Token   string // bearer token; "" sends none
	Agent   string
	Message string // one message, then exit; "" reads messages from In, one per line
	Tool    string // the agent's message tool; default send_message

	In       io.Reader
	Out      io.Writer // answers
	Progress io.Writer // progress messages and prompts
}

// Run connects to the agent and chats until the message is answered (or
// In ends).
func Run(ctx context.Context, o Options) error {
	if o.Tool == "" {
		o.Tool = "send_message"
	}
	endpoint := strings.TrimRight(o.URL, "/") + "/agents/" + o.Agent + "/mcp"
	client := mcp.NewClient(&mcp.Implementation{Name: "pallasgw-chat", Version: "1"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
			fmt.Fprintln(o.Progress, "  · "+r.Params.Message)
		},
	})
	hc := &http.Client{Transport: gatewayErrors{next: bearer{token: o.Token, next: http.DefaultTransport}}}
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: endpoint, HTTPClient: hc, MaxRetries: -1}, nil)
	if err != nil {
		return fmt.Errorf("connecting to %s: %w", endpoint, gatewayError(err))
	}
	defer cs.Close()
	if err := hasTool(ctx, cs, o.Agent, o.Tool); err != nil {
		return err
	}
	var history []map[string]any
	ask := func(msg string) error {
		args := map[string]any{"message": msg}
		if len(history) > 0 {
			args["history"] = history
		}
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: o.Tool, Arguments: args, Meta: mcp.Meta{"progressToken": "chat"}})
		if err != nil {
			return fmt.Errorf("%s: %w", o.Agent, gatewayError(err))
		}
		answer := text(res)
		if res.IsError {
			return errors.New(answer)
		}
		fmt.Fprintln(o.Out, answer)
		history = append(history, map[string]any{"role": "user", "content": msg}, map[string]any{"role": "assistant", "content": answer})
		return nil
	}
	if o.Message != "" {
		return ask(o.Message)
	}
	in := bufio.NewScanner(o.In)
	in.Buffer(make([]byte, 64<<10), 1<<20)
	for {
		fmt.Fprint(o.Progress, o.Agent+"> ")
		if !in.Scan() {
			fmt.Fprintln(o.Progress)
			return in.Err()
		}
		msg := strings.TrimSpace(in.Text())
		if msg == "" {
			continue
		}
		if err := ask(msg); err != nil {
			fmt.Fprintln(o.Progress, "error:", err) // the conversation goes on
		}
	}
}

// hasTool checks that the agent offers the message tool before the first
// message: a proxy or a toolbox has no send_message, and an agent's may be
// renamed (tool_name), so the error names the agent's tools and --tool.
func hasTool(ctx context.Context, cs *mcp.ClientSession, agent, tool string) error {
	var names []string
	for t, err := range cs.Tools(ctx, nil) {
		if err != nil {
			return fmt.Errorf("%s: listing its tools: %w", agent, gatewayError(err))
		}
		if t.Name == tool {
			return nil
		}
		names = append(names, t.Name)
	}
	return fmt.Errorf("agent %s has no tool %q; its tools: %s (choose one with --tool NAME)", agent, tool, strings.Join(names, ", "))
}

// gatewayError is the gateway's refusal in err, if there is one, without
// the SDK's wrapping (`sending "initialize": rejected: Post "<url>": ...`);
// else err.
func gatewayError(err error) error {
	var ge *GatewayError
	if errors.As(err, &ge) {
		return ge
	}
	return err
}

func text(r *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range r.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			b.WriteString(t.Text)
		}
	}
	return b.String()
}

// bearer adds "Authorization: Bearer <token>" to every request.
type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	if b.token == "" {
		return b.next.RoundTrip(r)
	}
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}
