package main

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// lockedBuffer is a bytes.Buffer safe for the logger's flush goroutine and
// the test reading at once.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func TestLoggerFlushesOnFlush(t *testing.T) {
	for _, format := range []string{"json", "console"} {
		t.Run(format, func(t *testing.T) {
			var out lockedBuffer
			log, flush, err := newLogger("info", format, &out)
			if err != nil {
				t.Fatal(err)
			}
			for i := range 100 {
				log.Info(fmt.Sprintf("line %d", i))
			}
			flush()
			if got := strings.Count(out.String(), "line "); got != 100 {
				t.Fatalf("%d lines written after flush, want 100:\n%s", got, out.String())
			}
		})
	}
}

func TestLoggerFlushesWithinInterval(t *testing.T) {
	var out lockedBuffer
	log, flush, err := newLogger("info", "json", &out)
	if err != nil {
		t.Fatal(err)
	}
	defer flush()
	log.Info("unflushed")
	deadline := time.Now().Add(logFlushInterval + 5*time.Second)
	for !strings.Contains(out.String(), `"msg":"unflushed"`) {
		if time.Now().After(deadline) {
			t.Fatalf("line not written within %s", logFlushInterval)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestLoggerBadFlags(t *testing.T) {
	for _, c := range []struct{ name, level, format, want string }{
		{"level", "loud", "json", "--log-level"},
		{"format", "info", "xml", "--log-format"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if _, _, err := newLogger(c.level, c.format, &lockedBuffer{}); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want one naming %s", err, c.want)
			}
		})
	}
}

// A serve that fails after logging writes its lines out before it returns,
// and before its own error message.
func TestServeErrorExitFlushesLog(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	path := filepath.Join(t.TempDir(), "pallasgw.yaml")
	// The warning about forward_inbound_auth is logged before the port is bound.
	cfg := fmt.Sprintf(`name: t
listen: %q
auth: {mode: tokens, tokens: [{name: web, token: web-token-0123456789abcdef, agents: ["*"]}]}
models:
  providers:
    openai: {base_url: "http://127.0.0.1:1/v1", api_key: k, forward_inbound_auth: true}
agents:
  a: {model: openai.m}
`, taken.Addr().String())
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	var out lockedBuffer
	if code := run([]string{"serve", "--config", path, "--log-level", "debug"}, &out, &out); code != 1 {
		t.Fatalf("exit code %d, want 1:\n%s", code, out.String())
	}
	got := out.String()
	logged, failed := strings.Index(got, "forward_inbound_auth: ignored"), strings.Index(got, "pallasgw: ")
	if logged < 0 || failed < logged {
		t.Fatalf("want log lines, then the error:\n%s", got)
	}
}

// BenchmarkLogger compares one request-sized log line written to a pipe
// line by line ("direct", as before the buffer) and through newLogger.
func BenchmarkLogger(b *testing.B) {
	for _, name := range []string{"direct", "buffered"} {
		b.Run(name, func(b *testing.B) {
			r, w, err := os.Pipe()
			if err != nil {
				b.Fatal(err)
			}
			drained := make(chan struct{})
			go func() { _, _ = io.Copy(io.Discard, r); close(drained) }()
			log, flush, err := newLogger("info", "json", w)
			if err != nil {
				b.Fatal(err)
			}
			if name == "direct" {
				cfg, _ := logConfig("info", "json")
				log, _ = cfg.Build(zap.Fields(zap.String("component", "pallasgw")), zap.WrapCore(func(zapcore.Core) zapcore.Core {
					return zapcore.NewCore(zapcore.NewJSONEncoder(cfg.EncoderConfig), zapcore.Lock(w), cfg.Level)
				}))
			}
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					log.Info("tool call", zap.String("agent", "echo"), zap.String("tool", "send_message"),
						zap.String("caller", "web"), zap.Duration("duration", time.Millisecond))
				}
			})
			b.StopTimer()
			flush()
			_ = w.Close()
			<-drained
		})
	}
}
