package mcpclient

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"
	"go.uber.org/zap"
)

// maxStderrLine bounds one logged stderr line; the rest of a longer line is
// dropped.
const maxStderrLine = 4096

// stderrDrainWait is how long release waits for the last stderr lines after
// the process has been stopped, in case a grandchild still holds the pipe.
const stderrDrainWait = time.Second

// stdioProc is one stdio child process. It is started here, not by
// mcp-go's stdio transport, which is handed its pipes (transport.NewIO) so
// that its stdout is read within the bound on one message (lineBound:
// mcp-go reads a line whole, however long). Its stderr is read line by
// line into the log; the end of stderr is taken as the end of the process,
// which is how a crash is noticed before the next call. It is stopped as
// mcp-go stops the processes it starts (stop): stdin closed (by the
// client's Close), SIGTERM after 2 s, SIGKILL after 3 s more.
//
// The process is reaped as soon as it exits (wait), so that the error of
// the call or health check that found it gone can say how it ended, with
// its last stderr line (exitNote).
type stdioProc struct {
	srv  *remote
	r, w *os.File
	done chan struct{} // closed when stderr reaches EOF
	cmd  *exec.Cmd

	stdin  io.Closer              // the parent's ends of the stdio pipes, closed by release
	stdout io.Closer              // (cmd.Wait would close them, but the process is reaped by wait)
	reaped chan struct{}          // closed when wait has reaped the process
	state  *os.ProcessState       // how it ended; written before reaped is closed
	last   atomic.Pointer[string] // the last stderr line, scrubbed and cut to maxNoteLine

	closeW sync.Once
	closeR sync.Once
}

// How long stop waits after closing stdin, then after SIGTERM (mcp-go's
// gracefulShutdownTimeout and forceKillTimeout).
const (
	stdioExitWait = 2 * time.Second
	stdioTermWait = 3 * time.Second
)

// maxNoteLine bounds the stderr line an error quotes.
const maxNoteLine = 200

func (s *session) newStdio() (transport.Interface, *stdioProc, error) {
	spec := s.srv.spec
	if spec.Command == "" {
		return nil, nil, fmt.Errorf("no command configured")
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, nil, fmt.Errorf("stderr pipe: %w", err)
	}
	p := &stdioProc{srv: s.srv, r: r, w: w, done: make(chan struct{}), reaped: make(chan struct{})}
	if !s.srv.m.track(p.readStderr) {
		_ = r.Close()
		_ = w.Close()
		return nil, nil, errClosed
	}
	cmd, _ := p.command(context.Background(), spec.Command, nil, spec.Args)
	stdin, err := cmd.StdinPipe()
	var stdout io.ReadCloser
	if err == nil {
		stdout, err = cmd.StdoutPipe()
	}
	if err == nil {
		err = cmd.Start()
	}
	if err != nil {
		if stdin != nil {
			_ = stdin.Close()
		}
		p.started()
		p.closeR.Do(func() { _ = p.r.Close() })
		return nil, nil, fmt.Errorf("failed to start command: %w", err)
	}
	p.cmd, p.stdin, p.stdout = cmd, stdin, stdout
	// Owned by p: it ends when the process does, which stop (by release,
	// on every path that drops p) makes sure of.
	go p.wait()
	tr := transport.NewIO(&lineBound{r: stdout, limit: s.srv.m.opts.MaxMessageBytes, note: &s.streamTooLarge}, stdin, nil)
	return tr, p, nil
}

// wait reaps the process when it exits. It calls Process.Wait, not
// cmd.Wait, which would close the stdout pipe that mcp-go may still be
// reading the process's last messages from (release closes the pipes).
func (p *stdioProc) wait() {
	state, _ := p.cmd.Process.Wait()
	p.state = state
	close(p.reaped)
}

// stop waits for the process to exit once its stdin is closed, then sends
// SIGTERM, then SIGKILL, and waits until it is reaped.
func (p *stdioProc) stop() {
	if p.cmd == nil || p.cmd.Process == nil {
		return
	}
	exited := p.reaped
	for _, step := range []struct {
		wait time.Duration
		sig  os.Signal
	}{{stdioExitWait, syscall.SIGTERM}, {stdioTermWait, os.Kill}} {
		t := time.NewTimer(step.wait)
		select {
		case <-exited:
			t.Stop()
			return
		case <-t.C:
		}
		_ = p.cmd.Process.Signal(step.sig)
	}
	<-exited
}

