package soak

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/pallasgw/pallasgw/test/fakellm"
	"github.com/pallasgw/pallasgw/test/load"
)

// flapper is a downstream MCP server (mcp-go, Streamable HTTP) on a fixed
// 127.0.0.1 port that goes down and comes back: every return is a fresh
// server process as far as the gateway can tell (its sessions are gone).
type flapper struct {
	addr string

	mu  sync.Mutex
	srv *http.Server // nil while down

	flaps atomic.Int64
}

func newFlapper(addr string) *flapper { return &flapper{addr: addr} }

// up starts serving (a no-op while up). The port was free a moment ago;
// another process taking it in between is reported.
func (f *flapper) up() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.srv != nil {
		return nil
	}
	ln, err := net.Listen("tcp", f.addr)
	if err != nil {
		return err
	}
	s := server.NewMCPServer("flap", "1.0.0", server.WithToolCapabilities(false))
	s.AddTool(mcpgo.NewTool("echo", mcpgo.WithString("text")), func(_ context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
		return mcpgo.NewToolResultText("echo: " + req.GetString("text", "")), nil
	})
	f.srv = &http.Server{Handler: server.NewStreamableHTTPServer(s), ReadHeaderTimeout: 10 * time.Second}
	go f.srv.Serve(ln)
	return nil
}

// down closes the listener and every connection.
func (f *flapper) down() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.srv != nil {
		f.srv.Close()
		f.srv = nil
		f.flaps.Add(1)
	}
}

// run flaps until ctx ends (up for upFor, down for downFor) and leaves the
// server up.
func (f *flapper) run(ctx context.Context, upFor, downFor time.Duration, report func(error)) {
	timer := time.NewTimer(upFor)
	defer timer.Stop()
	isUp := true
	for {
		select {
		case <-ctx.Done():
			if err := f.up(); err != nil {
				report(err)
			}
			return
		case <-timer.C:
		}
		if isUp {
			f.down()
			timer.Reset(downFor)
		} else {
			if err := f.up(); err != nil {
				report(err)
			}
			timer.Reset(upFor)
		}
		isUp = !isUp
	}
}

// scripter keeps a few scripted answers queued in the fake model, so that
// concurrent calls meet a mix of tool calls (to the flapping server), 500s
// the provider retries away, runs of 500s that exhaust the retries, and
// plain echo answers.
type scripter struct {
	llm              *fakellm.Server
	toolCalls, fails atomic.Int64
}

func (s *scripter) run(ctx context.Context) {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if s.llm.Pending() >= 4 {
			continue
		}
		switch n := rand.IntN(100); {
		case n < 35:
			s.toolCalls.Add(1)
			s.llm.Script(fakellm.ToolCalls(fakellm.Call{Name: "flap__echo", Args: json.RawMessage(`{"text":"soak"}`)}))
		case n < 50:
			s.fails.Add(1)
			s.llm.Script(fakellm.Status(500))
		case n < 53:
			s.fails.Add(3)
			s.llm.Script(fakellm.Status(500), fakellm.Status(500), fakellm.Status(500))
		}
	}
}

// crasher tells the stdio server behind a proxy agent to exit, every so
// often, until ctx ends. Each call must come back as the crash's error
// (the process is gone mid-call); the gateway starts the server again on
// its next use.
type crasher struct {
	url string
	n   int    // calls made; read after run returns
	bad string // the first answer that was not the crash's error
}

func (c *crasher) run(ctx context.Context, every time.Duration) {
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		res, err := load.Run(ctx, load.Options{URL: c.url, Style: load.Sessionless, Concurrency: 1, Requests: 1,
			Tool: "crash", Arguments: map[string]any{}, Client: &http.Client{Timeout: 30 * time.Second}})
		if ctx.Err() != nil {
			return
		}
		c.n++
		if c.bad == "" && (err != nil || res.Errors != 1 || !strings.Contains(res.FirstErr, "downstream unavailable")) {
			c.bad = fmt.Sprintf("%v %s", err, res.FirstErr)
		}
	}
}

// buildStdioServer builds the mcpclient tests' stdio server, which has a
// crash tool.
func buildStdioServer(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "stdioserver")
	if out, err := exec.Command("go", "build", "-o", bin, "../../agents/mcpclient/testdata/stdioserver").CombinedOutput(); err != nil {
		t.Fatalf("building the stdio server: %v\n%s", err, out)
	}
	return bin
}
