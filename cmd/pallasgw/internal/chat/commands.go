package chat

import (
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// helpText is /help: the slash commands of an interactive chat.
const helpText = `/tools          the agent's tools and the arguments each takes
/system TEXT    send TEXT as system_append with the following messages; /system alone clears it
/set KEY=VALUE  a per-call param (VALUE read as JSON, else as a string); /set KEY= removes it; /set alone lists them
/clear          forget the conversation's history
/save FILE      write the history as JSON (send_message's history argument)
/load FILE      resume a conversation /save wrote: its history replaces this one's
/quit           end the chat
/help           this list
A line starting with // sends the message that starts with a single /.`

// command runs one slash command line; it reports whether to quit.
// Its output, like the prompt's, goes to the progress writer.
func (c *session) command(line string) (quit bool) {
	name, arg, _ := strings.Cut(line, " ")
	arg = strings.TrimSpace(arg)
	w := c.o.Progress
	switch name {
	case "/quit", "/exit":
		return true
	case "/help":
		fmt.Fprintln(w, helpText)
	case "/tools":
		c.listTools()
	case "/system":
		c.setSystem(arg)
	case "/set":
		c.setParam(arg)
	case "/clear":
		c.history = nil
		fmt.Fprintln(w, "history cleared")
	case "/save":
		c.save(arg)
	case "/load":
		c.load(arg)
	default:
		fmt.Fprintf(w, "unknown command %s (/help lists them; start a message with // to send a leading /)\n", name)
	}
	return false
}

// listTools prints each tool the agent offers over MCP with its
// description and arguments (required ones marked *).
func (c *session) listTools() {
	for _, t := range c.tools {
		props, required := schemaArgs(t)
		args := make([]string, 0, len(props))
		for _, p := range props {
			if required[p] {
				p += "*"
			}
			args = append(args, p)
		}
		fmt.Fprintf(c.o.Progress, "%s(%s)", t.Name, strings.Join(args, ", "))
		if d := firstLine(t.Description); d != "" {
			fmt.Fprint(c.o.Progress, ": "+d)
		}
		fmt.Fprintln(c.o.Progress)
	}
}

// setSystem sets or (without text) clears the system_append of the
// following messages, when the message tool takes it.
func (c *session) setSystem(text string) {
	if !c.takes("system_append") {
		fmt.Fprintf(c.o.Progress, "agent %s does not take system_append (its config does not set overrides: {system: true}); nothing set\n", c.o.Agent)
		return
	}
	c.system = text
	if text == "" {
		fmt.Fprintln(c.o.Progress, "system_append cleared")
		return
	}
	fmt.Fprintln(c.o.Progress, "system_append set for the following messages")
}

// setParam sets (KEY=VALUE), removes (KEY=) or lists (no argument) the
// per-call params, when the message tool takes params. VALUE is read as
// JSON (0.2, true, ["x"], null), else as a string.
func (c *session) setParam(arg string) {
	w := c.o.Progress
	if !c.takes("params") {
		fmt.Fprintf(w, "agent %s does not take per-call params (its config does not set overrides: {params: true}); nothing set\n", c.o.Agent)
		return
	}
	if arg == "" {
		raw := []byte("{}")
		if len(c.params) > 0 {
			raw, _ = json.Marshal(c.params) // values decoded from JSON or strings
		}
		fmt.Fprintln(w, "params: "+string(raw))
		return
	}
	key, value, ok := strings.Cut(arg, "=")
	key = strings.TrimSpace(key)
	if !ok || key == "" {
		fmt.Fprintln(w, "usage: /set KEY=VALUE (e.g. /set temperature=0.2)")
		return
	}
	value = strings.TrimSpace(value)
	if value == "" {
		delete(c.params, key)
		fmt.Fprintf(w, "param %s removed\n", key)
		return
	}
	var v any
	if json.Unmarshal([]byte(value), &v) != nil {
		v = value
	}
	if c.params == nil {
		c.params = map[string]any{}
	}
	c.params[key] = v
	raw, _ := json.Marshal(v)
	fmt.Fprintf(w, "param %s = %s for the following messages\n", key, raw)
}

// save writes the history to file as send_message's history argument.
func (c *session) save(file string) {
	if file == "" {
		fmt.Fprintln(c.o.Progress, "usage: /save FILE")
		return
	}
	h := c.history
	if h == nil {
		h = []turn{}
	}
	raw, _ := json.MarshalIndent(h, "", "  ") // strings only
	// 0600: a conversation may hold what only its user should read.
	if err := os.WriteFile(file, append(raw, '\n'), 0o600); err != nil {
		fmt.Fprintf(c.o.Progress, "error: saving the history: %v\n", err)
		return
	}
	fmt.Fprintf(c.o.Progress, "saved %d messages to %s\n", len(h), file)
}

// load replaces the history with the one file holds (written by /save).
func (c *session) load(file string) {
	if file == "" {
		fmt.Fprintln(c.o.Progress, "usage: /load FILE")
		return
	}
	h, err := readHistory(file)
	if err != nil {
		fmt.Fprintf(c.o.Progress, "error: %v; the history is unchanged\n", err)
		return
	}
	c.history = h
	fmt.Fprintf(c.o.Progress, "loaded %d messages from %s\n", len(h), file)
}

// readHistory reads a history file: a JSON array of send_message history
// entries, each an object with a string role (the gateway checks the rest).
func readHistory(file string) ([]turn, error) {
	raw, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("loading the history: %w", err)
	}
	var h []turn
	if err := json.Unmarshal(raw, &h); err != nil {
		return nil, fmt.Errorf("loading the history: %s is not a JSON array of messages: %w", file, err)
	}
	for i, t := range h {
		if role, ok := t["role"].(string); !ok || role == "" {
			return nil, fmt.Errorf("loading the history: %s: entry %d has no role", file, i)
		}
	}
	return h, nil
}

// takes reports whether the message tool's input schema has the argument
// arg: the gateway lists an override argument only when the agent allows it.
func (c *session) takes(arg string) bool {
	props, _ := schemaArgs(c.tool)
	for _, p := range props {
		if p == arg {
			return true
		}
	}
	return false
}

// schemaArgs are the property names of t's input schema, sorted, and
// which of them are required.
func schemaArgs(t *mcp.Tool) ([]string, map[string]bool) {
	s, _ := t.InputSchema.(map[string]any)
	props, _ := s["properties"].(map[string]any)
	names := make([]string, 0, len(props))
	for name := range props {
		names = append(names, name)
	}
	sort.Strings(names)
	required := map[string]bool{}
	list, _ := s["required"].([]any)
	for _, r := range list {
		if name, ok := r.(string); ok {
			required[name] = true
		}
	}
	return names, required
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}