// lineBound is a stdio server's stdout for mcp-go's transport, which reads
// it line by line, each line one message: a line past limit bytes is noted
// in note (the session's streamTooLarge) and ends the stream, after the
// lines before it. The session is then dropped and its process stopped
// (settle, bound.go); the next call starts a new one.
type lineBound struct {
	r     io.Reader
	limit int
	n     int // bytes of the current line
	note  *atomic.Pointer[tooLargeError]
	over  bool
}

func (b *lineBound) Read(p []byte) (int, error) {
	if b.over {
		return 0, io.EOF
	}
	n, err := b.r.Read(p)
	for i, c := range p[:n] {
		if c == '\n' {
			b.n = 0
			continue
		}
		if b.n++; b.n > b.limit {
			b.over = true
			b.note.Store(&tooLargeError{Limit: b.limit})
			return bytes.LastIndexByte(p[:i], '\n') + 1, nil
		}
	}
	return n, err
}

// command builds the child: the spec's environment plus PATH and HOME, the
// spec's directory, stderr on our pipe. It ignores ctx: the process lives
// until Close, not until the call that started it ends.
func (p *stdioProc) command(_ context.Context, command string, _ []string, args []string) (*exec.Cmd, error) {
	cmd := exec.Command(command, args...)
	cmd.Env = stdioEnv(p.srv.spec.Env)
	cmd.Dir = p.srv.spec.Dir
	cmd.Stderr = p.w
	return cmd, nil
}

// started is called once the transport's Start has returned: the child has
// its copy of the pipe's write end (or never will), so ours is closed and
// EOF then means the child is gone.
func (p *stdioProc) started() {
	p.closeW.Do(func() { _ = p.w.Close() })
}

// exited reports whether the child's stderr has reached EOF.
func (p *stdioProc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// release frees the pipe after the process has been stopped, waiting
// briefly for the last lines.
func (p *stdioProc) release() {
	p.stop()
	p.started()
	t := time.NewTimer(stderrDrainWait)
	defer t.Stop()
	select {
	case <-p.done:
	case <-t.C:
	}
	p.closeR.Do(func() { _ = p.r.Close() })
	if p.stdout != nil {
		_ = p.stdin.Close() // mcp-go's Close has closed it already: a no-op then
		_ = p.stdout.Close()
	}
}

// exitNote adds to err, a failure that lost the process's stdio, how the
// process ended and its last stderr line (scrubbed as logged):
// `transport closed (the process ended: exit status 3; its last stderr
// line: "panic: ...")`. It waits for the exit (and the rest of stderr) as
// long as ctx allows, stdioExitWait at most: a process whose stdout ended
// is usually ending. err comes back unchanged when it is not such a
// failure or the process still runs.
func (p *stdioProc) exitNote(ctx context.Context, err error) error {
	if p == nil || p.cmd == nil || err == nil || !isLost(err) {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, stdioExitWait)
	defer cancel()
	for _, ch := range []chan struct{}{p.reaped, p.done} {
		select {
		case <-ch:
		case <-ctx.Done():
		}
	}
	select {
	case <-p.reaped:
	default:
		return err
	}
	note := "the process ended: " + p.state.String()
	if line := p.last.Load(); line != nil {
		note += "; its last stderr line: " + strconv.Quote(*line)
	}
	return fmt.Errorf("%w (%s)", err, note)
}

// readStderr logs each stderr line of the child until EOF.
func (p *stdioProc) readStderr() {
	defer close(p.done)
	log := p.srv.m.log.With(zap.String(fieldServer, p.srv.spec.Name))
	br := bufio.NewReaderSize(p.r, maxStderrLine)
	for {
		line, more, err := br.ReadLine()
		if len(line) > 0 {
			text := scrubString(string(line), p.srv.secrets)
			log.Info("downstream stderr", zap.String(fieldLine, text))
			if len(text) > maxNoteLine {
				text = strings.ToValidUTF8(text[:maxNoteLine], "") + "…"
			}
			p.last.Store(&text)
		}
		for more && err == nil {
			_, more, err = br.ReadLine()
		}
		if err != nil {
			log.Debug("downstream stderr closed")
			return
		}
	}
}

// stdioEnv is the child's environment: PATH and HOME from the parent, then
// the spec's variables (which win), sorted.
func stdioEnv(spec map[string]string) []string {
	env := make([]string, 0, len(spec)+2)
	for _, name := range []string{"HOME", "PATH"} {
		if _, set := spec[name]; set {
			continue
		}
		if v, ok := os.LookupEnv(name); ok {
			env = append(env, name+"="+v)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(spec)) {
		env = append(env, name+"="+spec[name])
	}
	return env
}
