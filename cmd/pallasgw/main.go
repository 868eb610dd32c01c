// Command pallasgw serves many LLM agents as MCP servers behind one HTTP
// port. main only parses flags, builds the logger and wires the gateway.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"syscall"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/pallasgw/pallasgw/cmd/pallasgw/internal/pinscmd"
	"github.com/pallasgw/pallasgw/gateway"
	"github.com/pallasgw/pallasgw/gateway/config"
)

// Set by the build (-ldflags "-X main.version=... -X main.commit=...").
var (
	version = "dev"
	commit  = "unknown"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return 2
	}
	switch args[0] {
	case "serve":
		return serve(args[1:], stderr)
	case "validate":
		return validate(args[1:], stdout, stderr)
	case "chat":
		return chatCmd(args[1:], os.Stdin, stdout, stderr)
	case "import":
		return importCmd(args[1:], stdout, stderr)
	case "pins":
		return pinscmd.Run(args[1:], defaultConfig(), stdout, stderr)
	case "version":
		fmt.Fprintf(stdout, "pallasgw %s (commit %s, %s)\n", version, commit, runtime.Version())
		return 0
	case "-h", "--help", "help":
		usage(stdout)
		return 0
	}
	fmt.Fprintf(stderr, "pallasgw: unknown command %q\n", args[0])
	usage(stderr)
	return 2
}

// parseFlags parses a command's flags; done means exit with code: 0 after
// -h or --help (the usage was printed), 2 for bad flags.
func parseFlags(fs *flag.FlagSet, args []string) (code int, done bool) {
	switch err := fs.Parse(args); {
	case err == nil:
		return 0, false
	case errors.Is(err, flag.ErrHelp):
		return 0, true
	default:
		return 2, true
	}
}

func usage(w io.Writer) {
	fmt.Fprint(w, `usage:
  pallasgw serve    [--config PATH] [--listen ADDR] [--alias-port-offset N | --no-alias-ports] [--agent NAME]
                    [--log-level debug|info|warn|error] [--log-format json|console]
  pallasgw validate [--config PATH]
  pallasgw chat     [--url URL] [--token T] [--tool NAME] [--history FILE] AGENT [-m MESSAGE]
  pallasgw import   --pallas DIR [--out FILE] [--cards DIR]
`+pinscmd.Usage+`  pallasgw version
--config defaults to $PALLASGW_CONFIG, then ./pallasgw.yaml; --listen to $PALLASGW_LISTEN,
then the config's listen; chat's --url to $PALLASGW_URL, then http://$PALLASGW_LISTEN.
`)
}

func defaultConfig() string {
	if p := os.Getenv("PALLASGW_CONFIG"); p != "" {
		return p
	}
	return "pallasgw.yaml"
}

