// Package pinscmd is `pallasgw pins`: it writes the first pins of a
// config's pinned servers (init), shows how their live tool definitions
// differ from the pins (diff), and approves or rejects one tool's live
// definition (approve, reject). It reads each server's tools/list itself,
// with the server's static headers plus the --header values given, and
// writes the pins file through agents/pins (locked, atomic). A running
// gateway applies the file at its next reload (the file is watched).
//
// It owns no pinning rule: agents/pins does.
package pinscmd

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/pallasgw/pallasgw/agents/mcpclient"
	"github.com/pallasgw/pallasgw/agents/pins"
	"github.com/pallasgw/pallasgw/gateway"
	"github.com/pallasgw/pallasgw/gateway/config"
)

// listTimeout bounds reading one server's tool list.
const listTimeout = 30 * time.Second

// Usage is the pins lines of `pallasgw help`.
const Usage = `  pallasgw pins     init    --config PATH [--header 'K: V']...
  pallasgw pins     diff    --config PATH [--header 'K: V']...
  pallasgw pins     approve --config PATH [--header 'K: V']... [--hash sha256:H] SERVER TOOL
  pallasgw pins     reject  --config PATH [--header 'K: V']... [--hash sha256:H] SERVER TOOL
`

// headers is a repeated --header 'Name: value' flag.
type headers http.Header

func (h headers) String() string { return fmt.Sprintf("%d headers", len(h)) }

func (h headers) Set(v string) error {
	k, val, ok := strings.Cut(v, ":")
	if !ok || strings.TrimSpace(k) == "" {
		return fmt.Errorf("want 'Name: value', got %q", v)
	}
	http.Header(h).Add(strings.TrimSpace(k), strings.TrimSpace(val))
	return nil
}

// Run runs `pallasgw pins ARGS`; defaultConfig is --config's default.
func Run(args []string, defaultConfig string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, "usage:\n"+Usage)
		return 2
	}
	cmd := args[0]
	fs := flag.NewFlagSet("pins "+cmd, flag.ContinueOnError)
	fs.SetOutput(stderr)
	path := fs.String("config", defaultConfig, "config file")
	hdr := headers{}
	fs.Var(hdr, "header", "a header sent to every server when reading its tools ('Name: value'; repeatable)")
	hash := fs.String("hash", "", "approve or reject only if the live definition has this hash (the one reviewed)")
	if err := fs.Parse(args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	cfg, err := gateway.LoadConfig(*path)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	if cfg.PinsPath == "" {
		fmt.Fprintf(stderr, "%s: no pins file configured (top-level pins: PATH)\n", *path)
		return 1
	}
	c := &command{cfg: cfg, hdr: http.Header(hdr), stdout: stdout, stderr: stderr}
	switch cmd {
	case "init":
		err = c.init()
	case "diff":
		var changed bool
		if changed, err = c.diff(); err == nil && changed {
			return 1
		}
	case "approve", "reject":
		if fs.NArg() != 2 {
			fmt.Fprintf(stderr, "pallasgw pins %s: want SERVER TOOL\n", cmd)
			return 2
		}
		err = c.review(cmd == "approve", fs.Arg(0), fs.Arg(1), *hash)
	default:
		fmt.Fprintf(stderr, "pallasgw pins: unknown command %q\nusage:\n%s", cmd, Usage)
		return 2
	}
	if err != nil {
		fmt.Fprintln(stderr, "pallasgw pins "+cmd+": "+err.Error())
		return 1
	}
	return 0
}

type command struct {
	cfg            *config.Config
	hdr            http.Header
	stdout, stderr io.Writer
}

// pinned are the servers whose pin_tools is warn or enforce, sorted.
func (c *command) pinned() []string {
	var out []string
	for name, s := range c.cfg.MCP.Servers {
		if s.PinTools == "warn" || s.PinTools == "enforce" {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// live reads server's tool list and returns each definition by name.
func (c *command) live(server string) (map[string]pins.Def, error) {
	spec, ok := gateway.DownstreamSpec(c.cfg, server)
	if !ok {
		return nil, fmt.Errorf("server %q is not in the config", server)
	}
	var mu sync.Mutex
	defs := map[string]pins.Def{}
	var derr error
	m := mcpclient.NewManager([]mcpclient.ServerSpec{spec}, mcpclient.Options{ClientName: "pallasgw-pins",
		ToolFilter: func(_ string, tools []mcp.Tool, raw []json.RawMessage) []mcp.Tool {
			mu.Lock()
			defer mu.Unlock()
			for _, r := range raw {
				d, err := pins.Definition(r)
				if err != nil {
					derr = err
					continue
				}
				defs[d.Name] = d
			}
			return tools
		}})
	defer m.Close()
	ctx, cancel := context.WithTimeout(context.Background(), listTimeout)
	defer cancel()
	hdr := http.Header{}
	for k, v := range c.cfg.MCP.Servers[server].Headers {
		hdr.Set(k, v.Value())
	}
	for k, v := range c.hdr {
		hdr[k] = v
	}
	if _, err := m.Tools(ctx, server, hdr); err != nil {
		return nil, fmt.Errorf("server %q: reading its tools: %w", server, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if derr != nil {
		return nil, fmt.Errorf("server %q: %w", server, derr)
	}
	return defs, nil
}
