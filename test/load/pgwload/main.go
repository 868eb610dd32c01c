// Command pgwload drives MCP tools/call load at an endpoint and prints
// calls/s, p50/p95/p99 latency and errors:
//
//	go run ./test/load/pgwload -url http://127.0.0.1:8200/agents/echo/mcp \
//	    -c 64 -n 20000 -style sessionless -tool send_message -args '{"message":"hi"}'
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/pallasgw/pallasgw/test/load"
)

func main() {
	url := flag.String("url", "http://127.0.0.1:8200/agents/echo/mcp", "MCP endpoint")
	style := flag.String("style", "sessionless", "sessionless (2026-07-28) or session (2025-11-25)")
	c := flag.Int("c", 16, "concurrent callers")
	n := flag.Int("n", 10000, "calls in total (0: until -d)")
	d := flag.Duration("d", 0, "duration (0: until -n)")
	tool := flag.String("tool", "send_message", "tool to call")
	args := flag.String("args", `{"message":"hello"}`, "tool arguments as JSON")
	progress := flag.Bool("progress", false, "send a progressToken (SSE answers)")
	auth := flag.String("auth", "", "Authorization header value")
	flag.Parse()
	var a map[string]any
	if err := json.Unmarshal([]byte(*args), &a); err != nil {
		fmt.Fprintln(os.Stderr, "pgwload: -args:", err)
		os.Exit(2)
	}
	hdr := http.Header{}
	if *auth != "" {
		hdr.Set("Authorization", *auth)
	}
	res, err := load.Run(context.Background(), load.Options{URL: *url, Style: load.Style(strings.ToLower(*style)), Concurrency: *c,
		Requests: *n, Duration: *d, Tool: *tool, Arguments: a, Progress: *progress, Header: hdr})
	if err != nil {
		fmt.Fprintln(os.Stderr, "pgwload:", err)
		os.Exit(2)
	}
	fmt.Println(res)
	if res.FirstErr != "" {
		fmt.Println("first error:", res.FirstErr)
	}
	if res.Errors > 0 {
		os.Exit(1)
	}
	_ = time.Second
}