func validate(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("validate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	path := fs.String("config", defaultConfig(), "config file")
	if code, done := parseFlags(fs, args); done {
		return code
	}
	cfg, err := gateway.LoadConfig(*path)
	if err != nil {
		printConfigError(stderr, err)
		return 1
	}
	if err := gateway.CheckPins(cfg); err != nil { // serve refuses a missing or broken pins file: so does validate
		fmt.Fprintln(stderr, err)
		return 1
	}
	printFindings(stderr, cfg.Warnings, cfg.Infos)
	fmt.Fprintf(stdout, "%s: ok (%d agents, %d servers, hash %s)\n", *path, len(cfg.Agents), len(cfg.MCP.Servers), cfg.Hash[:12])
	return 0
}

// printConfigError prints a config's problems, one a line, then its
// warnings: every finding of the file at once.
func printConfigError(w io.Writer, err error) {
	var ce *config.Errors
	if errors.As(err, &ce) {
		for _, e := range ce.List {
			fmt.Fprintln(w, e.Error())
		}
		printFindings(w, ce.Warnings, ce.Infos)
		return
	}
	fmt.Fprintln(w, err)
}

// printFindings prints a config's warnings ("warning: ") and its
// informational findings ("info: "), which need no change and never fail
// validate.
func printFindings(w io.Writer, warnings, infos []string) {
	for _, s := range warnings {
		fmt.Fprintln(w, "warning: "+s)
	}
	for _, s := range infos {
		fmt.Fprintln(w, "info: "+s)
	}
}

func serve(args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	path := fs.String("config", defaultConfig(), "config file")
	listen := fs.String("listen", os.Getenv("PALLASGW_LISTEN"), "listen address (overrides the config's listen; default $PALLASGW_LISTEN)")
	aliasOffset := fs.Int("alias-port-offset", 0, "add N to every legacy alias port (agents' port, registry_port)")
	noAlias := fs.Bool("no-alias-ports", false, "bind no legacy alias port")
	agent := fs.String("agent", "", "serve only this agent (and the agents it runs)")
	level := fs.String("log-level", "info", "debug, info, warn or error")
	format := fs.String("log-format", "json", "json or console")
	if code, done := parseFlags(fs, args); done {
		return code
	}
	log, flush, err := newLogger(*level, *format, stderr)
	if err != nil {
		fmt.Fprintln(stderr, "pallasgw:", err)
		return 2
	}
	// Every return below, the graceful shutdown on SIGTERM included, writes
	// out the buffered lines; main's os.Exit comes after.
	defer flush()
	g, err := gateway.New(gateway.Options{ConfigPath: *path, Listen: *listen, AliasPortOffset: *aliasOffset, NoAliasPorts: *noAlias,
		Agent: *agent, Logger: log, Version: version, Commit: commit})
	if err != nil {
		_ = log.Sync() // the lines logged so far come before the error
		printConfigError(stderr, err)
		return 1
	}
	log = g.Logger() // its lines name the project too
	if err := g.Listen(); err != nil {
		_ = log.Sync()
		fmt.Fprintln(stderr, "pallasgw:", err)
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if err := g.Watch(ctx); err != nil {
		log.Warn("config watcher unavailable; SIGHUP and POST /-/reload still work", zap.Error(err))
	}
	go reloadOnSIGHUP(ctx, g)
	errc := make(chan error, 1)
	go func() { errc <- g.Serve() }()
	select {
	case <-ctx.Done():
		// A second SIGTERM or interrupt stops at once (no drain delay,
		// running calls canceled, listeners closed); registered
		// before stop and never stopped, so that no later signal meets the
		// default action while the process winds down (it would end it
		// with "terminated" instead of exit 0). Further signals are dropped
		// once the channel's one slot is full.
		again := make(chan os.Signal, 1)
		signal.Notify(again, syscall.SIGTERM, os.Interrupt)
		stop()
		shut := make(chan struct{})
		go stopNowOnSignal(g, again, shut)
		g.Shutdown()
		close(shut)
		<-errc
		return 0
	case err := <-errc:
		log.Error("server stopped", zap.Error(err))
		return 1
	}
}

// stopNowOnSignal makes a shutting-down gateway stop at once on the next
// signal of again (a second SIGTERM or Ctrl-C, from an operator who does
// not want to wait or a test); it returns then or when shut is closed.
func stopNowOnSignal(g *gateway.Gateway, again <-chan os.Signal, shut <-chan struct{}) {
	select {
	case <-again:
		g.StopNow()
	case <-shut:
	}
}

func reloadOnSIGHUP(ctx context.Context, g *gateway.Gateway) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
			g.Reload("sighup")
		}
	}
}

// logFlushInterval bounds how long a log line waits in the buffer.
const logFlushInterval = time.Second

// newLogger builds the process logger writing to w through a buffer: one
// write syscall per line was 1.5–2.3% of the gateway's CPU (test/bench/README.md, P6). A
// line reaches w within logFlushInterval, at once from level DPanic up (zap
// syncs those itself), and on flush, which the caller must run before exit;
// a kill -9 loses at most the last interval.
func newLogger(level, format string, w io.Writer) (log *zap.Logger, flush func(), err error) {
	cfg, err := logConfig(level, format)
	if err != nil {
		return nil, nil, err
	}
	enc := zapcore.NewJSONEncoder(cfg.EncoderConfig)
	if cfg.Encoding == "console" {
		enc = zapcore.NewConsoleEncoder(cfg.EncoderConfig)
	}
	buf := &zapcore.BufferedWriteSyncer{WS: zapcore.AddSync(w), FlushInterval: logFlushInterval}
	// cfg.Build still sets caller, stack traces and error output; only the
	// core's sink is replaced.
	log, err = cfg.Build(zap.Fields(zap.String("component", "pallasgw")),
		zap.WrapCore(func(zapcore.Core) zapcore.Core { return zapcore.NewCore(enc, buf, cfg.Level) }))
	if err != nil {
		return nil, nil, err
	}
	return log, func() { _ = buf.Stop() }, nil
}

func logConfig(level, format string) (zap.Config, error) {
	lvl, err := zapcore.ParseLevel(level)
	if err != nil {
		return zap.Config{}, fmt.Errorf("--log-level: %w", err)
	}
	cfg := zap.NewProductionConfig()
	switch format {
	case "json":
	case "console":
		cfg = zap.NewDevelopmentConfig()
	default:
		return zap.Config{}, fmt.Errorf("--log-format: want json or console, got %q", format)
	}
	cfg.Level = zap.NewAtomicLevelAt(lvl)
	cfg.EncoderConfig.TimeKey = "ts"
	cfg.EncoderConfig.EncodeTime = zapcore.ISO8601TimeEncoder
	cfg.Sampling = nil
	cfg.DisableStacktrace = lvl > zapcore.DebugLevel
	return cfg, nil
}
