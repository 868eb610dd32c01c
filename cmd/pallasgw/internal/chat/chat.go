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
	"encoding/json"
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
	// History is a file written by /save (send_message's history
	// argument) to resume: its turns are sent before the first message.
	History string

	In       io.Reader
	Out      io.Writer // answers
	Progress io.Writer // progress messages and prompts
}

// Run connects to the agent and chats until the message is answered (or
// In ends, or /quit).
func Run(ctx context.Context, o Options) error {
	if o.Tool == "" {
		o.Tool = "send_message"
	}
	endpoint := strings.TrimRight(o.URL, "/") + "/agents/" + o.Agent + "/mcp"
	client := mcp.NewClient(&mcp.Implementation{Name: "pallasgw-chat", Version: "1"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
			fmt.Fprintln(o.Progress, "  · "+r.Params.Message)
			printToolDetail(o.Progress, r.Params.Meta[toolDetailMeta])
		},
	})
	hc := &http.Client{Transport: gatewayErrors{next: bearer{token: o.Token, next: http.DefaultTransport}}}
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: endpoint, HTTPClient: hc, MaxRetries: -1}, nil)
	if err != nil {
		return fmt.Errorf("connecting to %s: %w", endpoint, gatewayError(err))
	}
	defer cs.Close()
	c := &session{o: o, cs: cs}
	if c.tool, c.tools, err = findTool(ctx, cs, o.Agent, o.Tool); err != nil {
		return err
	}
	if o.History != "" {
		if c.history, err = readHistory(o.History); err != nil {
			return err
		}
		fmt.Fprintf(o.Progress, "loaded %d messages from %s\n", len(c.history), o.History)
	}
	if o.Message != "" {
		return c.ask(ctx, o.Message)
	}
	return c.loop(ctx)
}

// session is one chat: the agent's tools, and what the client keeps
// between messages (agents are stateless).
type session struct {
	o     Options
	cs    *mcp.ClientSession
	tool  *mcp.Tool   // the message tool
	tools []*mcp.Tool // every tool the agent offers
	// history is the conversation so far, in send_message's history
	// shape (a loaded one may hold system and tool turns, kept as read).
	history []turn
	// system is the system_append of the next messages ("" sends none);
	// params the per-call params (nil sends none).
	system string
	params map[string]any
}

// turn is one entry of send_message's history argument: role, content
// and what else the role takes (images, tool_calls, tool_call_id).
type turn map[string]any

func message(role, content string) turn { return turn{"role": role, "content": content} }

// ask sends one message with the history, system_append and params set
// so far, prints the answer and adds both turns to the history.
func (c *session) ask(ctx context.Context, msg string) error {
	args := map[string]any{"message": msg}
	if len(c.history) > 0 {
		args["history"] = c.history
	}
	if c.system != "" {
		args["system_append"] = c.system
	}
	if len(c.params) > 0 {
		args["params"] = c.params
	}
	res, err := c.cs.CallTool(ctx, &mcp.CallToolParams{Name: c.o.Tool, Arguments: args, Meta: mcp.Meta{"progressToken": "chat", toolDetailMeta: true}})
	if err != nil {
		return fmt.Errorf("%s: %w", c.o.Agent, gatewayError(err))
	}
	answer := text(res)
	if res.IsError {
		return errors.New(answer)
	}
	fmt.Fprintln(c.o.Out, answer)
	c.history = append(c.history, message("user", msg), message("assistant", answer))
	return nil
}

// toolDetailMeta is the _meta key (a pallasgw extension, set on
// send_message) with which an llm agent's progress of each downstream tool
// call carries the call's arguments and the start of its result, under the
// same key.
const toolDetailMeta = "io.pallasgw/toolDetail"

// toolPreview is how much of a tool's arguments or result a line shows.
const toolPreview = 300

// printToolDetail prints a downstream tool call's arguments or result
// (the _meta of its progress) below the progress line; anything else,
// nothing.
func printToolDetail(w io.Writer, v any) {
	d, ok := v.(map[string]any)
	if !ok {
		return
	}
	if args, ok := d["arguments"]; ok {
		b, _ := json.Marshal(args)
		fmt.Fprintln(w, "    → "+preview(string(b)))
	}
	if res, ok := d["result"].(string); ok {
		mark := "←"
		if isErr, _ := d["isError"].(bool); isErr {
			mark = "← error:"
		}
		fmt.Fprintln(w, "    "+mark+" "+preview(res))
	}
}

// preview is s on one line, cut at toolPreview runes.
func preview(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > toolPreview {
		return string(r[:toolPreview]) + " …"
	}
	return s
}

// loop reads one message or slash command a line from In until it ends
// or /quit. A failed message is reported and the conversation goes on.
func (c *session) loop(ctx context.Context) error {
	in := bufio.NewScanner(c.o.In)
	in.Buffer(make([]byte, 64<<10), 1<<20)
	for {
		fmt.Fprint(c.o.Progress, c.o.Agent+"> ")
		if !in.Scan() {
			fmt.Fprintln(c.o.Progress)
			return in.Err()
		}
		line := strings.TrimSpace(in.Text())
		if line == "" {
			continue
		}
		if strings.HasPrefix(line, "/") && !strings.HasPrefix(line, "//") {
			if quit := c.command(line); quit {
				return nil
			}
			continue
		}
		line = strings.TrimPrefix(line, "/") // "//x" sends "/x"
		if err := c.ask(ctx, line); err != nil {
			fmt.Fprintln(c.o.Progress, "error:", err)
		}
	}
}

// findTool lists the agent's tools and finds the message tool among them
// before the first message: a proxy or a toolbox has no send_message,
// and an agent's may be renamed (tool_name), so the error names the
// agent's tools and --tool.
func findTool(ctx context.Context, cs *mcp.ClientSession, agent, tool string) (*mcp.Tool, []*mcp.Tool, error) {
	var all []*mcp.Tool
	var found *mcp.Tool
	for t, err := range cs.Tools(ctx, nil) {
		if err != nil {
			return nil, nil, fmt.Errorf("%s: listing its tools: %w", agent, gatewayError(err))
		}
		all = append(all, t)
		if t.Name == tool {
			found = t
		}
	}
	if found == nil {
		names := make([]string, len(all))
		for i, t := range all {
			names[i] = t.Name
		}
		return nil, nil, fmt.Errorf("agent %s has no tool %q; its tools: %s (choose one with --tool NAME)", agent, tool, strings.Join(names, ", "))
	}
	return found, all, nil
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
