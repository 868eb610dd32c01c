package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"

	"github.com/pallasgw/pallasgw/cmd/pallasgw/internal/chat"
	"github.com/pallasgw/pallasgw/cmd/pallasgw/internal/pallasimport"
)

// chatCmd is `pallasgw chat [--url URL] [--token T] AGENT [-m MESSAGE]`;
// flags may come before or after AGENT.
func chatCmd(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("chat", flag.ContinueOnError)
	fs.SetOutput(stderr)
	url := fs.String("url", envOr("PALLASGW_URL", "http://127.0.0.1:8200"), "the gateway's base URL ($PALLASGW_URL)")
	token := fs.String("token", os.Getenv("PALLASGW_TOKEN"), "bearer token ($PALLASGW_TOKEN)")
	msg := fs.String("m", "", "send this message, print the answer and exit (default: read messages from stdin)")
	tool := fs.String("tool", "send_message", "the agent's message tool (its tool_name)")
	if code, done := parseFlags(fs, args); done {
		return code
	}
	if fs.NArg() == 0 {
		fmt.Fprintln(stderr, "usage: pallasgw chat [--url URL] [--token T] AGENT [-m MESSAGE]")
		return 2
	}
	agent := fs.Arg(0)
	if code, done := parseFlags(fs, fs.Args()[1:]); done {
		return code
	}
	if fs.NArg() > 0 {
		fmt.Fprintln(stderr, "usage: pallasgw chat [--url URL] [--token T] AGENT [-m MESSAGE]")
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	err := chat.Run(ctx, chat.Options{URL: *url, Token: *token, Agent: agent, Message: *msg, Tool: *tool, In: stdin, Out: stdout, Progress: stderr})
	if err != nil {
		fmt.Fprintln(stderr, "pallasgw chat:", err)
		return 1
	}
	return 0
}

// importCmd is `pallasgw import --pallas DIR [--out FILE]`.
func importCmd(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("import", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dir := fs.String("pallas", "", "the Pallas project directory (agents.yaml, fastagent.config.yaml, fastagent.secrets.yaml)")
	out := fs.String("out", "", "write the pallasgw config here (default: stdout)")
	if code, done := parseFlags(fs, args); done {
		return code
	}
	if *dir == "" || fs.NArg() > 0 {
		fmt.Fprintln(stderr, "usage: pallasgw import --pallas DIR [--out FILE]")
		return 2
	}
	res, err := pallasimport.Convert(*dir)
	if err != nil {
		fmt.Fprintln(stderr, "pallasgw import:", err)
		return 1
	}
	for _, n := range res.Unmapped {
		fmt.Fprintln(stderr, "not mapped: "+n)
	}
	if *out == "" {
		stdout.Write(res.Config)
		return 0
	}
	if err := os.WriteFile(*out, res.Config, 0o644); err != nil {
		fmt.Fprintln(stderr, "pallasgw import:", err)
		return 1
	}
	fmt.Fprintf(stderr, "wrote %s (%d agents); check it with: pallasgw validate --config %s\n", *out, res.Agents, *out)
	return 0
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}
