package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"path/filepath"

	"github.com/pallasgw/pallasgw/cmd/pallasgw/internal/chat"
	"github.com/pallasgw/pallasgw/cmd/pallasgw/internal/pallasimport"
	"github.com/pallasgw/pallasgw/gateway"
	"github.com/pallasgw/pallasgw/gateway/config"
)

// chatCmd is `pallasgw chat [--url URL] [--token T] [--tool NAME] AGENT [-m MESSAGE]`;
// flags may come before or after AGENT.
func chatCmd(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("chat", flag.ContinueOnError)
	fs.SetOutput(stderr)
	url := fs.String("url", defaultURL(), "the gateway's base URL (default $PALLASGW_URL, else http://$PALLASGW_LISTEN)")
	token := fs.String("token", os.Getenv("PALLASGW_TOKEN"), "bearer token ($PALLASGW_TOKEN)")
	msg := fs.String("m", "", "send this message, print the answer and exit (default: read messages from stdin)")
	tool := fs.String("tool", "send_message", "the agent's message tool (its tool_name)")
	history := fs.String("history", "", "resume the conversation a /save FILE wrote")
	if code, done := parseFlags(fs, args); done {
		return code
	}
	if fs.NArg() == 0 {
		fmt.Fprintln(stderr, "usage: pallasgw chat [--url URL] [--token T] [--tool NAME] [--history FILE] AGENT [-m MESSAGE]")
		return 2
	}
	agent := fs.Arg(0)
	if code, done := parseFlags(fs, fs.Args()[1:]); done {
		return code
	}
	if fs.NArg() > 0 {
		fmt.Fprintln(stderr, "usage: pallasgw chat [--url URL] [--token T] [--tool NAME] [--history FILE] AGENT [-m MESSAGE]")
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	context.AfterFunc(ctx, stop) // a second Ctrl-C ends the process at once
	err := chat.Run(ctx, chat.Options{URL: *url, Token: *token, Agent: agent, Message: *msg, Tool: *tool, History: *history, In: stdin, Out: stdout, Progress: stderr})
	if err != nil {
		fmt.Fprintln(stderr, "pallasgw chat:", err)
		return 1
	}
	return 0
}

// defaultURL is chat's gateway: $PALLASGW_URL, else the address serve
// takes from $PALLASGW_LISTEN (an unspecified host as 127.0.0.1), else
// http://127.0.0.1:8200 (the quickstart's).
func defaultURL() string {
	if u := os.Getenv("PALLASGW_URL"); u != "" {
		return u
	}
	host, port, err := net.SplitHostPort(os.Getenv("PALLASGW_LISTEN"))
	if err != nil {
		return "http://127.0.0.1:8200"
	}
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, port)
}

// importCmd is `pallasgw import --pallas DIR [--out FILE] [--cards DIR]`:
// it writes the converted config, then checks it as validate does and
// exits 1 when it does not load.
func importCmd(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("import", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dir := fs.String("pallas", "", "the Pallas project directory (agents.yaml, fastagent.config.yaml, fastagent.secrets.yaml)")
	out := fs.String("out", "", "write the pallasgw config here (default: stdout)")
	cards := fs.String("cards", "", "write each agent as an agent card (<agent>.md) into this directory, and a config whose agent_cards names it")
	if code, done := parseFlags(fs, args); done {
		return code
	}
	if *dir == "" || fs.NArg() > 0 {
		fmt.Fprintln(stderr, "usage: pallasgw import --pallas DIR [--out FILE] [--cards DIR]")
		return 2
	}
	res, err := pallasimport.ConvertWith(*dir, pallasimport.Options{Cards: cardsRef(*cards, *out)})
	if err != nil {
		fmt.Fprintln(stderr, "pallasgw import:", err)
		return 1
	}
	for _, n := range res.Unmapped {
		fmt.Fprintln(stderr, "not mapped: "+n)
	}
	if err := writeCards(*cards, res.Cards); err != nil {
		fmt.Fprintln(stderr, "pallasgw import:", err)
		return 1
	}
	if *cards != "" {
		fmt.Fprintf(stderr, "wrote %d agent cards into %s\n", len(res.Cards), *cards)
	}
	if *out == "" {
		stdout.Write(res.Config)
		// What validate would say of the config once saved: stdout is
		// not a file, so the bytes are checked as written.
		return checkImported(stderr, "<stdout>", res.Config)
	}
	if err := os.WriteFile(*out, res.Config, 0o644); err != nil {
		fmt.Fprintln(stderr, "pallasgw import:", err)
		return 1
	}
	if code := checkImported(stderr, *out, nil); code != 0 {
		return code
	}
	fmt.Fprintf(stderr, "wrote %s (%d agents); it validates\n", *out, res.Agents)
	return 0
}

// checkImported runs validate's checks on the config import wrote (the
// file at path, or raw when given) and prints its problems and warnings:
// an import whose output does not load is a failure (exit 1), even though
// the file is left for the operator to fix.
func checkImported(stderr io.Writer, path string, raw []byte) int {
	var cfg *config.Config
	var err error
	if raw != nil {
		cfg, err = gateway.ParseConfig(path, raw)
	} else {
		cfg, err = gateway.LoadConfig(path)
	}
	if err != nil {
		fmt.Fprintf(stderr, "pallasgw import: the config written to %s does not validate; fix these by hand:\n", path)
		printConfigError(stderr, err)
		return 1
	}
	printFindings(stderr, cfg.Warnings, cfg.Infos)
	return 0
}

// cardsRef is how the config names the cards directory: relative to the
// config file's directory when there is one, else absolute.
func cardsRef(cards, out string) string {
	if cards == "" {
		return ""
	}
	abs, err := filepath.Abs(cards)
	if err != nil {
		return cards
	}
	if out == "" {
		return abs
	}
	absOut, err := filepath.Abs(out)
	if err != nil {
		return abs
	}
	if rel, err := filepath.Rel(filepath.Dir(absOut), abs); err == nil {
		return rel
	}
	return abs
}

// writeCards writes the agent cards into dir, creating it.
func writeCards(dir string, cards map[string][]byte) error {
	if dir == "" {
		return nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for name, body := range cards {
		if err := os.WriteFile(filepath.Join(dir, name), body, 0o644); err != nil {
			return err
		}
	}
	return nil
}
