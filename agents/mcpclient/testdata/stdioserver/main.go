// Command stdioserver is the stdio MCP server of the mcpclient tests. It
// writes a line to stderr when it starts (with PGW_TEST_SECRET, if set) and
// offers tools that echo, report its pid and environment, block until
// canceled, fail quoting PGW_TEST_SECRET, and crash.
package main

import (
	"context"
	"fmt"
	"os"
	"strconv"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

func main() {
	fmt.Fprintf(os.Stderr, "stdioserver ready pid=%d\n", os.Getpid())
	if secret := os.Getenv("PGW_TEST_SECRET"); secret != "" {
		fmt.Fprintf(os.Stderr, "starting with token %s\n", secret) // as careless servers do
	}
	s := server.NewMCPServer("stdioserver", "1.0.0", server.WithToolCapabilities(true))
	s.AddTool(mcp.NewTool("echo", mcp.WithString("text")), echo)
	s.AddTool(mcp.NewTool("pid"), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText(strconv.Itoa(os.Getpid())), nil
	})
	s.AddTool(mcp.NewTool("env", mcp.WithString("name")), env)
	s.AddTool(mcp.NewTool("block"), block)
	s.AddTool(mcp.NewTool("leak_env"), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return nil, fmt.Errorf("refused token %s", os.Getenv("PGW_TEST_SECRET"))
	})
	s.AddTool(mcp.NewTool("crash"), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		fmt.Fprintln(os.Stderr, "crashing on request")
		os.Exit(3)
		return nil, nil
	})
	if err := server.ServeStdio(s); err != nil {
		fmt.Fprintln(os.Stderr, "serve:", err)
		os.Exit(1)
	}
}

func echo(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	return mcp.NewToolResultText("echo:" + req.GetString("text", "")), nil
}

func env(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	v, ok := os.LookupEnv(req.GetString("name", ""))
	if !ok {
		v = "<unset>"
	}
	return mcp.NewToolResultText(v), nil
}

func block(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	fmt.Fprintln(os.Stderr, "block started")
	<-ctx.Done()
	fmt.Fprintln(os.Stderr, "block canceled")
	return nil, ctx.Err()
}
