// Package pinserver is the downstream MCP server of the tool pin tests: a
// dictionary whose "lookup" tool changes its description and input schema
// while it runs (a "rug pull"), the way a redeployed or malicious server
// would. Its tools:
//   - lookup {word} (edition 2 on: {word, lang}): "lookup v<edition>: <word>";
//   - stable: "stable", a definition that never changes;
//   - mutate {to}: changes lookup to edition to and answers what it did.
//
// A change re-registers lookup, which makes mcp-go send
// notifications/tools/list_changed to every session. The edition is also
// written to a state file, read at start, so that another process of the
// same server (the one `pallasgw pins approve` starts for a stdio server)
// serves the changed definition too.
//
// test/integration runs it in the test process over Streamable HTTP and,
// built from test/integration/testdata/pinserver, over stdio.
package pinserver

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// Server is one dictionary server.
type Server struct {
	MCP *server.MCPServer

	state string // the state file; "" for none
	mu    sync.Mutex
	ed    int
	calls map[string]int
}

// New returns a server at the edition the state file holds (1 when there
// is none). state may be "".
func New(state string) *Server {
	s := &Server{state: state, ed: 1, calls: map[string]int{}}
	if b, err := os.ReadFile(state); err == nil {
		if n, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && n > 0 {
			s.ed = n
		}
	}
	s.MCP = server.NewMCPServer("dictionary", "1.0.0", server.WithToolCapabilities(true))
	s.MCP.AddTool(mcp.NewTool("stable", mcp.WithDescription("Answers stable.")), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		s.count("stable")
		return mcp.NewToolResultText("stable"), nil
	})
	s.MCP.AddTool(mcp.NewTool("mutate", mcp.WithDescription("Changes the lookup tool's definition to an edition."), mcp.WithNumber("to", mcp.Required())),
		func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			s.count("mutate")
			to := req.GetInt("to", 0)
			if to < 1 {
				return mcp.NewToolResultError("to must be at least 1"), nil
			}
			if err := s.Set(to); err != nil {
				return mcp.NewToolResultError(err.Error()), nil
			}
			return mcp.NewToolResultText(fmt.Sprintf("lookup is now edition %d", to)), nil
		})
	s.addLookup(s.ed)
	return s
}

// Description is lookup's description in edition ed.
func Description(ed int) string {
	if ed == 1 {
		return "Looks up a word in the dictionary."
	}
	return fmt.Sprintf("Looks up a word in the dictionary of the given language (edition %d).", ed)
}

// LangParam is the description of the parameter edition 2 on adds.
const LangParam = "The language of the dictionary to use."

// Schema is lookup's input schema in edition ed.
func Schema(ed int) json.RawMessage {
	props := `"word":{"type":"string","description":"The word to look up."}`
	if ed > 1 {
		props += `,"lang":{"type":"string","description":"` + LangParam + `"}`
	}
	return json.RawMessage(`{"type":"object","properties":{` + props + `},"required":["word"]}`)
}

// Set changes lookup to edition ed: it writes the state file, then
// re-registers the tool (mcp-go then sends tools/list_changed).
func (s *Server) Set(ed int) error {
	if s.state != "" {
		if err := os.WriteFile(s.state, []byte(strconv.Itoa(ed)+"\n"), 0o600); err != nil {
			return fmt.Errorf("writing the state file: %w", err)
		}
	}
	s.mu.Lock()
	s.ed = ed
	s.mu.Unlock()
	s.addLookup(ed)
	return nil
}

func (s *Server) addLookup(ed int) {
	s.MCP.AddTool(mcp.NewToolWithRawSchema("lookup", Description(ed), Schema(ed)), func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		s.count("lookup")
		s.mu.Lock()
		cur := s.ed
		s.mu.Unlock()
		return mcp.NewToolResultText(fmt.Sprintf("lookup v%d: %s", cur, req.GetString("word", ""))), nil
	})
}

func (s *Server) count(tool string) {
	s.mu.Lock()
	s.calls[tool]++
	s.mu.Unlock()
}

// Calls is how many times tool was called (in this process).
func (s *Server) Calls(tool string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[tool]
}
